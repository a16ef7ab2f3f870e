"""Hostile tenants through the controller: values they write can neither stop it nor steer it.

Each case was a real failure: one bad annotation raised inside ``decide`` (nothing happened at all,
so a dead pool stayed untainted), and bare pods with a JobSet's name label made a 1-slice JobSet
"need" four slices. A time refused on a node is reported and written back as the controller's own.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tests.hotswap.hotswap_fakes import FakeApi, jobset_obj, node_obj, pod_obj
from tpu_platform.hotswap.adapter.config import Config, RuntimeConfig
from tpu_platform.hotswap.adapter.controller import Controller
from tpu_platform.hotswap.adapter.metrics import Metrics
from tpu_platform.hotswap.core import Pod, Settings, Snapshot, decide, format_time
from tpu_platform.hotswap.core import constants as k
from tpu_platform.testing.hotswap_builders import (
    make_jobset,
    make_nodes,
    make_pools,
    pending_pods,
    running_pods,
)

NOW = 1_000_000.0
HIGH, LOW = 2_000_000, 1_000_000


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _pods(api: FakeApi, jobset: str, pool: str, prio: int, *, job: str | None = None) -> None:
    for i in range(4):
        api.add(
            "pods",
            pod_obj(
                f"{jobset}-{i}",
                jobset,
                job=job or f"{jobset}-slice-0",
                node=f"{pool}-{i}",
                priority=prio,
                started=NOW - 3000,
            ),
        )


def hostile_cluster(bad: dict[str, str] | None = None, *, topology: str = "4x4") -> FakeApi:
    """Pool a has a dead node (must be tainted), b runs ``low`` (the tenant with ``bad`` values),
    c runs ``other``; ``high`` waits for a slice, so the planner looks at every candidate."""
    api = FakeApi()
    for pool in ("a", "b", "c"):
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
    api.add("jobsets", jobset_obj("low", annotations=bad, topology=topology))
    api.add("jobsets", jobset_obj("other"))
    api.add("jobsets", jobset_obj("high"))
    _pods(api, "low", "b", LOW)
    _pods(api, "other", "c", LOW + 1)
    for i in range(4):
        api.add(
            "pods",
            pod_obj(
                f"high-{i}",
                "high",
                job="high-slice-0",
                node=None,
                priority=HIGH,
                phase="Pending",
                unschedulable_since=NOW - 60,
            ),
        )
    return api


def run_once(api: FakeApi, metrics: Metrics | None = None, settings: Settings | None = None) -> Controller:
    c = Controller(
        api,
        Config(settings or Settings(), RuntimeConfig()),
        identity="hotswap-0",
        metrics=metrics or Metrics(),
        clock=Clock(NOW),
    )
    for cache in c.caches:
        cache.relist()
    assert c.reconcile_once() is not None
    return c


def _events(api: FakeApi, reason: str) -> list[dict[str, Any]]:
    return [w[2] for w in api.writes() if w[0] == "create_event" and w[2]["reason"] == reason]


def _tainted(api: FakeApi, pool: str) -> bool:
    return all(
        any(t["key"] == k.UNHEALTHY_TAINT_KEY for t in api.objects["nodes"][f"{pool}-{i}"]["spec"]["taints"])
        for i in range(4)
    )


def test_nan_checkpoint_interval_is_refused_and_everything_else_still_happens() -> None:
    api = hostile_cluster({k.CHECKPOINT_INTERVAL_ANNOTATION: "NaN"})
    c = run_once(api)
    assert _tainted(api, "a"), "the dead pool is still declared and tainted"
    evicted = sorted(w[2] for w in api.writes() if w[0] == "evict_pod")
    assert "low-0" not in evicted, "the refused JobSet is left alone"
    assert [e for e in evicted if e.startswith("other-")] == [f"other-{i}" for i in range(4)], (
        "the next candidate is preempted for high"
    )
    events = _events(api, "HotswapInputRejected")
    assert [(e["regarding"]["kind"], e["regarding"]["name"], e["type"]) for e in events] == [
        ("JobSet", "low", "Warning")
    ]
    assert "checkpoint-interval" in str(events[0]["note"])
    assert (
        c.metrics.value("hotswap_rejected_inputs_total", {"kind": "JobSet", "reason": "checkpoint-interval"})
        == 1
    )


def test_a_400_digit_topology_is_refused_and_everything_else_still_happens() -> None:
    api = hostile_cluster(topology="4" * 400 + "x4")
    c = run_once(api)
    assert _tainted(api, "a")
    assert c.metrics.value("hotswap_rejected_inputs_total", {"kind": "JobSet", "reason": "topology"}) == 1


def test_a_refusal_counts_once_and_its_event_repeats_only_after_ten_minutes() -> None:
    api = hostile_cluster({k.CHECKPOINT_INTERVAL_ANNOTATION: "inf"})
    c = run_once(api)
    assert len(_events(api, "HotswapInputRejected")) == 1
    for cache in c.caches:
        cache.relist()
    assert c.reconcile_once() is not None
    assert len(_events(api, "HotswapInputRejected")) == 1
    assert (
        c.metrics.value("hotswap_rejected_inputs_total", {"kind": "JobSet", "reason": "checkpoint-interval"})
        == 1
    )
    assert isinstance(c.clock, Clock)
    c.clock.t += 600
    assert c.reconcile_once() is not None
    assert len(_events(api, "HotswapInputRejected")) == 2, "reported again while it lasts"
    assert (
        c.metrics.value("hotswap_rejected_inputs_total", {"kind": "JobSet", "reason": "checkpoint-interval"})
        == 1
    )


def test_bare_pods_with_a_jobsets_name_label_do_not_make_it_need_more_slices() -> None:
    """Three bare pods labelled with a 1-slice JobSet's name used to make it "need" four slices."""
    api = FakeApi()
    for p, pool in enumerate("abcde"):
        for i in range(4):
            api.add("nodes", node_obj(f"{pool}-{i}", pool, ready="True", since=NOW - 9000))
        if p < 4:
            api.add("jobsets", jobset_obj(f"low{p}"))
            _pods(api, f"low{p}", pool, LOW)
    api.add("jobsets", jobset_obj("high"))
    api.add(
        "pods",
        pod_obj(
            "high-0",
            "high",
            job="high-slice-0",
            node=None,
            priority=HIGH,
            phase="Pending",
            unschedulable_since=NOW - 60,
        ),
    )
    for j in range(3):
        api.add(
            "pods",
            pod_obj(
                f"fake-{j}",
                "high",
                job=f"fake-job-{j}",
                node=None,
                priority=HIGH,
                phase="Pending",
                unschedulable_since=NOW - 60,
                owned=False,
            ),
        )
    # Pool e is busy with an unmanaged pod, so high really needs a victim.
    api.add("pods", pod_obj("squatter", "nobody", job="x", node="e-0", priority=HIGH, owned=False))
    run_once(api)
    victims = {w[2].rsplit("-", 1)[0] for w in api.writes() if w[0] == "evict_pod"}
    assert len(victims) == 1, victims


def test_the_slices_needed_never_exceed_the_replicas() -> None:
    """Even pods that do claim the JobSet (say, a hand-made Job's) cannot raise its need."""
    pools = make_pools("p", 4)
    nodes = {p.name: make_nodes(p, ready_since=NOW - 9000) for p in pools}
    lows = [make_jobset(f"low{i}", priority=LOW) for i in range(4)]
    high = make_jobset("high", priority=HIGH, slices=1)
    pods: list[Pod] = []
    for i, low in enumerate(lows):
        pods.extend(running_pods(low, [pools[i]], nodes, started=NOW - 3000))
    pods.extend(pending_pods(high, unschedulable_since=NOW - 60))
    extra = pending_pods(replace(high, slices=4), unschedulable_since=NOW - 60)
    pods.extend(p for p in extra if not p.job.endswith("-0"))
    snap = Snapshot(NOW, pools, tuple(n for p in pools for n in nodes[p.name]), (*lows, high), tuple(pods))
    d = decide(snap)
    assert [len(p.victims) for p in d.preemptions] == [1]


def test_a_pod_whose_jobset_uid_is_another_jobsets_belongs_to_none() -> None:
    """A namesake's or a forger's pod (other UID) does not count as waiting for the JobSet."""
    pools = make_pools("p", 1)
    nodes = {p.name: make_nodes(p, ready_since=NOW - 9000) for p in pools}
    low = make_jobset("low", priority=LOW)
    high = make_jobset("high", priority=HIGH)
    pods = [
        *running_pods(low, pools, nodes, started=NOW - 3000),
        *(replace(p, jobset_uid="someone-else") for p in pending_pods(high, unschedulable_since=NOW - 60)),
    ]
    snap = Snapshot(NOW, pools, tuple(nodes["p-0"]), (low, high), tuple(pods))
    assert decide(snap).preemptions == ()


def test_opting_out_needs_the_stacks_grant_through_the_adapter_too() -> None:
    api = hostile_cluster({k.PREEMPTIBLE_ANNOTATION: "false"})
    run_once(api)
    assert any(w[2] == "low-0" for w in api.writes() if w[0] == "evict_pod")
    api = hostile_cluster({k.PREEMPTIBLE_ANNOTATION: "false"})
    run_once(api, settings=Settings(opt_out_namespaces=("default",)))
    assert not any(w[2] == "low-0" for w in api.writes() if w[0] == "evict_pod")


def test_a_pod_belongs_to_a_jobset_only_with_its_uid_label_and_a_controlling_job() -> None:
    from tpu_platform.hotswap.adapter.convert import pod_from_api

    def convert(**kw: Any) -> Pod:
        return pod_from_api(pod_obj("p", "high", job="high-slice-0", node=None, priority=HIGH, **kw))

    owned = convert()
    assert (owned.jobset, owned.jobset_uid, owned.job) == ("default/high", "uid-js-high", "high-slice-0")
    assert convert(owned=False).jobset is None, "a bare pod with the name label"
    assert convert(jobset_uid="").jobset is None, "no JobSet UID label"
    raw = pod_obj("p", "high", job="high-slice-0", node=None, priority=HIGH)
    raw["metadata"]["ownerReferences"][0]["controller"] = False
    assert pod_from_api(raw).jobset is None, "owned but not controlled by the Job"
    raw["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "x", "controller": True}
    ]
    assert pod_from_api(raw).jobset is None


# --- a refused node time ------------------------------------------------------------------------


YEAR_9999 = "9999-12-31T23:59:59Z"
S = Settings(max_bad_node_fraction=1.0)


def test_the_adapter_reports_a_refused_node_time_and_rewrites_it() -> None:
    api = FakeApi()
    taints = [
        {"key": k.TPU_RESOURCE, "value": "present", "effect": "NoSchedule"},
        {"key": k.UNHEALTHY_TAINT_KEY, "value": "true", "effect": "NoSchedule"},
    ]
    ann = {k.UNHEALTHY_SINCE_ANNOTATION: format_time(NOW - 300), k.CLEAN_SINCE_ANNOTATION: YEAR_9999}
    for i in range(4):
        api.add("nodes", node_obj(f"a-{i}", "a", since=NOW - 3600, taints=taints, annotations=dict(ann)))
    c = Controller(api, Config(S, RuntimeConfig()), identity="hotswap-0", metrics=Metrics(), clock=Clock(NOW))
    for cache in c.caches:
        cache.relist()
    assert c.reconcile_once() is not None
    events = [
        w[2] for w in api.writes() if w[0] == "create_event" and w[2]["reason"] == "HotswapInputRejected"
    ]
    assert sorted((e["regarding"]["kind"], e["regarding"]["name"]) for e in events) == [
        ("Node", f"a-{i}") for i in range(4)
    ]
    assert all("clean-since" in str(e["note"]) for e in events)
    assert c.metrics.value("hotswap_rejected_inputs_total", {"kind": "Node", "reason": "clean-since"}) == 4
    stored = {
        api.objects["nodes"][f"a-{i}"]["metadata"]["annotations"][k.CLEAN_SINCE_ANNOTATION] for i in range(4)
    }
    assert stored == {format_time(NOW)}
    assert not any(w[0] == "evict_pod" for w in api.writes())
