"""The adapter against the API double through the real client: the elector survives outages, the
reflector neither hot-loops nor trusts a failing watch, a batch survives a transport error, writes
are fenced by the lease, and shutdown releases the lease once after the last write."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from tests.hotswap.double_world import (
    FAST,
    LEASE,
    controller,
    elector,
    fail_pool,
    kube,
    seed_cluster,
    wait_for,
)
from tests.kubeapi import ApiDouble, Fault, Seeder
from tests.kubeapi.objects import lease_obj
from tpu_platform.hotswap.adapter.api import Resource
from tpu_platform.hotswap.adapter.cache import Backoff, WatchCache
from tpu_platform.hotswap.adapter.controller import Controller
from tpu_platform.hotswap.adapter.convert import NodeRecord, node_from_api
from tpu_platform.hotswap.core import constants as k

NODES = Resource("nodes", "cloud.google.com/gke-tpu-accelerator")


@pytest.fixture
def double() -> Iterator[ApiDouble]:
    with ApiDouble(bookmark_interval=0.5, guard_lease=LEASE) as d:
        yield d


def run_in_thread(target: object, *args: object) -> threading.Thread:
    t = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
    t.start()
    return t


def start(c: Controller, stop: threading.Event) -> threading.Thread:
    assert c.leader is not None
    c.watch_thread(run_in_thread(c.leader.run, stop))
    c.start_caches(stop)
    return run_in_thread(c.run, stop)


# --- leader election ---------------------------------------------------------------------------
def test_elector_survives_a_short_outage_and_keeps_leading(double: ApiDouble) -> None:
    le = elector(kube(double, "a"), "a")
    stop = threading.Event()
    t = run_in_thread(le.run, stop)
    assert wait_for(le.is_leader, 5)
    double.outage(0.3)
    time.sleep(FAST.retry_period_seconds * 3)
    assert t.is_alive() and le.is_leader() and not le.lost.is_set()
    stop.set()
    t.join(5)


def test_elector_that_starts_during_an_outage_leads_once_the_api_is_back(double: ApiDouble) -> None:
    double.stop()
    le = elector(kube(double, "a"), "a")
    stop = threading.Event()
    t = run_in_thread(le.run, stop)
    time.sleep(3.0)
    assert t.is_alive() and not le.is_leader()
    double.start()
    assert wait_for(le.is_leader, 5), "the lease is created and held once the API answers"
    assert double.store.get(double.store_kind("leases"), *LEASE)["spec"]["holderIdentity"] == "a"
    stop.set()
    t.join(5)


def test_failing_renewals_stop_writes_before_the_deadline_and_end_leadership(double: ApiDouble) -> None:
    seed = seed_cluster(double)
    c = controller(double)
    stop = threading.Event()
    start(c, stop)
    le = c.leader
    assert le is not None and wait_for(lambda: le.is_leader() and c.synced, 5)
    double.faults.add(Fault(status=503, resources=("leases",), times=None))
    time.sleep(FAST.renew_deadline_seconds - FAST.retry_period_seconds)
    fail_pool(seed, "a")
    assert wait_for(le.lost.is_set, 5), "no renewal within the renew deadline: lost"
    time.sleep(0.5)
    assert double.writes_without_lease == []
    assert not [w for w in double.writes() if w.request.resource == "nodes"], "no write once fenced"
    stop.set()


def test_a_lease_taken_by_another_holder_stops_writing(double: ApiDouble) -> None:
    seed = seed_cluster(double)
    c = controller(double)
    stop = threading.Event()
    start(c, stop)
    le = c.leader
    assert le is not None and wait_for(lambda: le.is_leader() and c.synced, 5)
    # Another candidate takes over the way client-go does: after the record stopped changing for a
    # lease duration, which the double enforces by refusing our renewals meanwhile.
    double.faults.add(Fault(status=500, resources=("leases",), identity="hotswap-0", times=None))
    time.sleep(FAST.lease_duration_seconds + 0.2)
    seed.update("leases", lease_obj(LEASE[1], LEASE[0], "intruder", time.time(), duration=30))
    fail_pool(seed, "a")
    time.sleep(1.0)
    assert le.lost.is_set()
    assert double.writes_without_lease == []
    stop.set()


# --- the batch ---------------------------------------------------------------------------------
def test_a_transport_error_mid_batch_does_not_drop_the_rest(double: ApiDouble) -> None:
    seed = seed_cluster(double)
    c = controller(double, leader=False, request_timeout=(30.0, 60.0))
    for cache in c.caches:
        cache.relist()
    fail_pool(seed, "a")
    for cache in c.caches:
        cache.relist()
    double.faults.add(Fault(reset=True, verbs=("evict",)))
    d = c.reconcile_once()
    assert d is not None
    evictions = double.writes(verb="evict")
    assert len(evictions) == 4 and [e.status for e in evictions].count(201) == 3
    assert len([w for w in double.writes(verb="patch") if w.status == 200]) == 4, "pool a tainted"
    events = [e for e in seed.list("events", "default")]
    reasons = {e["reason"] for e in events}
    assert "HotswapPoolUnhealthy" in reasons
    assert "HotswapFailFast" not in reasons, "no Event claims the eviction that was not issued"
    assert c.metrics.value("hotswap_actions_total", {"kind": "EvictPod", "outcome": "applied"}) == 3
    assert c.metrics.value("hotswap_actions_total", {"kind": "EvictPod", "outcome": "failed"}) == 1
    assert c.metrics.value("hotswap_fail_fast_evictions_total") == 3
    pending = c.expectations.pending(time.monotonic())
    evicted = {f"pod default/{e.request.name} terminating" for e in evictions if e.status == 201}
    assert evicted <= set(pending) and {f"node a-{i}" for i in range(4)} <= set(pending), (
        "the writes after the failure are expected too"
    )


def test_sigterm_mid_batch_lets_the_write_return_then_releases_once(double: ApiDouble) -> None:
    seed = seed_cluster(double)
    c = controller(double)
    stop = threading.Event()
    loop = start(c, stop)
    le = c.leader
    assert le is not None and wait_for(lambda: le.is_leader() and c.synced, 5)
    for _ in range(4):
        double.faults.add(Fault(delay=0.4, verbs=("evict",)))
    fail_pool(seed, "a")
    assert wait_for(lambda: len(double.writes(verb="evict")) >= 1, 5)
    stopped_at = time.time()
    stop.set()
    loop.join(5)
    assert not loop.is_alive()
    le.release()
    le.release()
    late = [w for w in double.writes() if w.at > stopped_at + 0.45 and w.request.resource != "leases"]
    assert late == [], "nothing is issued after stop but the write in flight"
    releases = [w for w in double.writes(resource="leases") if w.request.verb == "update"]
    lease = seed.get("leases", LEASE[1], LEASE[0])
    assert lease["spec"]["holderIdentity"] == ""
    assert [w.status for w in releases].count(409) == 0
    assert double.writes_without_lease == []


# --- the reflector -----------------------------------------------------------------------------
def node_cache(d: ApiDouble, **kw: object) -> WatchCache[NodeRecord]:
    return WatchCache(kube(d, "c"), NODES, node_from_api, watch_timeout_seconds=5, **kw)  # type: ignore[arg-type]


def test_watches_closed_at_once_back_off_instead_of_hot_looping(double: ApiDouble) -> None:
    seed_cluster(double)
    cache = node_cache(double, backoff=Backoff(initial=0.2, cap=0.4))
    double.faults.add(Fault(drop_after=0.0, verbs=("watch",), times=None))
    stop = threading.Event()
    t = run_in_thread(cache.run, stop)
    time.sleep(2.0)
    stop.set()
    t.join(5)
    watches = [s for s in double.served if s.request.verb == "watch"]
    assert 2 <= len(watches) <= 10, f"{len(watches)} watch requests in 2 s"


def not_ready_in_cache(c: Controller, node: str) -> bool:
    record = c.nodes.get(node)
    cond = record.node.condition("Ready") if record is not None else None
    return cond is not None and cond.status == "Unknown"


def tainted_pools(seed: Seeder) -> set[str]:
    return {
        n["metadata"]["labels"][k.NODEPOOL_LABEL]
        for n in seed.list("nodes")
        if any(t["key"] == k.UNHEALTHY_TAINT_KEY for t in (n.get("spec") or {}).get("taints") or [])
    }


def test_a_watch_that_keeps_failing_makes_the_controller_unready(double: ApiDouble) -> None:
    """403s on the pod watch: not ready, no eviction, but the pool's taint (nodes only) goes out."""
    seed = seed_cluster(double)
    c = controller(double, leader=False)
    for cache in c.caches:
        cache.backoff = Backoff(initial=0.05, cap=0.1)
    stop = threading.Event()
    c.start_caches(stop)
    assert wait_for(lambda: c.synced, 5)
    double.faults.add(Fault(status=403, verbs=("watch", "list"), resources=("pods",), times=None))
    double.close_watches()
    assert wait_for(lambda: not c.synced, 5), "403s on the pod watch: stale, not ready"
    fail_pool(seed, "a")
    assert wait_for(lambda: not_ready_in_cache(c, "a-1"), 5)
    decision = c.reconcile_once()
    assert decision is not None, "fresh nodes are enough to decide"
    assert c.metrics.value("hotswap_cache_fresh", {"resource": "pods"}) == 0
    assert c.metrics.value("hotswap_caches_synced") == 0
    assert tainted_pools(seed) == {"a"}, "the pool is tainted"
    assert not double.writes(verb="evict"), "no eviction from a stale pod cache"
    assert c.metrics.value("hotswap_actions_total", {"kind": "EvictPod", "outcome": "stale-cache"}) >= 1
    double.faults.clear()
    assert wait_for(lambda: c.synced, 5), "fresh again once the watch works"
    c.reconcile_once()
    assert {s.request.name for s in double.writes(verb="evict")} == {f"high-{i}" for i in range(4)}
    stop.set()


def test_a_stale_node_cache_stops_every_decision(double: ApiDouble) -> None:
    seed = seed_cluster(double)
    c = controller(double, leader=False)
    for cache in c.caches:
        cache.backoff = Backoff(initial=0.05, cap=0.1)
    stop = threading.Event()
    c.start_caches(stop)
    assert wait_for(lambda: c.synced, 5)
    double.faults.add(Fault(status=403, verbs=("watch", "list"), resources=("nodes",), times=None))
    double.close_watches()
    assert wait_for(lambda: not c.nodes.fresh(), 5)
    fail_pool(seed, "a")
    assert c.reconcile_once() is None, "no decision without fresh nodes"
    assert not double.writes()
    stop.set()


def test_too_large_resource_version_relists(double: ApiDouble) -> None:
    seed_cluster(double)
    cache = node_cache(double)
    cache.relist()
    cache.resource_version = str(double.store.rv + 1000)
    cache.watch_once()
    assert cache.lists == 2 and int(cache.resource_version) <= double.store.rv


def test_compacted_resource_version_relists_and_sees_changes(double: ApiDouble) -> None:
    seed = seed_cluster(double)
    cache = node_cache(double)
    cache.relist()
    fail_pool(seed, "a")
    double.store.compact()
    cache.watch_once()
    assert cache.lists == 2
    record = cache.get("a-1")
    assert record is not None and record.node.condition("Ready").status == "Unknown"  # type: ignore[union-attr]


def test_bookmarks_advance_the_resume_point(double: ApiDouble) -> None:
    seed = seed_cluster(double)
    cache = node_cache(double)
    cache.relist()
    seed.pod({**seed.get("pods", "high-0", "default"), "metadata": {"name": "x", "namespace": "default"}})
    rv = double.store.rv
    stop = threading.Event()
    t = run_in_thread(cache.run, stop)
    assert wait_for(lambda: cache.resource_version == str(rv), 3), "a bookmark carried the newer version"
    stop.set()
    t.join(8)


def test_liveness_fails_when_a_watch_thread_dies(double: ApiDouble) -> None:
    seed_cluster(double)
    c = controller(double, leader=False)
    dead = threading.Thread(target=lambda: None, name="watch-dead")
    dead.start()
    dead.join()
    c.watch_thread(dead)
    assert not c.alive()


def test_after_an_outage_a_quiet_cache_is_fresh_within_one_backoff_step() -> None:
    """No object changes and no bookmark for 60 s: resuming the watch would prove nothing until
    one came; the stale cache lists again on its first attempt after the outage instead."""
    with ApiDouble(bookmark_interval=60.0) as d:
        seed_cluster(d)
        cache = node_cache(d)
        stop = threading.Event()
        t = run_in_thread(cache.run, stop)
        assert wait_for(cache.fresh, 5)
        d.stop()
        assert wait_for(lambda: not cache.fresh(), 10), "refused three times in a row: stale"
        lists = cache.lists
        d.start()
        assert wait_for(cache.fresh, 8), "fresh again from a list, not from a bookmark a minute away"
        assert cache.lists == lists + 1
        stop.set()
        d.close_watches()
        t.join(5)
