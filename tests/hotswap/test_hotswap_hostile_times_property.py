"""The decision never depends on a time beyond now + clock skew (hypothesis).

One cluster is drawn (a pool with the controller's stored state and the cluster's own times on its
nodes, a pool under a maintenance notice, JobSets running, restarting and waiting), with some of its
times refused: later than now + skew by more than the run lasts (finite, or NaN and the infinities
where the core takes floats from the cluster), or, for a node's conditions and taints, earlier than
the node's creation. It is built twice with different refused values, and both run for a few passes
with their actions applied: every pass gives the same actions, pool states, preemptions, memory and
refusals (by object and field). Strings that do not parse are not refused (they count as absent),
so they are not drawn here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tpu_platform.hotswap.core import (
    Decision,
    Node,
    Pod,
    Settings,
    Snapshot,
    Taint,
    Termination,
    apply_actions,
    decide,
    format_time,
)
from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.health import OWN_TAINT
from tpu_platform.hotswap.core.model import FAILED, Condition
from tpu_platform.hotswap.core.timeutil import MAX_EPOCH
from tpu_platform.testing.hotswap_builders import (
    make_jobset,
    make_nodes,
    make_pool,
    pending_pods,
    running_pods,
)

NOW = 1_000_000.0
STEPS, DT = 3, 40.0
LATE = NOW + 10_000.0
"""Refused finite times start here: beyond now + skew on every pass."""
CHIP_ERROR = "SLICE_FAILURE_CHIP_DRIVER_ERROR"
BASE = Settings(max_bad_node_fraction=1.0)
SETTINGS = [
    BASE,
    replace(BASE, lease_stale_seconds=20.0, force_delete_unconfirmed=True, flap_threshold=2),
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
            pods[0], phase=FAILED, terminations=(Termination("trainer", 1, "Error", CHIP_ERROR, finished),)
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
