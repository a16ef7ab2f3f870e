"""Hostile times: every time read from the cluster is bounded by now + clock skew (core/time_bounds.py).

Each case was a real failure: a ``clean-since`` in 9999 kept a clean pool recovering until then; a
NotReady transition in the future kept a dead pool suspect for as long as it said; a clean-since from
before the declaration, a NotReady or ``suspect-since`` from before the nodes existed, or a pod
unschedulable since before it was created skipped the wait meant to confirm it; future flap history
kept a pool flapping forever; future tpu-errors entries crowded real reports out of the merged list.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import pytest

from tests.hotswap.hotswap_fakes import FakeApi, node_obj
from tpu_platform.hotswap.adapter.config import Config, RuntimeConfig
from tpu_platform.hotswap.adapter.controller import Controller
from tpu_platform.hotswap.adapter.metrics import Metrics
from tpu_platform.hotswap.core import (
    Decision,
    EmitEvent,
    EvictPod,
    ForceDeletePod,
    JobSet,
    Node,
    PatchNode,
    Pod,
    PoolState,
    Settings,
    Snapshot,
    Termination,
    apply_actions,
    decide,
    format_time,
    node_dead_since,
)
from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.health import OWN_TAINT
from tpu_platform.hotswap.core.model import FAILED
from tpu_platform.hotswap.core.timeutil import CLOCK_SKEW_SECONDS, MAX_EPOCH
from tpu_platform.hotswap.core.workload_signals import MAX_REPORTS
from tpu_platform.testing.hotswap_builders import (
    fail_node,
    heal_node,
    make_jobset,
    make_nodes,
    make_pool,
    pending_pods,
    running_pods,
)

NOW = 1_000_000.0
YEAR_9999 = "9999-12-31T23:59:59Z"
S = Settings(max_bad_node_fraction=1.0)
T_GOOD = S.healthy_after_seconds
T_BAD = S.unhealthy_after_seconds
POOL = make_pool("p")
CHIP_ERROR = "Detected failure SLICE_FAILURE_CHIP_DRIVER_ERROR in session 1f"


def fresh() -> tuple[Node, ...]:
    return make_nodes(POOL, ready_since=NOW - 3600)


def declared(annotations: dict[str, str], nodes: tuple[Node, ...] | None = None) -> tuple[Node, ...]:
    """The pool as the controller leaves it declared (taint and state on every node), since NOW - 300."""
    ann = {k.UNHEALTHY_SINCE_ANNOTATION: format_time(NOW - 300), **annotations}
    return tuple(
        replace(n, taints=(*n.taints, OWN_TAINT), annotations={**n.annotations, **ann})
        for n in (nodes or fresh())
    )


def annotated(annotations: dict[str, str], nodes: tuple[Node, ...] | None = None) -> tuple[Node, ...]:
    return tuple(replace(n, annotations={**n.annotations, **annotations}) for n in (nodes or fresh()))


def snapshot(
    nodes: tuple[Node, ...], *, now: float = NOW, jobsets: Sequence[JobSet] = (), pods: Sequence[Pod] = ()
) -> Snapshot:
    return Snapshot(now, (POOL,), nodes, tuple(jobsets), tuple(pods))


def run(snap: Snapshot, until: float, dt: float = 1.0, s: Settings = S) -> list[tuple[float, Decision]]:
    """Decide every ``dt`` from the snapshot's time to ``until``, applying each decision's actions."""
    out = []
    t = snap.now
    while t <= until + 1e-9:
        snap = replace(snap, now=t)
        d = decide(snap, s)
        out.append((t, d))
        snap = apply_actions(snap, d.actions)
        t += dt
    return out


def state_at(trace: list[tuple[float, Decision]], pool: str = "p") -> Callable[[float], PoolState]:
    def at(t: float) -> PoolState:
        d = next(d for when, d in trace if abs(when - t) < 1e-6)
        status = d.pool(pool)
        assert status is not None
        return status.state

    return at


def first(trace: list[tuple[float, Decision]], state: PoolState) -> float | None:
    for t, d in trace:
        status = d.pool("p")
        if status is not None and status.state is state:
            return t
    return None


def refused(d: Decision) -> set[tuple[str, str, str]]:
    assert all(r.value_only for r in d.rejected if r.kind == "Node")
    return {(r.kind, r.name, r.reason) for r in d.rejected}


# --- the controller's own state on nodes ----------------------------------------------------------


@pytest.mark.parametrize("stamp", [YEAR_9999, str(int(MAX_EPOCH)), format_time(NOW + CLOCK_SKEW_SECONDS + 1)])
def test_a_future_clean_since_does_not_hold_a_clean_pool_past_t_good(stamp: str) -> None:
    """It used to keep the pool recovering (tainted, no work) until the year 9999."""
    nodes = declared({k.CLEAN_SINCE_ANNOTATION: stamp})
    trace = run(snapshot(nodes), NOW + T_GOOD + 5)
    d = trace[0][1]
    status = d.pool("p")
    assert status is not None and status.state is PoolState.RECOVERING
    assert (status.clean_since, status.recovers_at) == (NOW, NOW + T_GOOD), "counted from now"
    written = {
        dict(a.set_annotations).get(k.CLEAN_SINCE_ANNOTATION) for a in d.actions if isinstance(a, PatchNode)
    }
    assert written == {format_time(NOW)}, "now is written over it, as on a pool first seen clean"
    assert refused(d) == {("Node", n.name, "clean-since") for n in nodes}
    assert first(trace, PoolState.HEALTHY) == NOW + T_GOOD
    assert all(d.rejected == () for _, d in trace[1:]), "once rewritten, nothing is refused"


def test_a_clean_since_from_before_the_declaration_does_not_recover_a_pool_early() -> None:
    """Older than T_good, it recovered the pool in the very pass that read it."""
    nodes = declared({k.CLEAN_SINCE_ANNOTATION: format_time(NOW - 5000)})
    trace = run(snapshot(nodes), NOW + T_GOOD + 5)
    assert first(trace, PoolState.HEALTHY) == NOW + T_GOOD
    d = trace[0][1]
    assert refused(d) == {("Node", n.name, "clean-since") for n in nodes}
    assert all("earlier than the declaration" in r.detail for r in d.rejected)


def test_a_clean_since_written_within_the_skew_before_the_declaration_still_counts() -> None:
    """Two controller replicas' clocks differ by up to the skew."""
    nodes = declared({k.CLEAN_SINCE_ANNOTATION: format_time(NOW - 300 - CLOCK_SKEW_SECONDS / 2)})
    d = decide(snapshot(nodes), S)
    assert d.rejected == ()
    status = d.pool("p")
    assert status is not None and status.clean_since == NOW - 300 - CLOCK_SKEW_SECONDS / 2


@pytest.mark.parametrize("tainted", [True, False])
def test_a_future_unhealthy_since_counts_as_now(tainted: bool) -> None:
    """The mark still declares the pool (a write of it may have landed without the taint's), from now:
    the pool is held exactly as one declared now, and the recovery event reports no negative time."""
    future = declared({k.UNHEALTHY_SINCE_ANNOTATION: YEAR_9999})
    present = declared({k.UNHEALTHY_SINCE_ANNOTATION: format_time(NOW)})
    if not tainted:
        future = tuple(replace(n, taints=n.taints[:-1]) for n in future)
        present = tuple(replace(n, taints=n.taints[:-1]) for n in present)
    trace = run(snapshot(future), NOW + T_GOOD + 5)
    same = run(snapshot(present), NOW + T_GOOD + 5)
    assert [d.pool("p") for _, d in trace] == [d.pool("p") for _, d in same]
    assert refused(trace[0][1]) == {("Node", n.name, "unhealthy-since") for n in future}
    status = trace[0][1].pool("p")
    assert status is not None and status.unhealthy_since == NOW and status.state is PoolState.RECOVERING
    recovered = [
        a.message
        for _, d in trace
        for a in d.actions
        if isinstance(a, EmitEvent) and a.reason == "HotswapPoolRecovered"
    ]
    assert recovered == [f"Node pool p clean again; untainted after {T_GOOD:.0f}s unhealthy"]


def test_future_flap_history_does_not_keep_a_pool_flapping() -> None:
    """Three declarations 'in 9999' stayed inside the flap window forever: 900 s of clean time on
    every recovery instead of 120 s."""
    history = ",".join(format_time(MAX_EPOCH - i) for i in range(S.flap_threshold))
    nodes = declared(
        {k.UNHEALTHY_HISTORY_ANNOTATION: history, k.CLEAN_SINCE_ANNOTATION: format_time(NOW - 200)}
    )
    d = decide(snapshot(nodes), S)
    status = d.pool("p")
    assert status is not None and not status.flapping and status.state is PoolState.HEALTHY
    assert refused(d) == {("Node", n.name, "unhealthy-history") for n in nodes}


@pytest.mark.parametrize("stamp", [YEAR_9999, "1970-01-01T00:16:40Z"])
def test_a_suspect_since_out_of_bounds_starts_the_suspect_clock_now(stamp: str) -> None:
    """A pool missing a node (no timestamp of its own): a suspect-since in the future kept it suspect
    forever, one from before its nodes existed declared it without waiting out T_bad."""
    nodes = annotated({k.SUSPECT_SINCE_ANNOTATION: stamp})[:3]
    trace = run(snapshot(nodes), NOW + T_BAD + 3)
    assert state_at(trace)(NOW) is PoolState.SUSPECT
    assert first(trace, PoolState.UNHEALTHY) == NOW + T_BAD
    assert refused(trace[0][1]) == {("Node", n.name, "suspect-since") for n in nodes}


# --- times the cluster writes on nodes -------------------------------------------------------------


@pytest.mark.parametrize(
    "since",
    [MAX_EPOCH, NOW + 60, 1.0, float("nan"), float("inf"), float("-inf")],
    ids=["9999", "in-a-minute", "before-the-node", "nan", "inf", "-inf"],
)
def test_a_notready_transition_out_of_bounds_counts_from_first_sight(since: float) -> None:
    """In the future it kept a dead pool suspect for as long as it said; from before the node was
    created (or not finite), it declared the pool in the pass that first saw it."""
    nodes = list(fresh())
    nodes[1] = fail_node(nodes[1], since)
    trace = run(snapshot(tuple(nodes)), NOW + T_BAD + 3)
    assert first(trace, PoolState.SUSPECT) == NOW
    assert first(trace, PoolState.UNHEALTHY) == NOW + T_BAD
    assert refused(trace[0][1]) == {
        ("Node", nodes[1].name, "condition-time"),
        ("Node", nodes[1].name, "taint-time"),
    }


def test_a_notready_transition_from_before_the_node_does_not_pass_the_force_delete_timer() -> None:
    """Opted in to the NotReady timer, a transition "a million seconds" before the node's creation
    force-deletes its pods in the first pass. ``node_dead_since(node, now=now)`` refuses it."""
    s = replace(S, force_delete_unconfirmed=True)
    js = make_jobset("job", priority=10)
    nodes = list(fresh())
    nodes[1] = fail_node(nodes[1], 1.0)
    pods = [replace(p, deletion_timestamp=NOW - 5) for p in running_pods(js, [POOL], {"p": nodes})]
    assert node_dead_since(nodes[1], now=NOW) is None
    d = decide(snapshot(tuple(nodes), jobsets=[js], pods=pods), s)
    assert not any(isinstance(a, ForceDeletePod) for a in d.actions)


def test_a_notready_transition_within_the_skew_keeps_its_own_time() -> None:
    nodes = list(fresh())
    nodes[1] = fail_node(nodes[1], NOW + CLOCK_SKEW_SECONDS)
    d = decide(snapshot(tuple(nodes)), S)
    assert d.rejected == ()
    status = d.pool("p")
    assert status is not None and status.bad_since == NOW + CLOCK_SKEW_SECONDS


@pytest.mark.parametrize("what", ["ready-transition", "creation"])
def test_a_future_clean_transition_or_creation_does_not_move_the_clean_clock(what: str) -> None:
    """A Ready=True lastTransitionTime (or a creationTimestamp) in 9999 made the pool "clean since
    9999": recovering until then."""
    nodes = list(fresh())
    nodes[2] = (
        heal_node(nodes[2], MAX_EPOCH) if what == "ready-transition" else replace(nodes[2], created=MAX_EPOCH)
    )
    trace = run(snapshot(declared({}, tuple(nodes))), NOW + T_GOOD + 5)
    assert first(trace, PoolState.HEALTHY) == NOW + T_GOOD
    reason = "condition-time" if what == "ready-transition" else "creation-time"
    assert refused(trace[0][1]) == {("Node", nodes[2].name, reason)}


def test_a_future_lease_renewal_is_no_heartbeat() -> None:
    s = replace(S, lease_stale_seconds=20.0)
    nodes = list(fresh())
    nodes[0] = replace(nodes[0], lease_renewed=MAX_EPOCH)
    d = decide(snapshot(tuple(nodes)), s)
    assert refused(d) == {("Node", nodes[0].name, "lease-renew-time")}
    status = d.pool("p")
    assert status is not None and status.state is PoolState.HEALTHY


# --- workload reports ------------------------------------------------------------------------------


def _reports(*entries: tuple[float | str, str, str]) -> str:
    return " ".join(f"{t if isinstance(t, str) else format_time(t)}/{ns}/{uid}" for t, ns, uid in entries)


def test_future_tpu_error_reports_do_not_declare_a_pool_and_are_not_kept() -> None:
    """Two tenants' reports confirm each other; dated in 9999 they are no reports at all."""
    stored = _reports((YEAR_9999, "team-a", "u-1"), (YEAR_9999, "team-b", "u-2"))
    nodes = annotated({k.TPU_ERRORS_ANNOTATION: stored})
    d = decide(snapshot(nodes), S)
    status = d.pool("p")
    assert status is not None and status.state is PoolState.HEALTHY
    after = apply_actions(snapshot(nodes), d.actions)
    assert all(k.TPU_ERRORS_ANNOTATION not in n.annotations for n in after.nodes), "dropped, not written back"
    assert refused(d) == {("Node", n.name, "tpu-errors") for n in nodes}


def test_future_tpu_error_reports_cannot_crowd_real_ones_out() -> None:
    """One node holding MAX_REPORTS future entries: the merged list kept the newest MAX_REPORTS (the
    future ones), dropped them, and lost the two real reports that confirm the pool bad."""
    real = _reports((NOW - 5, "team-a", "u-1"), (NOW - 4, "team-b", "u-2"))
    crowd = _reports(*((MAX_EPOCH - i, "team-x", f"x-{i}") for i in range(MAX_REPORTS)))
    nodes = annotated({k.TPU_ERRORS_ANNOTATION: real})
    # A free slice for the restart, so the two tenants' word may take the pool out (core/tenancy.py).
    spare = make_pool("q")
    spare_nodes = make_nodes(spare, ready_since=NOW - 3600)

    def with_spare(pool_nodes: tuple[Node, ...]) -> Snapshot:
        return Snapshot(NOW, (POOL, spare), (*pool_nodes, *spare_nodes), (), ())

    honest = decide(with_spare(nodes), S)
    crowded = (
        replace(nodes[0], annotations={**nodes[0].annotations, k.TPU_ERRORS_ANNOTATION: crowd}),
        *nodes[1:],
    )
    d = decide(with_spare(crowded), S)
    assert d.pool("p") == honest.pool("p")
    status = d.pool("p")
    assert status is not None and status.declared_now
    assert refused(d) == {("Node", nodes[0].name, "tpu-errors")}


def test_a_future_container_end_is_no_report() -> None:
    js = make_jobset("train", priority=10, namespace="team-a")
    pods = list(running_pods(js, [POOL], {"p": fresh()}))
    for i in (0, 1):
        pods[i] = replace(
            pods[i], phase=FAILED, terminations=(Termination("trainer", 1, "Error", CHIP_ERROR, MAX_EPOCH),)
        )
    d = decide(snapshot(fresh(), jobsets=[js], pods=pods), S)
    status = d.pool("p")
    assert status is not None and status.state is PoolState.HEALTHY and "p" not in d.suspects
    assert refused(d) == {
        ("Pod", pods[0].name, "termination-time"),
        ("Pod", pods[1].name, "termination-time"),
    }


# --- pods and JobSets --------------------------------------------------------------------------------


def _waiting(unschedulable_since: float, created: float) -> Snapshot:
    low = make_jobset("low", priority=1)
    high = make_jobset("high", priority=100)
    nodes = fresh()
    pods = [
        *running_pods(low, [POOL], {"p": nodes}, started=NOW - 3000),
        *(replace(p, created=created) for p in pending_pods(high, unschedulable_since=unschedulable_since)),
    ]
    return snapshot(nodes, jobsets=[low, high], pods=pods)


def test_a_pod_unschedulable_since_before_it_existed_waits_out_the_pending_time() -> None:
    """Unschedulable "for an hour" two seconds after its creation: preempted at once."""
    snap = _waiting(NOW - 3600, NOW - 2)
    d = decide(snap, S)
    assert d.preemptions == ()
    assert refused(d) == {("Pod", snap.pods[-1].name, "unschedulable-since")}
    later = decide(replace(snap, now=NOW - 2 + S.preemption_pending_seconds), S)
    assert [p.beneficiary for p in later.preemptions] == ["default/high"]


def test_a_future_unschedulable_since_is_not_waiting_yet() -> None:
    snap = _waiting(MAX_EPOCH, 0.0)
    d = decide(snap, S)
    assert d.preemptions == ()
    assert refused(d) == {("Pod", snap.pods[-1].name, "unschedulable-since")}


def test_a_future_checkpoint_time_does_not_make_a_jobset_look_free_to_preempt() -> None:
    """With a last checkpoint in 9999 its work at risk was 0: the planner picked it over a JobSet
    that would lose less."""
    pools = (make_pool("p"), make_pool("q"))
    nodes = {p.name: make_nodes(p, ready_since=NOW - 3600) for p in pools}
    old = make_jobset("old", priority=1, running_since=NOW - 3000)
    young = make_jobset("young", priority=1, running_since=NOW - 600)
    high = make_jobset("high", priority=100)
    pods: list[Pod] = [
        *running_pods(old, [pools[0]], nodes, started=NOW - 3000),
        *running_pods(young, [pools[1]], nodes, started=NOW - 600),
        *pending_pods(high, unschedulable_since=NOW - 60),
    ]

    def victims(js: tuple[JobSet, ...]) -> list[tuple[str, ...]]:
        snap = Snapshot(NOW, pools, (*nodes["p"], *nodes["q"]), js, tuple(pods))
        return [p.victims for p in decide(snap, S).preemptions]

    assert victims((old, young, high)) == [("default/young",)]
    forged = replace(old, last_checkpoint=MAX_EPOCH)
    assert victims((forged, young, high)) == [("default/young",)]
    snap = Snapshot(NOW, pools, (*nodes["p"], *nodes["q"]), (forged, young, high), tuple(pods))
    assert refused(decide(snap, S)) == {("JobSet", "old", "last-checkpoint-time")}


def test_future_checkpoint_and_preemption_records_are_reported_by_field() -> None:
    js = make_jobset(
        "low",
        priority=1,
        annotations={
            k.CHECKPOINT_REQUESTED_AT_ANNOTATION: YEAR_9999,
            k.CHECKPOINT_COMPLETED_AT_ANNOTATION: YEAR_9999,
            k.PREEMPTED_FOR_ANNOTATION: "default/high",
            k.PREEMPTED_AT_ANNOTATION: YEAR_9999,
        },
    )
    d = decide(snapshot(fresh(), jobsets=[js]), S)
    assert refused(d) == {
        ("JobSet", "low", "checkpoint-requested-at"),
        ("JobSet", "low", "checkpoint-completed-at"),
        ("JobSet", "low", "preempted-at"),
    }
    assert all(r.value_only for r in d.rejected), "the JobSet itself is not left alone"


# --- through the adapter ----------------------------------------------------------------------------


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


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


def test_no_eviction_from_a_refused_time_alone() -> None:
    """A declared pool that is clean evicts nothing, whatever its stored clean-since says."""
    js = make_jobset("job", priority=10)
    pods = running_pods(js, [POOL], {"p": fresh()})
    d = decide(snapshot(declared({k.CLEAN_SINCE_ANNOTATION: YEAR_9999}), jobsets=[js], pods=pods), S)
    assert not any(isinstance(a, EvictPod) for a in d.actions)
