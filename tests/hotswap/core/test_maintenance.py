"""Maintenance-aware moves (``core/maintenance.py``): a checkpoint is asked for before GKE's scheduled
maintenance window, the work moves once it is written or at the deadline, and the slice stays free
until the maintenance is over.

GKE's signal, as documented: the node label ``cloud.google.com/scheduled-maintenance-time`` holds the
window start as Unix epoch seconds
(https://cloud.google.com/kubernetes-engine/docs/how-to/view-maintenance-events), with seven days'
notice for SCHEDULED maintenance (https://cloud.google.com/tpu/docs/view-maintenance-notifications);
``cloud.google.com/active-node-maintenance=ONGOING`` once it runs
(https://cloud.google.com/kubernetes-engine/docs/concepts/handle-disruption-gpu-tpu).
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from tpu_platform.hotswap.core import (
    AnnotateJobSet,
    EvictionCause,
    EvictPod,
    Node,
    PatchNode,
    Settings,
    Snapshot,
    apply_actions,
    decide,
)
from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.index import ClusterIndex
from tpu_platform.hotswap.core.maintenance import (
    MOVE_REASON,
    Answer,
    avoided_pools,
    moving_pools,
    next_wake,
    plan_maintenance,
    pool_windows,
    read_answer,
)
from tpu_platform.hotswap.core.times import format_time
from tpu_platform.testing.hotswap_builders import (
    make_jobset,
    make_nodes,
    make_pools,
    pending_pods,
    running_pods,
)

DAY = 86400.0
W = 1_900_000_000.0
"""Window start (2030-03-17T17:46:40Z)."""
S = Settings()
REQUEST = W - S.maintenance_move_lead_seconds - S.maintenance_checkpoint_seconds
DEADLINE = W - S.maintenance_move_lead_seconds


def labelled(node: Node, window: float) -> Node:
    """The node as GKE labels it with a scheduled maintenance window (epoch seconds)."""
    return replace(node, labels={**node.labels, k.SCHEDULED_MAINTENANCE_LABEL: f"{window:.0f}"})


def world(
    now: float, *, window: float | None = W, low: bool = True, high_annotations: dict[str, str] | None = None
) -> Snapshot:
    """Three 4x4 pools: ``high`` on p-0 (which carries the maintenance label); with ``low``, ``low`` and
    ``low2`` hold p-1 and p-2, so a move needs a preemption."""
    pools = make_pools("p", 3)
    nodes = {p.name: list(make_nodes(p, ready_since=W - 30 * DAY)) for p in pools}
    if window is not None:
        nodes["p-0"] = [
            replace(n, labels={**n.labels, k.SCHEDULED_MAINTENANCE_LABEL: f"{window:.0f}"})
            for n in nodes["p-0"]
        ]
    high = make_jobset("high", priority=2000, annotations=high_annotations or {})
    lows = [make_jobset("low", priority=1000), make_jobset("low2", priority=1000)]
    pods = list(running_pods(high, [pools[0]], nodes, started=W - 10 * DAY))
    jobsets = [high]
    if low:
        jobsets += lows
        pods += running_pods(lows[0], [pools[1]], nodes, started=W - DAY)
        pods += running_pods(lows[1], [pools[2]], nodes, started=W - 2 * DAY)
    return Snapshot(
        now=now,
        pools=pools,
        nodes=tuple(n for p in pools for n in nodes[p.name]),
        jobsets=tuple(jobsets),
        pods=tuple(pods),
    )


def annotations_of(actions: tuple[object, ...], name: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for a in actions:
        if isinstance(a, AnnotateJobSet) and a.name == name:
            out.update(dict(a.annotations))
    return out


def answered(snap: Snapshot, at: float, *, name: str = "high") -> Snapshot:
    jobsets = tuple(
        replace(js, annotations={**js.annotations, k.CHECKPOINT_COMPLETED_AT_ANNOTATION: format_time(at)})
        if js.name == name
        else js
        for js in snap.jobsets
    )
    return replace(snap, jobsets=jobsets)


def test_nothing_before_the_request_time() -> None:
    d = decide(world(REQUEST - 1))
    assert d.actions == ()
    assert next_wake(world(REQUEST - 1).nodes, S, REQUEST - 1) == REQUEST


def test_the_request_names_the_deadline_and_pool_and_is_idempotent() -> None:
    snap = world(REQUEST + 5)
    d = decide(snap)
    ann = annotations_of(d.actions, "high")
    assert ann[k.CHECKPOINT_REQUESTED_AT_ANNOTATION] == format_time(REQUEST + 5)
    assert ann[k.CHECKPOINT_DEADLINE_ANNOTATION] == format_time(DEADLINE)
    assert ann[k.CHECKPOINT_REQUEST_POOLS_ANNOTATION] == "p-0"
    assert not any(isinstance(a, PatchNode | EvictPod) for a in d.actions), "no move before an answer"
    assert not annotations_of(d.actions, "low"), "only JobSets on the maintenance-bound pool are asked"
    after = apply_actions(snap, d.actions)
    assert decide(after).actions == ()
    assert decide(replace(after, now=DEADLINE - 1)).actions == (), "waiting for the answer"


def test_the_answer_moves_the_work_through_fail_fast() -> None:
    snap = world(REQUEST + 5)
    asked = apply_actions(snap, decide(snap).actions)
    done = answered(replace(asked, now=REQUEST + 65), REQUEST + 60)
    d = decide(done)
    evicted = {a.name for a in d.actions if isinstance(a, EvictPod)}
    assert evicted == {f"high-slice-0-{i}" for i in range(4)}
    assert all(a.cause is EvictionCause.FAIL_FAST for a in d.actions if isinstance(a, EvictPod))
    tainted = {a.node for a in d.actions if isinstance(a, PatchNode) and a.add_taints}
    assert tainted == {f"p-0-n{i}" for i in range(4)}
    status = d.pool("p-0")
    assert status is not None and status.declared_now
    assert moving_pools(d.pools) == {"p-0"}
    assert any(p.reason.startswith(MOVE_REASON) for p in status.problems)
    moved = apply_actions(done, d.actions)
    assert decide(moved).actions == ()


def test_the_deadline_moves_work_that_never_answers() -> None:
    snap = world(REQUEST + 5)
    asked = apply_actions(snap, decide(snap).actions)
    assert not any(isinstance(a, EvictPod) for a in decide(replace(asked, now=DEADLINE - 0.5)).actions)
    d = decide(replace(asked, now=DEADLINE))
    assert {a.name for a in d.actions if isinstance(a, EvictPod)} == {f"high-slice-0-{i}" for i in range(4)}


def test_a_late_notice_requests_and_moves_in_one_pass() -> None:
    snap = world(W - 60)
    d = decide(snap)
    assert annotations_of(d.actions, "high")[k.CHECKPOINT_REQUESTED_AT_ANNOTATION] == format_time(W - 60)
    assert any(isinstance(a, EvictPod) for a in d.actions)
    assert decide(apply_actions(snap, d.actions)).actions == ()


def test_the_slice_stays_free_until_the_window_after_the_move() -> None:
    """Once the pods are gone the pool has no occupant; it stays declared (tainted) all the same."""
    snap = world(REQUEST + 5)
    asked = apply_actions(snap, decide(snap).actions)
    done = answered(replace(asked, now=REQUEST + 65), REQUEST + 60)
    moved = apply_actions(done, decide(done).actions)
    gone = replace(moved, pods=tuple(p for p in moved.pods if p.jobset != "default/high"), now=REQUEST + 400)
    d = decide(gone)
    assert d.actions == ()
    status = d.pool("p-0")
    assert status is not None and status.declared


def test_a_forged_or_stale_answer_is_ignored() -> None:
    snap = world(REQUEST + 5)
    asked = apply_actions(snap, decide(snap).actions)
    for bad in ("2100-01-01T00:00:00Z", format_time(REQUEST - 100), "yesterday", "nan", "9" * 80):
        forged = replace(
            asked,
            now=REQUEST + 65,
            jobsets=tuple(
                replace(js, annotations={**js.annotations, k.CHECKPOINT_COMPLETED_AT_ANNOTATION: bad})
                for js in asked.jobsets
            ),
        )
        d = decide(forged)
        assert not any(isinstance(a, EvictPod) for a in d.actions), bad


def test_a_request_for_an_earlier_window_is_made_again() -> None:
    old = {
        k.CHECKPOINT_REQUEST_POOLS_ANNOTATION: "p-0",
        k.CHECKPOINT_REQUESTED_AT_ANNOTATION: format_time(W - 20 * DAY),
        k.CHECKPOINT_COMPLETED_AT_ANNOTATION: format_time(W - 20 * DAY + 60),
    }
    d = decide(world(REQUEST + 5, high_annotations=old))
    assert annotations_of(d.actions, "high")[k.CHECKPOINT_REQUESTED_AT_ANNOTATION] == format_time(REQUEST + 5)
    assert not any(isinstance(a, EvictPod) for a in d.actions), "an old answer moves nothing"


def test_an_answer_for_another_pool_does_not_move_the_work_again() -> None:
    """Moved onto a slice whose own window is near, the JobSet is asked again: the answer it gave for
    the slice it left is not a checkpoint for this one."""
    elsewhere = {
        k.CHECKPOINT_REQUESTED_AT_ANNOTATION: format_time(REQUEST + 1),
        k.CHECKPOINT_REQUEST_POOLS_ANNOTATION: "p-9",
        k.CHECKPOINT_COMPLETED_AT_ANNOTATION: format_time(REQUEST + 2),
    }
    d = decide(world(REQUEST + 5, high_annotations=elsewhere))
    assert annotations_of(d.actions, "high")[k.CHECKPOINT_REQUEST_POOLS_ANNOTATION] == "p-0"
    assert not any(isinstance(a, EvictPod) for a in d.actions)


def test_a_jobset_on_two_slices_with_windows_asked_at_different_times_settles() -> None:
    """The second slice's request names both slices, so neither request undoes the other."""
    pools = make_pools("p", 3)
    nodes = {p.name: list(make_nodes(p, ready_since=0.0)) for p in pools}
    nodes["p-0"] = [labelled(n, W) for n in nodes["p-0"]]
    nodes["p-1"] = [labelled(n, W + 400) for n in nodes["p-1"]]
    js = make_jobset("wide", priority=2000, slices=2)
    pods = running_pods(js, pools[:2], nodes, started=0.0)
    snap = Snapshot(REQUEST + 5, pools, tuple(n for p in pools for n in nodes[p.name]), (js,), pods)
    first = apply_actions(snap, decide(snap).actions)
    assert annotations_of(decide(snap).actions, "wide")[k.CHECKPOINT_REQUEST_POOLS_ANNOTATION] == "p-0"
    later = replace(first, now=REQUEST + 405)
    d = decide(later)
    assert annotations_of(d.actions, "wide")[k.CHECKPOINT_REQUEST_POOLS_ANNOTATION] == "p-0,p-1"
    settled = apply_actions(later, d.actions)
    assert decide(settled).actions == ()
    assert decide(replace(settled, now=REQUEST + 500)).actions == ()


def test_off_means_the_window_itself_is_the_signal() -> None:
    off = Settings(maintenance_moves=False)
    assert decide(world(REQUEST + 5), off).actions == ()
    assert decide(world(W + 20), off).pool("p-0").declared  # type: ignore[union-attr]


def test_no_victim_on_a_slice_about_to_be_maintained() -> None:
    """A beneficiary waiting for a slice does not get one whose window is less than the avoid time away."""
    pools = make_pools("p", 2)
    nodes = {p.name: list(make_nodes(p, ready_since=0.0)) for p in pools}
    now = W - 1800
    nodes["p-0"] = [
        replace(n, labels={**n.labels, k.SCHEDULED_MAINTENANCE_LABEL: f"{W:.0f}"}) for n in nodes["p-0"]
    ]
    high = make_jobset("high", priority=2000)
    lows = [make_jobset("low-a", priority=1000), make_jobset("low-b", priority=1000)]
    pods = (
        *running_pods(lows[0], [pools[0]], nodes, started=now - 60),
        *running_pods(lows[1], [pools[1]], nodes, started=now - 3000),
        *pending_pods(high, unschedulable_since=now - 30),
    )
    snap = Snapshot(now, pools, tuple(n for p in pools for n in nodes[p.name]), (high, *lows), pods)
    off = Settings(maintenance_moves=False)
    assert decide(snap, off).preemptions[0].victims == ("default/low-a",), "least work lost"
    d = decide(snap)
    assert [p.victims for p in d.preemptions] == [("default/low-b",)]


def test_pool_windows_hold_only_labelled_pools_and_serve_both_readers() -> None:
    """The windows are read once per reconcile: only p-0 has a notice (an unparsable label on p-1
    counts as none), and the victim choice reads the same answer from the plan as on its own."""
    snap = world(W - 1800)
    nodes = [
        replace(n, labels={**n.labels, k.SCHEDULED_MAINTENANCE_LABEL: "soon"}) if n.pool == "p-1" else n
        for n in snap.nodes
    ]
    snap = replace(snap, nodes=tuple(nodes))
    s = Settings()
    idx = ClusterIndex(snap, s)
    assert pool_windows(idx) == {"p-0": W}
    plan = plan_maintenance(idx, s, snap.now)
    assert plan.windows == {"p-0": W}
    assert avoided_pools(idx, s, snap.now, windows=plan.windows) == avoided_pools(idx, s, snap.now)
    assert avoided_pools(idx, s, snap.now) == frozenset({"p-0"})
    assert plan_maintenance(idx, Settings(maintenance_moves=False), snap.now).windows == {}


@settings(max_examples=150, deadline=None)
@given(
    offset=st.floats(min_value=-3 * DAY, max_value=3 * DAY, allow_nan=False),
    answer=st.one_of(st.none(), st.floats(min_value=-2000, max_value=2000), st.text(max_size=70)),
    label=st.one_of(st.just(f"{W:.0f}"), st.text(max_size=70)),
)
def test_any_time_any_answer_any_label_is_idempotent(
    offset: float, answer: float | str | None, label: str
) -> None:
    """Hostile labels and answers never crash a decision, and every decision is a fixpoint."""
    snap = world(W + offset)
    nodes = tuple(
        replace(n, labels={**n.labels, k.SCHEDULED_MAINTENANCE_LABEL: label}) if n.pool == "p-0" else n
        for n in snap.nodes
    )
    snap = replace(snap, nodes=nodes)
    first = apply_actions(snap, decide(snap).actions)
    if answer is not None:
        text = answer if isinstance(answer, str) else format_time(min(max(W + offset + answer, 0.0), 2e11))
        first = replace(
            first,
            jobsets=tuple(
                replace(js, annotations={**js.annotations, k.CHECKPOINT_COMPLETED_AT_ANNOTATION: text})
                for js in first.jobsets
            ),
        )
    d = decide(first)
    assert decide(apply_actions(first, d.actions)).actions == ()


def test_read_answer_bounds() -> None:
    js = make_jobset(
        "x",
        priority=1,
        annotations={
            k.CHECKPOINT_REQUEST_POOLS_ANNOTATION: "a,b",
            k.CHECKPOINT_REQUESTED_AT_ANNOTATION: format_time(100.0),
            k.CHECKPOINT_COMPLETED_AT_ANNOTATION: format_time(99.0),
        },
    )
    assert read_answer(js, 100.0, 200.0).completed == 99.0, "within clock skew of the request"
    assert read_answer(js, 101.0, 200.0).requested is None, "made before this window's request time"
    later = replace(
        js, annotations={**js.annotations, k.CHECKPOINT_COMPLETED_AT_ANNOTATION: format_time(150.0)}
    )
    assert read_answer(later, 100.0, 120.0) == Answer(100.0, None), "answer in the future"
    assert read_answer(later, 100.0, 149.0).completed == 150.0, "within clock skew of now"
    assert read_answer(js, 100.0, 200.0, "b").completed == 99.0
    assert read_answer(js, 100.0, 200.0, "c") == Answer(None, None), "asked for other pools"
