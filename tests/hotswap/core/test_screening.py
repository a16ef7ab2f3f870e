"""Screening (``core/screening.py``): hostile values and times in a snapshot.

Hostile times: every time read from the cluster is bounded by now + clock skew. Each case was a real
failure: a ``clean-since`` in 9999 kept a clean pool recovering until then; a NotReady transition in
the future kept a dead pool suspect for as long as it said; a clean-since from before the
declaration, a NotReady or ``suspect-since`` from before the nodes existed, or a pod unschedulable
since before it was created skipped the wait meant to confirm it; future flap history kept a pool
flapping forever; future tpu-errors entries crowded real reports out of the merged list.

The decision never depends on a time beyond now + clock skew (hypothesis). One cluster is drawn (a
pool with the controller's stored state and the cluster's own times on its nodes, a pool under a
maintenance notice, JobSets running, restarting and waiting), with some of its times refused: later
than now + skew by more than the run lasts (finite, or NaN and the infinities where the core takes
floats from the cluster), or, for a node's conditions and taints, earlier than the node's creation.
It is built twice with different refused values, and both run for a few passes with their actions
applied: every pass gives the same actions, pool states, preemptions, memory and refusals (by object
and field). Strings that do not parse are not refused (they count as absent), so they are not drawn
here.

Hostile values: the core screens snapshots built without the adapter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
    Taint,
    Termination,
    apply_actions,
    decide,
    format_time,
    node_dead_since,
)
from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.model import FAILED, Condition
from tpu_platform.hotswap.core.pool_health import OWN_TAINT
from tpu_platform.hotswap.core.times import CLOCK_SKEW_SECONDS, MAX_EPOCH
from tpu_platform.hotswap.core.workload_signals import MAX_REPORTS
from tpu_platform.testing.hotswap_builders import (
    fail_node,
    heal_node,
    make_jobset,
    make_nodes,
    make_pool,
    make_pools,
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
    s = S.replace(force_delete_unconfirmed=True)
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
    s = S.replace(lease_stale_seconds=20.0)
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


def test_no_eviction_from_a_refused_time_alone() -> None:
    """A declared pool that is clean evicts nothing, whatever its stored clean-since says."""
    js = make_jobset("job", priority=10)
    pods = running_pods(js, [POOL], {"p": fresh()})
    d = decide(snapshot(declared({k.CLEAN_SINCE_ANNOTATION: YEAR_9999}), jobsets=[js], pods=pods), S)
    assert not any(isinstance(a, EvictPod) for a in d.actions)


# --- no decision depends on a refused time (hypothesis) ----------------------------------------


STEPS, DT = 3, 40.0
LATE = NOW + 10_000.0
"""Refused finite times start here: beyond now + skew on every pass."""
CHIP_ERROR_PATTERN = "SLICE_FAILURE_CHIP_DRIVER_ERROR"
BASE = Settings(max_bad_node_fraction=1.0)
SETTINGS = [
    BASE,
    BASE.replace(lease_stale_seconds=20.0, force_delete_unconfirmed=True, flap_threshold=2),
]
P, Q = make_pool("p"), make_pool("q")
CREATED = NOW - 3600.0

future = st.floats(min_value=LATE, max_value=MAX_EPOCH)
refused_floats = {
    "finite": future,
    "any": st.one_of(future, st.sampled_from([float("nan"), float("inf"), float("-inf")])),
    # A node's condition or taint time: also earlier than the node's creation.
    "event": st.one_of(
        future,
        st.sampled_from([float("nan"), float("inf"), float("-inf")]),
        st.floats(min_value=0.0, max_value=CREATED - 10.0),
    ),
    "text": future.flatmap(lambda t: st.sampled_from([format_time(t), str(int(t)), f"{t:.3f}"])),
}

Choose = Callable[[st.SearchStrategy[Any]], Any]
Refuse = Callable[[str], Any]


class Replay:
    """Draws the cluster's shape once, then replays the same choices for the second build."""

    def __init__(self, draw: Callable[[st.SearchStrategy[Any]], Any]) -> None:
        self.draw = draw
        self.log: list[Any] = []
        self.at: int | None = None

    def __call__(self, strategy: st.SearchStrategy[Any]) -> Any:
        if self.at is None:
            value = self.draw(strategy)
            self.log.append(value)
            return value
        value = self.log[self.at]
        self.at += 1
        return value


def build(choose: Choose, refuse: Refuse) -> Snapshot:
    def when(valid: st.SearchStrategy[float], kind: str, *, absent: bool = True) -> Any:
        modes = ["valid", "refused", *(["absent"] if absent else [])]
        mode = choose(st.sampled_from(modes))
        return None if mode == "absent" else choose(valid) if mode == "valid" else refuse(kind)

    def stamp(valid: st.SearchStrategy[float]) -> str | None:
        mode = choose(st.sampled_from(["absent", "valid", "refused"]))
        return None if mode == "absent" else format_time(choose(valid)) if mode == "valid" else refuse("text")

    recent = st.floats(min_value=NOW - 900.0, max_value=NOW)
    state: dict[str, str] = {}
    for key in (k.UNHEALTHY_SINCE_ANNOTATION, k.SUSPECT_SINCE_ANNOTATION, k.CLEAN_SINCE_ANNOTATION):
        value = stamp(recent)
        if value is not None:
            state[key] = value
    history = [stamp(recent) for _ in range(choose(st.integers(0, 3)))]
    if any(history):
        state[k.UNHEALTHY_HISTORY_ANNOTATION] = ",".join(h for h in history if h)
    reports = []
    for i in range(choose(st.integers(0, 3))):
        at = stamp(st.floats(min_value=NOW - 300.0, max_value=NOW))
        if at is not None:
            reports.append(f"{at}/{choose(st.sampled_from(['team-a', 'team-b']))}/u-{i}")
    if reports:
        state[k.TPU_ERRORS_ANNOTATION] = " ".join(reports)
    tainted = choose(st.booleans())

    nodes: list[Node] = []
    for base in make_nodes(P, ready_since=CREATED):
        node = base
        created_ok = choose(st.booleans())
        if not created_ok:
            node = replace(node, created=refuse("any"))
        kind = "event" if created_ok else "any"
        status = choose(st.sampled_from(["True", "True", "False", "Unknown"]))
        since = when(st.floats(min_value=NOW - 60.0, max_value=NOW), kind, absent=False)
        taints = list(node.taints)
        if status != "True" and choose(st.booleans()):
            key = k.UNREACHABLE_TAINT if status == "Unknown" else k.NOT_READY_TAINT
            taints.append(Taint(key, "NoExecute", time_added=when(st.just(NOW - 30.0), kind)))
        if tainted and choose(st.booleans()):
            taints.append(OWN_TAINT)
        lease = when(st.floats(min_value=NOW - 60.0, max_value=NOW), "any")
        carries = choose(st.booleans())
        node = replace(
            node,
            conditions=(Condition("Ready", status, since),),
            taints=tuple(taints),
            annotations=dict(state) if carries else {},
            lease_renewed=lease,
        )
        nodes.append(node)
    window = NOW + BASE.maintenance_move_lead_seconds + BASE.maintenance_checkpoint_seconds / 2
    asked = window - BASE.maintenance_move_lead_seconds - BASE.maintenance_checkpoint_seconds
    q_nodes = [
        replace(n, labels={**n.labels, k.SCHEDULED_MAINTENANCE_LABEL: str(int(window))})
        for n in make_nodes(Q, ready_since=CREATED)
    ]

    low = make_jobset(
        "low",
        priority=1,
        running_since=when(st.just(NOW - 3000.0), "finite", absent=False),
        last_checkpoint=when(st.just(NOW - 600.0), "finite"),
    )
    mid_ann = {k.CHECKPOINT_REQUEST_POOLS_ANNOTATION: "q"}
    for key, valid in (
        (k.CHECKPOINT_REQUESTED_AT_ANNOTATION, st.just(asked + 1.0)),
        (k.CHECKPOINT_COMPLETED_AT_ANNOTATION, st.just(asked + 5.0)),
        (k.PREEMPTED_AT_ANNOTATION, st.just(NOW - 30.0)),
    ):
        value = stamp(valid)
        if value is not None:
            mid_ann[key] = value
    if k.PREEMPTED_AT_ANNOTATION in mid_ann:
        mid_ann[k.PREEMPTED_FOR_ANNOTATION] = "default/high"
        mid_ann[k.PREEMPTED_POOLS_ANNOTATION] = "q"
    mid = make_jobset("mid", priority=2, running_since=NOW - 900.0, annotations=mid_ann)
    high = make_jobset("high", priority=100)
    by_pool = {"p": nodes, "q": q_nodes}
    pods: list[Pod] = list(running_pods(low, [P], by_pool, started=NOW - 3000.0))
    if choose(st.booleans()):
        finished = when(st.floats(min_value=NOW - 300.0, max_value=NOW), "any", absent=False)
        pods[0] = replace(
            pods[0],
            phase=FAILED,
            terminations=(Termination("trainer", 1, "Error", CHIP_ERROR_PATTERN, finished),),
        )
    if choose(st.booleans()):
        pods[1] = replace(pods[1], deletion_timestamp=NOW - 5.0)
    pods.extend(running_pods(mid, [Q], by_pool, started=NOW - 900.0))
    waiting = when(st.floats(min_value=NOW - 60.0, max_value=NOW), "finite", absent=False)
    pods.extend(pending_pods(high, unschedulable_since=waiting))
    return Snapshot(NOW, (P, Q), (*nodes, *q_nodes), (low, mid, high), tuple(pods))


def refusals(draw: Callable[[st.SearchStrategy[Any]], Any], s: Settings) -> Refuse:
    """Every refused value, a transition earlier than the node's creation among them (the NotReady
    timer reads ``node_dead_since`` with ``now``, which refuses it)."""
    return lambda kind: draw(refused_floats[kind])


def same(a: Decision, b: Decision) -> None:
    assert a.actions == b.actions
    assert a.pools == b.pools
    assert a.preemptions == b.preemptions
    assert a.memory == b.memory
    assert (a.held, a.suspects) == (b.held, b.suspects)
    assert {(r.kind, r.name, r.reason) for r in a.rejected} == {
        (r.kind, r.name, r.reason) for r in b.rejected
    }


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.sampled_from(SETTINGS))
def test_no_decision_depends_on_a_time_beyond_now_plus_skew(data: st.DataObject, s: Settings) -> None:
    shape = Replay(data.draw)
    one = build(shape, refusals(data.draw, s))
    shape.at = 0
    other = build(shape, refusals(data.draw, s))
    da, db = decide(one, s), decide(other, s)
    for step in range(STEPS):
        same(da, db)
        now = NOW + (step + 1) * DT
        one = replace(apply_actions(one, da.actions), now=now)
        other = replace(apply_actions(other, db.actions), now=now)
        da, db = decide(one, s, memory=da.memory), decide(other, s, memory=db.memory)
    same(da, db)


# --- the core screens snapshots built without the adapter ----------------------------------------


HIGH, LOW = 2_000_000, 1_000_000


def test_the_core_refuses_non_finite_and_unbounded_values_from_any_snapshot() -> None:
    pools = make_pools("p", 2)
    nodes = {p.name: make_nodes(p, ready_since=NOW - 9000) for p in pools}
    nodes["p-0"] = (fail_node(nodes["p-0"][0], NOW - 60), *nodes["p-0"][1:])
    high = make_jobset("high", priority=HIGH)
    for bad in (
        {"checkpoint_interval": float("nan")},
        {"checkpoint_interval": float("inf")},
        {"last_checkpoint": float("nan")},
        {"running_since": float("-inf")},
        {"topology": "4" * 400 + "x4"},
        {"slices": 10**12},
        {"priority": 2**80},
    ):
        low = replace(make_jobset("low", priority=LOW), **bad)
        pods = [
            *running_pods(replace(low, topology="4x4"), [pools[1]], nodes, started=NOW - 3000),
            *pending_pods(high, unschedulable_since=NOW - 60),
        ]
        snap = Snapshot(NOW, pools, tuple(n for p in pools for n in nodes[p.name]), (low, high), tuple(pods))
        d = decide(snap)
        assert ("JobSet", "low") in [(r.kind, r.name) for r in d.rejected], bad
        assert all(r.name.startswith("low") for r in d.rejected), bad
        assert d.preemptions == (), bad
        status = d.pool("p-0")
        assert status is not None and status.declared_now, bad
