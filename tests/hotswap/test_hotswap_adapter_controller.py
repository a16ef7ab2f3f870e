"""The control loop against the fake API: what is written, when, and by whom."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from dataclasses import replace

import pytest

from tests.hotswap.hotswap_fakes import FakeApi, jobset_obj, node_obj, pod_obj
from tpu_platform.hotswap.adapter.config import Config, RuntimeConfig
from tpu_platform.hotswap.adapter.controller import Controller
from tpu_platform.hotswap.adapter.leader import LeaderElector
from tpu_platform.hotswap.adapter.metrics import Metrics
from tpu_platform.hotswap.adapter.probes import ProbeServer
from tpu_platform.hotswap.core import Settings
from tpu_platform.hotswap.core import constants as k

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
    """Every taint reads the node caches (adapter/needs.py): once stale they list again within
    min(1 s, reconcile interval); pods and JobSets keep the reflector's backoff alone."""
    cfg = Config(Settings(lease_stale_seconds=40.0), RuntimeConfig(reconcile_interval_seconds=interval))
    c = Controller(cluster(), cfg, identity="hotswap-0", metrics=Metrics(), clock=Clock(NOW))
    assert c.leases is not None
    assert c.nodes.stale_retry_seconds == c.leases.stale_retry_seconds == retry
    assert c.pods.stale_retry_seconds is None and c.jobsets.stale_retry_seconds is None
