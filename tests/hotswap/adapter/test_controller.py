"""The control loop (``tpu_platform.hotswap.adapter.controller``)."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from tests.hotswap.double_world import (
    LEASE,
    fail_pool,
    seed_cluster,
    wait_for,
)
from tests.hotswap.double_world import controller as double_controller
from tests.hotswap.hotswap_fakes import FakeApi
from tests.kubeapi import ApiDouble, Fault, Seeder
from tests.kubeapi.objects import jobset_obj, node_lease_obj, node_obj, pod_obj, ts
from tpu_platform.hotswap.adapter.cache import Backoff
from tpu_platform.hotswap.adapter.config import Config, RuntimeConfig
from tpu_platform.hotswap.adapter.controller import Controller
from tpu_platform.hotswap.adapter.elector import LeaderElector
from tpu_platform.hotswap.adapter.metrics import Metrics
from tpu_platform.hotswap.adapter.probes import ProbeServer
from tpu_platform.hotswap.core import Settings
from tpu_platform.hotswap.core import constants as k

# --- the loop against the fake API ----------------------------------------------------------------
# The control loop against the fake API: what is written, when, and by whom.
NOW = 1_000_000.0
HIGH, LOW = 2_000_000, 1_000_000


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def cluster() -> FakeApi:
    api = FakeApi()
    for pool in ("a", "b"):
        for i in range(4):
            dead = pool == "a" and i == 1
            api.add(
                "nodes",
                node_obj(
                    f"{pool}-{i}",
                    pool,
                    ready="Unknown" if dead else "True",
                    since=NOW - 20 if dead else NOW - 9000,
                ),
            )
    api.add("jobsets", jobset_obj("high"))
    api.add("jobsets", jobset_obj("low"))
    api.add("jobsets", jobset_obj("other", managed=False))
    for name, pool, prio in (("high", "a", HIGH), ("low", "b", LOW)):
        for i in range(4):
            api.add(
                "pods",
                pod_obj(
                    f"{name}-{i}",
                    name,
                    job=f"{name}-slice-0",
                    node=f"{pool}-{i}",
                    priority=prio,
                    started=NOW - 3000,
                ),
            )
    return api


def controller(
    api: FakeApi,
    clock: Clock,
    *,
    dry_run: bool = False,
    leader: LeaderElector | None = None,
    metrics: Metrics | None = None,
) -> Controller:
    # No Compute Engine here: the NotReady timer stands in for a confirmed-dead VM.
    cfg = Config(Settings(force_delete_unconfirmed=True), RuntimeConfig(dry_run=dry_run))
    c = Controller(api, cfg, identity="hotswap-0", metrics=metrics or Metrics(), leader=leader, clock=clock)
    return c


def sync(c: Controller) -> None:
    for cache in c.caches:
        cache.relist()


def test_nothing_happens_before_the_caches_are_synced() -> None:
    api = cluster()
    c = controller(api, Clock(NOW))
    assert c.reconcile_once() is None
    assert api.calls == []
    assert c.metrics.value("hotswap_caches_synced") == 0


def test_watches_are_filtered_to_tpu_nodes_and_jobset_pods_and_jobs() -> None:
    api = cluster()
    c = controller(api, Clock(NOW))
    sync(c)
    assert [c_ for c_ in api.calls if c_[0] == "list"] == [
        ("list", "nodes", "cloud.google.com/gke-tpu-accelerator"),
        ("list", "pods", "jobset.sigs.k8s.io/jobset-name"),
        ("list", "jobsets", ""),
        ("list", "jobs", "jobset.sigs.k8s.io/jobset-name"),
    ]


def test_unhealthy_pool_is_tainted_and_failed_fast_then_stuck_pod_cleared() -> None:
    api, clock = cluster(), Clock(NOW)
    c = controller(api, clock)
    sync(c)
    d = c.reconcile_once()
    assert d is not None
    status = d.pool("a")
    assert status is not None and status.declared_now
    writes = api.writes()
    assert [w[1] for w in writes if w[0] == "patch_node"] == ["a-0", "a-1", "a-2", "a-3"]
    assert sorted(w[2] for w in writes if w[0] == "evict_pod") == [f"high-{i}" for i in range(4)]
    assert not any(w[0] == "delete_pod" for w in writes)
    events = [w[2] for w in writes if w[0] == "create_event"]
    assert {e["reason"] for e in events} == {"HotswapPoolUnhealthy", "HotswapFailFast"}
    for n in range(4):
        taints = [t["key"] for t in api.objects["nodes"][f"a-{n}"]["spec"]["taints"]]
        assert taints == [k.TPU_RESOURCE, k.UNHEALTHY_TAINT_KEY]
    assert c.metrics.value("hotswap_unhealthy_pool_detections_total") == 1
    assert c.metrics.value("hotswap_fail_fast_evictions_total") == 4
    assert c.metrics.value("hotswap_actions_total", {"kind": "PatchNode", "outcome": "applied"}) == 4

    before = len(api.writes())
    assert c.reconcile_once() is not None
    assert len(api.writes()) == before, "actions on pool a wait until its writes show up in the caches"
    assert c.metrics.value("hotswap_held_actions_total") > 0

    sync(c)
    d = c.reconcile_once()
    assert d is not None and d.actions == (), "idempotent once the cluster reflects the writes"

    clock.t += 15  # the dead node is now confirmed dead (NotReady 35 s)
    d = c.reconcile_once()
    assert d is not None
    deletes = [w for w in api.writes()[before:] if w[0] == "delete_pod"]
    assert deletes == [("delete_pod", "default", "high-1", 0, "uid-high-1")]
    assert c.metrics.value("hotswap_force_deletions_total") == 1
    assert "default/low-0" in api.objects["pods"], "the unrelated low-priority pods are untouched"


def test_dry_run_decides_but_writes_nothing() -> None:
    api = cluster()
    c = controller(api, Clock(NOW), dry_run=True)
    sync(c)
    d = c.reconcile_once()
    assert d is not None and len(d.actions) > 0
    assert api.writes() == []
    assert c.metrics.value("hotswap_actions_total", {"kind": "EvictPod", "outcome": "dry-run"}) == 4
    assert c.metrics.value("hotswap_dry_run") == 1
    d2 = c.reconcile_once()
    assert d2 is not None and d2.actions == d.actions, "dry-run keeps proposing the same plan"


def test_standby_replica_writes_nothing() -> None:
    api = cluster()
    clock = Clock(NOW)
    other = LeaderElector(api, namespace="ns", name="lease", identity="other", clock=clock)
    assert other.try_acquire_or_renew()
    me = LeaderElector(api, namespace="ns", name="lease", identity="hotswap-0", clock=clock)
    assert not me.try_acquire_or_renew()
    c = controller(api, clock, leader=me)
    sync(c)
    before = len(api.writes())
    d = c.reconcile_once()
    assert d is not None and d.actions
    assert len(api.writes()) == before
    assert c.metrics.value("hotswap_is_leader") == 0


def test_preemption_through_the_adapter_records_then_evicts() -> None:
    api, clock = cluster(), Clock(NOW)
    # high has already been failed over: its new leader pod is unschedulable, pool a is tainted.
    for i in range(4):
        del api.objects["pods"][f"default/high-{i}"]
    api.add(
        "pods",
        pod_obj(
            "high-new",
            "high",
            job="high-slice-0",
            node=None,
            priority=HIGH,
            phase="Pending",
            unschedulable_since=NOW - 30,
        ),
    )
    for i in range(4):
        node = api.objects["nodes"][f"a-{i}"]
        node["spec"]["taints"].append({"key": k.UNHEALTHY_TAINT_KEY, "value": "true", "effect": "NoSchedule"})
        node["metadata"]["annotations"] = {k.UNHEALTHY_SINCE_ANNOTATION: "1970-01-12T13:46:20Z"}
    c = controller(api, clock)
    sync(c)
    d = c.reconcile_once()
    assert d is not None and [p.victims for p in d.preemptions] == [("default/low",)]
    kinds = [w[0] for w in api.writes()]
    assert kinds.index("patch_jobset") < kinds.index("evict_pod")
    assert api.objects["jobsets"]["default/low"]["metadata"]["annotations"][k.PREEMPTED_FOR_ANNOTATION] == (
        "default/high"
    )
    assert sorted(w[2] for w in api.writes() if w[0] == "evict_pod") == [f"low-{i}" for i in range(4)]
    assert c.metrics.value("hotswap_preemptions_total") == 1
    assert c.metrics.value("hotswap_preempted_slices_total") == 1
    sync(c)
    before = len(api.writes())
    d = c.reconcile_once()
    assert d is not None and d.preemptions == () and len(api.writes()) == before


def test_run_loop_reconciles_on_wake_and_stops() -> None:
    api = cluster()
    c = controller(api, Clock(NOW))
    c.config = replace(
        c.config, runtime=RuntimeConfig(reconcile_interval_seconds=5.0, min_reconcile_gap_seconds=0.0)
    )
    sync(c)
    stop = threading.Event()
    t = threading.Thread(target=c.run, args=(stop,))
    t.start()
    c.wake.set()
    deadline = time.monotonic() + 5
    while (
        c.metrics.value("hotswap_reconciles_total", {"result": "applied"}) < 1 and time.monotonic() < deadline
    ):
        time.sleep(0.01)
    stop.set()
    c.wake.set()
    t.join(timeout=5)
    assert not t.is_alive()
    assert c.metrics.value("hotswap_reconciles_total", {"result": "applied"}) >= 1
    assert c.alive()


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_probe_endpoints() -> None:
    state = {"alive": True, "ready": False}
    server = ProbeServer("127.0.0.1", 0, alive=lambda: state["alive"], ready=lambda: state["ready"])
    server.start()
    try:
        base = f"http://127.0.0.1:{server.port}"
        assert get(f"{base}/healthz") == (200, "ok\n")
        assert get(f"{base}/readyz")[0] == 503
        state["ready"] = True
        assert get(f"{base}/readyz") == (200, "ok\n")
        state["alive"] = False
        assert get(f"{base}/healthz")[0] == 503
        assert get(f"{base}/nope")[0] == 404
    finally:
        server.stop()


def test_an_unmet_expectation_holds_only_what_it_touches() -> None:
    """One slow watch event for pool a does not block pool b."""
    from tpu_platform.hotswap.adapter.applier import ApplyResult, Outcome
    from tpu_platform.hotswap.core.actions import EmitEvent, PatchNode

    api = cluster()
    c = controller(api, Clock(NOW))
    sync(c)
    taint_a = PatchNode("a-0", "a", add_taints=(), set_annotations=((k.SUSPECT_SINCE_ANNOTATION, "x"),))
    c.expectations.expect([ApplyResult(taint_a, Outcome.APPLIED)], time.monotonic())
    again_a = PatchNode("a-1", "a", set_annotations=((k.SUSPECT_SINCE_ANNOTATION, "x"),))
    on_b = PatchNode("b-0", "b", set_annotations=((k.SUSPECT_SINCE_ANNOTATION, "x"),))
    event_a = EmitEvent("Node", "", "a-1", "uid-a-1", "Warning", "HotswapPoolUnhealthy", "m", "Taint")
    go, held = c.expectations.hold((again_a, on_b, event_a), time.monotonic())
    assert go == (on_b,) and held == [again_a, event_a]


@pytest.mark.parametrize(("interval", "retry"), [(2.0, 1.0), (0.2, 0.2)])
def test_only_the_node_caches_retry_quickly_once_stale(interval: float, retry: float) -> None:
    """Every taint reads the node caches (``controller.needs``): once stale they list again within
    min(1 s, reconcile interval); pods and JobSets keep the reflector's backoff alone."""
    cfg = Config(Settings(lease_stale_seconds=40.0), RuntimeConfig(reconcile_interval_seconds=interval))
    c = Controller(cluster(), cfg, identity="hotswap-0", metrics=Metrics(), clock=Clock(NOW))
    assert c.leases is not None
    assert c.nodes.stale_retry_seconds == c.leases.stale_retry_seconds == retry
    assert c.pods.stale_retry_seconds is None and c.jobsets.stale_retry_seconds is None


# --- the node Lease cache -------------------------------------------------------------------------
# The node Lease cache: only with ``lease_stale_seconds`` on, watch-fed like the others, joined into
# the snapshot's nodes by node name.
NS = "kube-node-lease"
ON = Settings(lease_stale_seconds=20)


def lease_controller(api: FakeApi, settings: Settings) -> Controller:
    return Controller(
        api, Config(settings, RuntimeConfig()), identity="hotswap-0", metrics=Metrics(), clock=Clock(NOW)
    )


def with_leases(api: FakeApi, renewed: dict[str, float | None]) -> FakeApi:
    for node, t in renewed.items():
        api.add("leases", node_lease_obj(node, t))
    return api


def fresh(**stale: float | None) -> dict[str, float | None]:
    """Every node of pools a and b renewed 3 s ago, except those given."""
    out: dict[str, float | None] = {f"{p}-{i}": NOW - 3 for p in ("a", "b") for i in range(4)}
    out.update({name.replace("_", "-"): t for name, t in stale.items()})
    return out


def event(kind: str, obj: dict[str, Any], rv: str) -> dict[str, Any]:
    return {"type": kind, "object": {**obj, "metadata": {**obj["metadata"], "resourceVersion": rv}}}


def test_off_there_is_no_lease_cache_and_no_lease_call() -> None:
    api = with_leases(cluster(), fresh())
    c = lease_controller(api, Settings())
    assert c.leases is None and len(c.caches) == 4
    for cache in c.caches:
        cache.relist()
    assert not any("leases" in call for call in api.calls)
    snap = c.snapshot(NOW)
    assert all(n.lease_renewed is None for n in snap.nodes)


def test_on_leases_are_listed_and_watched_in_kube_node_lease_only() -> None:
    api = with_leases(cluster(), fresh())
    api.add("leases", node_lease_obj("b-0", NOW - 900, namespace="elsewhere"))
    c = lease_controller(api, ON)
    assert c.leases is not None and c.leases in c.caches
    api.watch_streams["leases"] = [[event("MODIFIED", node_lease_obj("b-1", NOW - 1), "200")]]
    c.leases.watch_once()
    lease_calls = [call for call in api.calls if call[1] == "leases"]
    assert lease_calls == [
        ("list", "leases", "", NS),
        ("watch", "leases", str(api.rv), 300, NS),
    ]
    renewed = {lease.node: lease.renewed for lease in c.leases.values()}
    assert renewed["b-1"] == NOW - 1 and renewed["b-0"] == NOW - 3, "the other namespace is not read"
    assert not c.wake.is_set(), "renewals (every 10 s per node) do not trigger reconciles"


def test_a_gone_lease_watch_relists() -> None:
    api = with_leases(cluster(), fresh())
    c = lease_controller(api, ON)
    assert c.leases is not None
    c.leases.relist()
    api.watch_streams["leases"] = [[{"type": "ERROR", "object": {"code": 410, "reason": "Expired"}}]]
    c.leases.watch_once()
    assert c.leases.lists == 2
    assert [call[0] for call in api.calls if call[1] == "leases"] == ["list", "watch", "list"]


def renew(api: FakeApi, at: float, *, except_nodes: tuple[str, ...] = ()) -> None:
    """Every kubelet with a Lease renews it at ``at``, except the silent ones."""
    for key, obj in list(api.objects["leases"].items()):
        node = obj["metadata"]["name"]
        if node not in except_nodes and "renewTime" in obj["spec"]:
            api.objects["leases"][key] = node_lease_obj(node, at)


def test_heartbeats_are_timed_on_the_controllers_clock_and_a_silent_node_declares_the_pool() -> None:
    # The kubelets' clocks run 600 s behind the controller's: renewTime alone would look stale.
    skew = 600.0
    api = with_leases(cluster(), {n: t - skew if t is not None else None for n, t in fresh(b_3=None).items()})
    del api.objects["leases"][f"{NS}/b-1"]
    clock = Clock(NOW)
    c = Controller(api, Config(ON, RuntimeConfig()), identity="hotswap-0", metrics=Metrics(), clock=clock)
    sync(c)
    nodes = {n.name: n for n in c.snapshot(NOW).nodes}
    assert nodes["b-0"].lease_renewed == NOW, "first seen counts as renewed now, whatever its clock says"
    assert nodes["b-1"].lease_renewed is None, "no Lease: no signal"
    assert nodes["b-3"].lease_renewed is None, "a Lease without renewTime: no signal"
    first = c.reconcile_once()
    assert first is not None
    first_b = first.pool("b")
    assert first_b is not None and not first_b.declared_now, "skewed clocks alone declare nothing"

    # b-2's kubelet falls silent; every other kubelet keeps renewing (on its own skewed clock).
    for step in range(1, 5):
        clock.t = NOW + 10 * step
        renew(api, clock.t - skew, except_nodes=("b-2",))
        sync(c)
        nodes = {n.name: n for n in c.snapshot(clock.t).nodes}
        assert nodes["b-0"].lease_renewed == clock.t
        assert nodes["b-2"].lease_renewed == NOW
    d = c.reconcile_once()
    assert d is not None
    status = d.pool("b")
    assert status is not None and status.declared_now and "lease not renewed" in status.reason
    evicted = sorted(w[2] for w in api.writes() if w[0] == "evict_pod")
    assert [p for p in evicted if p.startswith("low-")] == [f"low-{i}" for i in range(4)]
    deleted = [w[2] for w in api.writes() if w[0] == "delete_pod"]
    assert not [p for p in deleted if p.startswith("low-")], "a stale lease never force-deletes"

    off = with_leases(cluster(), fresh(b_2=NOW - 35))
    c_off = lease_controller(off, Settings())
    sync(c_off)
    d_off = c_off.reconcile_once()
    assert d_off is not None
    status_off = d_off.pool("b")
    assert status_off is not None and not status_off.declared_now


def test_lease_observations_time_changes_not_timestamps() -> None:
    from tpu_platform.hotswap.adapter.convert import LeaseObservations, NodeLease

    seen = LeaseObservations()
    assert seen.observe([NodeLease("n", 5.0)], now=100.0) == [NodeLease("n", 100.0)]
    assert seen.observe([NodeLease("n", 5.0)], now=130.0) == [NodeLease("n", 100.0)], "no change: silent"
    assert seen.observe([NodeLease("n", 15.0)], now=140.0) == [NodeLease("n", 140.0)], "renewed: heard now"
    assert seen.observe([], now=150.0) == []
    assert seen.observe([NodeLease("n", 15.0)], now=160.0) == [NodeLease("n", 160.0)], "forgotten once gone"


# --- chip and ICI failure signals -----------------------------------------------------------------
# Chip/ICI failure signals end to end through the adapter: failed pods with the TPU runtime's slice
# failure in their termination message (``status.containerStatuses[].state.terminated``, as the kubelet
# writes it) against the API double, read by the real controller.
CHIP = "E1201 session_master.cc] Detected failure SLICE_FAILURE_CHIP_DRIVER_ERROR in session 6c"


def failed(obj: dict[str, Any], at: float) -> dict[str, Any]:
    obj["status"]["phase"] = "Failed"
    obj["status"]["containerStatuses"] = [
        {
            "name": "jax",
            "state": {
                "terminated": {"exitCode": 1, "reason": "Error", "message": CHIP, "finishedAt": ts(at)}
            },
        }
    ]
    return obj


def failing_cluster(failing: int) -> FakeApi:
    api = FakeApi()
    for pool in ("a", "b"):
        for i in range(4):
            api.add("nodes", node_obj(f"{pool}-{i}", pool, since=NOW - 9000))
    api.add("jobsets", jobset_obj("high"))
    for i in range(4):
        pod = pod_obj(
            f"high-{i}", "high", job="high-slice-0", node=f"a-{i}", priority=HIGH, started=NOW - 3000
        )
        api.add("pods", failed(pod, NOW - 1) if i < failing else pod)
    return api


def run_once(api: FakeApi) -> Controller:
    c = Controller(
        api, Config(Settings(), RuntimeConfig()), identity="hotswap-0", metrics=Metrics(), clock=lambda: NOW
    )
    for cache in c.caches:
        cache.relist()
    c.reconcile_once()
    return c


def test_two_reports_on_one_tenants_slice_declare_it_and_fail_fast_without_force_deletes() -> None:
    api = failing_cluster(failing=2)
    c = run_once(api)
    writes = api.writes()
    patched = {w[1] for w in writes if w[0] == "patch_node"}
    assert patched == {"a-0", "a-1", "a-2", "a-3"}
    assert sorted(w[2] for w in writes if w[0] == "evict_pod") == ["high-2", "high-3"]
    assert not any(w[0] == "delete_pod" for w in writes), "a live kubelet stops its pods"
    node = api.objects["nodes"]["a-0"]
    assert any(t["key"] == k.UNHEALTHY_TAINT_KEY for t in node["spec"]["taints"])
    assert node["metadata"]["annotations"][k.TPU_ERRORS_ANNOTATION].count("/default/") == 2
    assert c.metrics.value("hotswap_chip_signal_detections_total", {"signal": "workload_reports"}) == 1


def test_one_report_is_kept_but_moves_nothing() -> None:
    api = failing_cluster(failing=1)
    c = run_once(api)
    writes = api.writes()
    assert not any(w[0] in ("evict_pod", "delete_pod") for w in writes)
    node = api.objects["nodes"]["a-2"]
    assert not any(t["key"] == k.UNHEALTHY_TAINT_KEY for t in node["spec"]["taints"])
    assert node["metadata"]["annotations"][k.TPU_ERRORS_ANNOTATION].endswith("/default/uid-high-0")
    assert c.metrics.value("hotswap_suspect_pools") == 1


# --- through the real client, against the API double ----------------------------------------------
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


def test_a_transport_error_mid_batch_does_not_drop_the_rest(double: ApiDouble) -> None:
    seed = seed_cluster(double)
    c = double_controller(double, leader=False, request_timeout=(30.0, 60.0))
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
    c = double_controller(double)
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
    c = double_controller(double, leader=False)
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
    c = double_controller(double, leader=False)
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


def test_liveness_fails_when_a_watch_thread_dies(double: ApiDouble) -> None:
    seed_cluster(double)
    c = double_controller(double, leader=False)
    dead = threading.Thread(target=lambda: None, name="watch-dead")
    dead.start()
    dead.join()
    c.watch_thread(dead)
    assert not c.alive()
