"""Whole-slice preemption (``core/preemption.py``): victim choice and order, the planner's safety
rules, and the preemption record read back, on hand-built snapshots.

Victim order is lowest priority first, then least work lost, then fewest victims, then fewest slices.
kube-scheduler (kubernetes/kubernetes ``pkg/scheduler/framework/preemption/preemption.go``,
``pickOneNodeForPreemption``: after the fewest PDB violations, the node whose highest-priority victim
has the lowest priority; design: kubernetes/design-proposals-archive ``scheduling/pod-preemption.md``,
"Preemption order") and Kueue (https://kueue.sigs.k8s.io/docs/concepts/preemption/: lower-priority
workloads are preempted first) both take the lowest priority first; the planner does the same with
whole JobSets.

Forged preemption records: each case was a real failure, a record written by a tenant that switched
off preemption for a pool or made the controller take a third team's JobSet.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tpu_platform.hotswap.core import (
    AnnotateJobSet,
    Candidate,
    EvictionCause,
    EvictPod,
    JobSet,
    Pod,
    Preemption,
    Settings,
    Snapshot,
    apply_actions,
    constants,
    decide,
    format_time,
    select_victims,
    work_lost_seconds,
)
from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.pool_health import OWN_TAINT
from tpu_platform.hotswap.core.preemption import VictimQueue, set_rank
from tpu_platform.testing.hotswap_builders import (
    make_jobset,
    make_nodes,
    make_pools,
    pending_pods,
    running_pods,
)

NOW = 100_000.0
HIGH = 2_000_000
LOW = 1_000_000


def cluster(
    n_pools: int,
    running: Sequence[tuple[JobSet, Sequence[int]]],
    pending: Sequence[JobSet] = (),
    *,
    extra_pods: Sequence[Pod] = (),
    pending_for: float = 30.0,
    topology: str = "4x4",
) -> Snapshot:
    pools = make_pools("p", n_pools, topology)
    nodes = {p.name: make_nodes(p, ready_since=NOW - 7200) for p in pools}
    pods: list[Pod] = []
    for js, idxs in running:
        pods.extend(running_pods(js, [pools[i] for i in idxs], nodes, started=NOW - 3600))
    for js in pending:
        pods.extend(pending_pods(js, unschedulable_since=NOW - pending_for))
    pods.extend(extra_pods)
    return Snapshot(
        now=NOW,
        pools=pools,
        nodes=tuple(n for p in pools for n in nodes[p.name]),
        jobsets=tuple([js for js, _ in running] + list(pending)),
        pods=tuple(pods),
    )


def victims(snap: Snapshot, settings: Settings | None = None) -> list[tuple[str, ...]]:
    return [p.victims for p in decide(snap, settings).preemptions]


def test_picks_the_victim_that_loses_the_least_work() -> None:
    fresh = make_jobset("fresh-ckpt", priority=LOW, last_checkpoint=NOW - 60)
    stale = make_jobset("stale-ckpt", priority=LOW, last_checkpoint=NOW - 3000)
    high = make_jobset("high", priority=HIGH)
    d = decide(cluster(2, [(fresh, [0]), (stale, [1])], [high]))
    assert [p.victims for p in d.preemptions] == [("default/fresh-ckpt",)]
    assert d.preemptions[0].work_lost == 16 * 60


def test_work_lost_estimates() -> None:
    js = make_jobset("j", priority=1, running_since=1000.0, created=500.0)
    assert work_lost_seconds(js, 1600.0) == 600.0
    assert work_lost_seconds(replace(js, last_checkpoint=1500.0), 1600.0) == 100.0
    assert work_lost_seconds(replace(js, last_checkpoint=900.0), 1600.0) == 600.0, "checkpoint of an old run"
    assert work_lost_seconds(replace(js, checkpoint_interval=250.0), 1600.0) == 100.0
    assert work_lost_seconds(replace(js, running_since=None), 1600.0) == 1100.0


def test_fewest_victims_when_work_lost_ties() -> None:
    cands = [
        Candidate("a/one", 1, 100, ("p1",), ()),
        Candidate("a/two", 1, 100, ("p2",), ()),
        Candidate("a/both", 1, 200, ("p3", "p4"), ()),
    ]
    chosen = select_victims(cands, 2)
    assert chosen is not None
    assert [c.key for c in chosen] == ["a/both"]


def test_cheaper_pair_beats_expensive_multi_slice_victim() -> None:
    cands = [
        Candidate("a/one", 1, 10, ("p1",), ()),
        Candidate("a/two", 1, 10, ("p2",), ()),
        Candidate("a/big", 1, 500, ("p3", "p4"), ()),
    ]
    chosen = select_victims(cands, 2)
    assert chosen is not None
    assert sorted(c.key for c in chosen) == ["a/one", "a/two"]


def test_selection_is_minimal_and_all_or_nothing() -> None:
    cands = [Candidate("a/x", 1, 0, ("p1",), ()), Candidate("a/y", 1, 5, ("p2", "p3"), ())]
    chosen = select_victims(cands, 1)
    assert chosen is not None and [c.key for c in chosen] == ["a/x"]
    assert select_victims(cands, 4) is None
    assert select_victims([], 1) is None
    assert select_victims(cands, 0) == ()


def test_multi_slice_victim_frees_all_its_slices_and_every_pod_is_evicted() -> None:
    low = make_jobset("low", priority=LOW, slices=2)
    high = make_jobset("high", priority=HIGH, slices=2)
    d = decide(cluster(2, [(low, [0, 1])], [high]))
    assert [(p.victims, p.pools) for p in d.preemptions] == [(("default/low",), ("p-0", "p-1"))]
    evicted = {a.name for a in d.actions if isinstance(a, EvictPod)}
    assert evicted == {f"low-slice-{s}-{i}" for s in range(2) for i in range(4)}


def test_only_as_many_victims_as_slices_needed() -> None:
    lows = [make_jobset(f"low-{i}", priority=LOW) for i in range(4)]
    high = make_jobset("high", priority=HIGH, slices=2)
    d = decide(cluster(4, [(js, [i]) for i, js in enumerate(lows)], [high]))
    assert len(d.preemptions) == 1 and len(d.preemptions[0].victims) == 2


def test_not_enough_victims_means_no_preemption_at_all() -> None:
    low = make_jobset("low", priority=LOW)
    peer = make_jobset("peer", priority=HIGH)
    high = make_jobset("high", priority=HIGH, slices=2)
    d = decide(cluster(2, [(low, [0]), (peer, [1])], [high]))
    assert d.preemptions == () and d.actions == ()


def test_free_pool_means_no_preemption() -> None:
    low = make_jobset("low", priority=LOW)
    high = make_jobset("high", priority=HIGH)
    d = decide(cluster(2, [(low, [0])], [high]))
    assert d.actions == ()
    assert any("free" in n for n in d.notes)


def test_free_pool_covers_part_of_the_need_only() -> None:
    lows = [make_jobset(f"low-{i}", priority=LOW) for i in range(2)]
    high = make_jobset("high", priority=HIGH, slices=2)
    d = decide(cluster(3, [(lows[0], [0]), (lows[1], [1])], [high]))
    assert len(d.preemptions) == 1 and d.preemptions[0].slices_needed == 1


def test_nothing_while_kube_scheduler_nominates() -> None:
    low = make_jobset("low", priority=LOW)
    high = make_jobset("high", priority=HIGH)
    snap = cluster(1, [(low, [0])], [high])
    pods = tuple(replace(p, nominated_node="p-0-n0") if p.jobset == high.key else p for p in snap.pods)
    d = decide(replace(snap, pods=pods))
    assert d.actions == ()
    assert any("kube-scheduler" in n for n in d.notes)


def test_waits_for_kube_scheduler_first() -> None:
    low = make_jobset("low", priority=LOW)
    high = make_jobset("high", priority=HIGH)
    assert victims(cluster(1, [(low, [0])], [high], pending_for=5.0)) == []
    assert victims(cluster(1, [(low, [0])], [high], pending_for=10.0)) == [("default/low",)]


OPT_OUT = Settings(opt_out_namespaces=("default",))
"""The stack lets the ``default`` namespace opt out of being preempted."""


def test_unmanaged_and_opted_out_jobsets_are_never_victims() -> None:
    unmanaged = make_jobset("unmanaged", priority=1, managed=False)
    keep = make_jobset("keep", priority=2, preemptible=False)
    low = make_jobset("low", priority=LOW)
    high = make_jobset("high", priority=HIGH)
    snap = cluster(3, [(unmanaged, [0]), (keep, [1]), (low, [2])], [high])
    assert victims(snap, OPT_OUT) == [("default/low",)]
    snap2 = cluster(2, [(unmanaged, [0]), (keep, [1])], [high])
    assert decide(snap2, OPT_OUT).actions == ()


def test_opting_out_is_ignored_where_the_stack_does_not_allow_it() -> None:
    """Without the stack's grant, preemptible: "false" does not make a managed JobSet untouchable
    while it can still take preemptions for itself."""
    keep = make_jobset("keep", priority=2, preemptible=False)
    low = make_jobset("low", priority=LOW)
    high = make_jobset("high", priority=HIGH)
    snap = cluster(2, [(keep, [0]), (low, [1])], [high])
    assert victims(snap) == [("default/keep",)]
    assert victims(snap, Settings(opt_out_namespaces=("team-b",))) == [("default/keep",)]
    assert victims(snap, OPT_OUT) == [("default/low",)]


def test_unmanaged_pending_jobset_is_no_beneficiary() -> None:
    low = make_jobset("low", priority=LOW)
    high = make_jobset("high", priority=HIGH, managed=False)
    assert decide(cluster(1, [(low, [0])], [high])).actions == ()


def test_restart_budget_is_protected_unless_disruptions_are_ignored() -> None:
    spent = make_jobset("spent", priority=LOW, max_restarts=3, restarts=3)
    high = make_jobset("high", priority=HIGH)
    assert victims(cluster(1, [(spent, [0])], [high])) == []
    tolerant = replace(spent, disruption_ignores_max_restarts=True)
    assert victims(cluster(1, [(tolerant, [0])], [high])) == [("default/spent",)]
    assert victims(cluster(1, [(spent, [0])], [high]), Settings(protect_restart_budget=False)) == [
        ("default/spent",)
    ]


def test_victim_shared_pool_is_not_counted_as_freed() -> None:
    low = make_jobset("low", priority=LOW)
    other = make_jobset("other", priority=LOW, managed=False)
    high = make_jobset("high", priority=HIGH)
    snap = cluster(1, [(low, [0])], [high])
    intruder = Pod("default", "intruder", "uid-i", jobset=other.key, job="x", node="p-0-n3", phase="Running")
    snap = replace(snap, pods=(*snap.pods, intruder), jobsets=(*snap.jobsets, other))
    assert decide(snap).actions == ()


def test_suspended_jobsets_are_kueues_business() -> None:
    low = make_jobset("low", priority=LOW)
    high = make_jobset("high", priority=HIGH, suspended=True)
    assert decide(cluster(1, [(low, [0])], [high])).actions == ()


def test_preemption_records_why_and_when_on_the_victim() -> None:
    low = make_jobset("low", priority=LOW, annotations={constants.PREEMPTION_COUNT_ANNOTATION: "2"})
    high = make_jobset("high", priority=HIGH)
    d = decide(cluster(1, [(low, [0])], [high]))
    (note,) = [a for a in d.actions if isinstance(a, AnnotateJobSet)]
    ann = dict(note.annotations)
    assert (note.namespace, note.name, note.uid) == ("default", "low", low.uid)
    assert ann[constants.PREEMPTED_FOR_ANNOTATION] == "default/high"
    assert ann[constants.PREEMPTED_AT_ANNOTATION] == format_time(NOW)
    assert ann[constants.PREEMPTED_POOLS_ANNOTATION] == "p-0"
    assert ann[constants.PREEMPTION_COUNT_ANNOTATION] == "3"
    assert "priority 2000000 > 1000000" in ann[constants.PREEMPTION_REASON_ANNOTATION]
    evictions = [a for a in d.actions if isinstance(a, EvictPod)]
    assert len(evictions) == 4 and all(a.cause is EvictionCause.PREEMPTION for a in evictions)
    assert d.actions.index(note) < d.actions.index(evictions[0]), "the record is written before evicting"


def test_refused_evictions_are_retried_without_picking_another_victim() -> None:
    low = make_jobset("low", priority=LOW)
    other = make_jobset("other", priority=LOW)
    high = make_jobset("high", priority=HIGH)
    snap = cluster(2, [(low, [0]), (other, [1])], [high])
    d = decide(snap)
    (victim,) = d.preemptions[0].victims
    # Apply only the annotation, as if every eviction had been refused by a PDB.
    after = apply_actions(snap, [a for a in d.actions if isinstance(a, AnnotateJobSet)])
    retry = decide(after)
    assert retry.preemptions == ()
    assert not any(isinstance(a, AnnotateJobSet) for a in retry.actions)
    assert {a.jobset for a in retry.actions if isinstance(a, EvictPod)} == {victim}


def test_victims_restarted_pods_on_the_reserved_pool_are_left_alone_during_settle() -> None:
    low = make_jobset("low", priority=LOW)
    high = make_jobset("high", priority=HIGH)
    marked = replace(
        low,
        annotations={
            **low.annotations,
            constants.PREEMPTED_FOR_ANNOTATION: "default/high",
            constants.PREEMPTED_AT_ANNOTATION: format_time(NOW - 30),
            constants.PREEMPTED_POOLS_ANNOTATION: "p-0",
        },
    )
    snap = cluster(1, [(marked, [0])], [high])
    snap = replace(
        snap, pods=tuple(replace(p, created=NOW - 5) if p.jobset == low.key else p for p in snap.pods)
    )
    assert decide(snap).actions == ()
    later = replace(snap, now=NOW + 200)
    assert [p.victims for p in decide(later).preemptions] == [("default/low",)]


def test_own_restart_on_healthy_pools_preempts_nobody() -> None:
    """A software crash restarts the JobSet in place: its old pods drain and free its own pools."""
    low = make_jobset("low", priority=LOW)
    high = make_jobset("high", priority=HIGH)
    snap = cluster(2, [(high, [0]), (low, [1])])
    pods = tuple(replace(p, deletion_timestamp=NOW - 5) if p.jobset == high.key else p for p in snap.pods)
    pods += pending_pods(high, unschedulable_since=NOW - 30, attempt=2)
    assert decide(replace(snap, pods=pods)).actions == ()


@pytest.mark.parametrize("settings", [Settings(preemption=False)])
def test_preemption_can_be_switched_off(settings: Settings) -> None:
    low = make_jobset("low", priority=LOW)
    high = make_jobset("high", priority=HIGH)
    assert decide(cluster(1, [(low, [0])], [high]), settings).actions == ()


def test_a_pool_about_to_recover_is_waited_for() -> None:
    low = make_jobset("low", priority=LOW)
    high = make_jobset("high", priority=HIGH)
    snap = cluster(2, [(low, [1])], [high])

    def recovering(clean_for: float) -> Snapshot:
        state = {
            constants.UNHEALTHY_SINCE_ANNOTATION: format_time(NOW - 600),
            constants.CLEAN_SINCE_ANNOTATION: format_time(NOW - clean_for),
            constants.UNHEALTHY_REASON_ANNOTATION: "p-0-n1: Ready=Unknown",
        }
        nodes = tuple(
            replace(n, taints=(*n.taints, OWN_TAINT), annotations=state) if n.pool == "p-0" else n
            for n in snap.nodes
        )
        return replace(snap, nodes=nodes)

    soon = decide(recovering(115))
    status = soon.pool("p-0")
    assert status is not None and status.recovers_at == NOW + 5
    assert soon.preemptions == () and soon.actions == ()
    assert victims(recovering(60)) == [("default/low",)]


def half_placed(
    blocker: JobSet, *, bound: int = 3, pending_for: float = 100.0, pools: int = 1, high: JobSet | None = None
) -> Snapshot:
    """``high``'s slice 0 has ``bound`` pods on p-0 and the rest unschedulable; ``blocker``'s leader
    holds the last node of p-0 (exclusive placement is per priority, so the scheduler allowed it)."""
    hi = high or make_jobset("high", priority=HIGH)
    snap = cluster(pools, [])
    nodes = [n for n in snap.nodes if n.pool == "p-0"]
    hi_pods = running_pods(hi, [make_pools("p", 1)[0]], {"p-0": nodes[:bound]}, started=NOW - 300)
    follower = pending_pods(hi, unschedulable_since=NOW - pending_for, slices=[0], pods_per_slice=4)[bound:]
    leader = Pod(
        blocker.namespace,
        f"{blocker.name}-slice-0-0",
        f"uid-{blocker.name}-leader",
        jobset=blocker.key,
        job=f"{blocker.name}-slice-0",
        node=nodes[-1].name,
        phase="Running",
        priority=blocker.priority,
        created=NOW - 200,
        started=NOW - 200,
    )
    return replace(snap, jobsets=(hi, blocker), pods=(*hi_pods, *follower, leader))


def test_half_placed_job_gets_the_node_a_lower_priority_leader_holds() -> None:
    low = make_jobset("low", priority=LOW)
    snap = half_placed(low)
    d = decide(snap)
    assert [(p.beneficiary, p.victims, p.pools, p.cleared_pools) for p in d.preemptions] == [
        ("default/high", ("default/low",), ("p-0",), ("p-0",))
    ]
    assert [a.name for a in d.actions if isinstance(a, EvictPod)] == ["low-slice-0-0"]
    (note,) = [a for a in d.actions if isinstance(a, AnnotateJobSet)]
    ann = dict(note.annotations)
    assert (note.name, ann[constants.PREEMPTED_FOR_ANNOTATION]) == ("low", "default/high")
    assert ann[constants.PREEMPTED_POOLS_ANNOTATION] == "p-0"
    assert "partly placed" in ann[constants.PREEMPTION_REASON_ANNOTATION]
    after = apply_actions(snap, d.actions)
    assert decide(after).actions == ()
    # Once the leader is gone and the victim restarted elsewhere, nothing more happens.
    gone = replace(after, now=NOW + 60, pods=tuple(p for p in after.pods if p.jobset != low.key))
    assert decide(gone).actions == ()


def test_half_placed_job_waits_for_kube_scheduler_and_for_its_patience() -> None:
    low = make_jobset("low", priority=LOW)
    assert decide(half_placed(low, pending_for=5.0)).actions == ()
    snap = half_placed(low)
    pods = tuple(replace(p, nominated_node="p-0-n3") if p.node is None else p for p in snap.pods)
    d = decide(replace(snap, pods=pods))
    assert d.actions == () and any("kube-scheduler" in n for n in d.notes)


@pytest.mark.parametrize(
    "blocker",
    [
        make_jobset("peer", priority=HIGH),
        make_jobset("above", priority=HIGH + 1),
        make_jobset("unmanaged", priority=LOW, managed=False),
        make_jobset("keep", priority=LOW, preemptible=False),
        make_jobset("spent", priority=LOW, max_restarts=1, restarts=1),
    ],
    ids=lambda js: js.name,
)
def test_half_placed_job_never_preempts_a_blocker_the_rules_protect(blocker: JobSet) -> None:
    d = decide(half_placed(blocker), OPT_OUT)
    assert d.actions == () and d.preemptions == ()
    assert any("partly placed on p-0, blocked by" in n for n in d.notes)


def test_half_placed_job_preempts_only_what_sits_on_its_pool() -> None:
    low = make_jobset("low", priority=LOW)
    bystander = make_jobset("bystander", priority=LOW - 1, last_checkpoint=NOW)
    snap = half_placed(low, pools=2)
    pools = make_pools("p", 2)
    extra = running_pods(bystander, [pools[1]], {"p-1": [n for n in snap.nodes if n.pool == "p-1"]})
    snap = replace(snap, jobsets=(*snap.jobsets, bystander), pods=(*snap.pods, *extra))
    d = decide(snap)
    assert victims(snap) == [("default/low",)]
    assert {a.jobset for a in d.actions if isinstance(a, EvictPod)} == {"default/low"}


def test_half_placed_job_with_a_missing_slice_is_all_or_nothing() -> None:
    low = make_jobset("low", priority=LOW)
    high = make_jobset("high", priority=HIGH, slices=2)
    snap = half_placed(low, pools=2, high=high)
    p1 = [n for n in snap.nodes if n.pool == "p-1"]
    whole = pending_pods(high, unschedulable_since=NOW - 100, slices=[1])

    def with_slice_1_held_by(js: JobSet) -> Snapshot:
        held = running_pods(js, [make_pools("p", 2)[1]], {"p-1": p1}, started=NOW - 50)
        return replace(snap, jobsets=(*snap.jobsets, js), pods=(*snap.pods, *whole, *held))

    blocked = decide(with_slice_1_held_by(make_jobset("peer", priority=HIGH)))
    assert blocked.actions == () and any("too few" in n for n in blocked.notes)
    d = decide(with_slice_1_held_by(make_jobset("other", priority=LOW)))
    assert [(p.victims, p.pools, p.slices_needed) for p in d.preemptions] == [
        (("default/low", "default/other"), ("p-0", "p-1"), 2)
    ]


def test_a_multi_pool_blocker_frees_its_other_slices_for_the_beneficiary_first() -> None:
    """The blocker is preempted whole; its own slice counts toward the beneficiary's missing slice."""
    low = make_jobset("low", priority=LOW, slices=2)
    cheap = make_jobset("cheap", priority=LOW, last_checkpoint=NOW)
    high = make_jobset("high", priority=HIGH, slices=2)
    snap = half_placed(low, pools=3, high=high)
    pools = make_pools("p", 3)
    by_pool = {p.name: [n for n in snap.nodes if n.pool == p.name] for p in pools}
    low_slice = running_pods(low, [pools[1]], by_pool, started=NOW - 200, first_slice=1)
    cheap_pods = running_pods(cheap, [pools[2]], by_pool, started=NOW - 200)
    whole = pending_pods(high, unschedulable_since=NOW - 100, slices=[1])
    snap = replace(snap, jobsets=(*snap.jobsets, cheap), pods=(*snap.pods, *low_slice, *cheap_pods, *whole))
    d = decide(snap)
    assert [(p.victims, p.pools) for p in d.preemptions] == [(("default/low",), ("p-0", "p-1"))]
    assert decide(apply_actions(snap, d.actions)).actions == ()


def test_many_beneficiaries_at_once_decide_as_one_at_a_time() -> None:
    """Beneficiaries share one sorted candidate list: taking them together must give the same victims
    as adding them one by one (highest priority first) and applying each decision."""
    n_pools = 12
    runs = [
        make_jobset(
            f"run-{i}",
            priority=LOW + i % 3,
            slices=1 + i % 2,
            running_since=NOW - 100 * (i + 1),
            last_checkpoint=NOW - 37 * ((i * 7) % 11),
        )
        for i in range(8)
    ]
    placement: list[tuple[JobSet, list[int]]] = []
    next_pool = 0
    for js in runs:
        if next_pool + js.slices > n_pools:
            break
        placement.append((js, list(range(next_pool, next_pool + js.slices))))
        next_pool += js.slices
    waiting = [make_jobset(f"wait-{j}", priority=HIGH - j // 2, slices=1 + j % 2) for j in range(5)]
    together = decide(cluster(n_pools, placement, waiting))
    assert len(together.preemptions) >= 3, "the scenario must make several beneficiaries preempt"

    snap = cluster(n_pools, placement)
    one_by_one: list[Preemption] = []
    for js in waiting:  # already in the planner's order (priority, then name)
        snap = replace(
            snap,
            jobsets=(*snap.jobsets, js),
            pods=(*snap.pods, *pending_pods(js, unschedulable_since=NOW - 30)),
        )
        d = decide(snap)
        one_by_one.extend(d.preemptions)
        snap = apply_actions(snap, d.actions)
    assert together.preemptions == tuple(one_by_one)


# --- victim order ------------------------------------------------------------------------------


ORDER_NOW = 200_000.0


def _running(jobs: list[tuple[JobSet, list[int], float]], n_pools: int, pending: list[JobSet]) -> Snapshot:
    pools = make_pools("p", n_pools)
    nodes = {p.name: make_nodes(p, ready_since=ORDER_NOW - 86_400) for p in pools}
    pods: list[Pod] = []
    for js, idxs, started in jobs:
        pods.extend(running_pods(js, [pools[i] for i in idxs], nodes, started=started))
    for js in pending:
        pods.extend(pending_pods(js, unschedulable_since=ORDER_NOW - 30))
    return Snapshot(
        ORDER_NOW,
        pools,
        tuple(n for p in pools for n in nodes[p.name]),
        tuple([js for js, _, _ in jobs] + pending),
        tuple(pods),
    )


def test_lowest_priority_is_taken_before_less_work_lost() -> None:
    """lowA (500000, running 5 h) and lowB (1000000, running 10 min): taking lowB would make lowB's
    restart preempt lowA as well: two victims and more work lost."""
    low_a = make_jobset("low-a", priority=500_000, running_since=ORDER_NOW - 5 * 3600)
    low_b = make_jobset("low-b", priority=1_000_000, running_since=ORDER_NOW - 600)
    high = make_jobset("high", priority=2_000_000)
    snap = _running([(low_a, [0], ORDER_NOW - 5 * 3600), (low_b, [1], ORDER_NOW - 600)], 2, [high])
    d = decide(snap)
    assert [p.victims for p in d.preemptions] == [("default/low-a",)]


def test_equal_work_lost_prefers_the_victim_with_fewer_slices() -> None:
    """A 2-slice need: a 2-slice victim frees exactly enough; a 3-slice one would leave a slice idle."""
    two = make_jobset("two", priority=1000, slices=2, running_since=ORDER_NOW - 600)
    three = make_jobset("three", priority=1000, slices=3, running_since=ORDER_NOW - 400)
    high = make_jobset("high", priority=5000, slices=2)
    assert two.chips * 600 == three.chips * 400, "equal work lost"
    snap = _running([(two, [0, 1], ORDER_NOW - 600), (three, [2, 3, 4], ORDER_NOW - 400)], 5, [high])
    d = decide(snap)
    assert [(p.victims, len(p.pools)) for p in d.preemptions] == [(("default/two",), 2)]


def test_select_victims_on_the_tie_directly() -> None:
    cands = [
        Candidate("a/three", 1, 100, ("p1", "p2", "p3"), ()),
        Candidate("a/two", 1, 100, ("p4", "p5"), ()),
    ]
    chosen = select_victims(cands, 2)
    assert chosen is not None and [c.key for c in chosen] == ["a/two"]


def test_two_lower_priority_victims_beat_one_higher() -> None:
    cands = [
        Candidate("a/mid", 5, 1, ("p1", "p2"), ()),
        Candidate("a/low1", 1, 900, ("p3",), ()),
        Candidate("a/low2", 1, 900, ("p4",), ()),
    ]
    chosen = select_victims(cands, 2)
    assert chosen is not None and sorted(c.key for c in chosen) == ["a/low1", "a/low2"]


@st.composite
def candidate_sets(draw: st.DrawFn) -> tuple[list[Candidate], int]:
    n = draw(st.integers(0, 8))
    cands = [
        Candidate(
            f"ns/v-{i}",
            draw(st.integers(1, 3)),
            draw(st.sampled_from([0, 5, 10, 10, 20, 300])),
            tuple(f"p-{i}-{s}" for s in range(draw(st.integers(1, 4)))),
            (),
        )
        for i in range(n)
    ]
    return cands, draw(st.integers(1, 6))


def _brute_force(cands: list[Candidate], need: int) -> tuple[int, int, int, int] | None:
    best = None
    for r in range(1, len(cands) + 1):
        for combo in combinations(cands, r):
            if sum(len(c.pools) for c in combo) >= need:
                rank = set_rank(combo)
                best = rank if best is None or rank < best else best
    return best


@settings(max_examples=400, deadline=None)
@given(candidate_sets())
def test_selection_matches_the_brute_force_optimum(case: tuple[list[Candidate], int]) -> None:
    cands, need = case
    chosen = select_victims(cands, need)
    optimum = _brute_force(cands, need)
    if optimum is None:
        assert chosen is None
        return
    assert chosen is not None
    assert sum(len(c.pools) for c in chosen) >= need
    assert set_rank(chosen) == optimum
    for c in chosen:
        rest = [o for o in chosen if o is not c]
        assert sum(len(o.pools) for o in rest) < need, "every victim is necessary"
    queued = VictimQueue(cands).select(need, alive=lambda c: True, skip=lambda c: False)
    assert queued == chosen


# --- the shared victim queue (hypothesis) ----------------------------------------------------


@st.composite
def victim_lists(draw: st.DrawFn) -> tuple[list[Candidate], list[tuple[int, int]]]:
    n = draw(st.integers(0, 30))
    cands = [
        Candidate(
            f"ns/v-{i}",
            draw(st.integers(1, 4)),
            draw(st.sampled_from([0, 10, 10, 50, 300])),
            tuple(f"p-{i}-{s}" for s in range(draw(st.integers(1, 4)))),
            (),
        )
        for i in range(n)
    ]
    benes = draw(st.lists(st.tuples(st.integers(1, 5), st.integers(1, 5)), max_size=8))
    return cands, sorted(benes, key=lambda b: -b[0])


@settings(max_examples=300, deadline=None)
@given(victim_lists())
def test_shared_queue_matches_selecting_afresh_per_beneficiary(
    case: tuple[list[Candidate], list[tuple[int, int]]],
) -> None:
    """The planner's sorted-once queue picks what select_victims would pick from the eligible rest."""
    cands, benes = case
    queue = VictimQueue(cands)
    used: set[str] = set()
    for priority, need in benes:
        fresh = select_victims([c for c in cands if c.priority < priority and c.key not in used], need)

        def alive(c: Candidate, priority: int = priority) -> bool:
            return c.priority < priority and c.key not in used

        shared = queue.select(need, alive=alive, skip=lambda c: False)
        assert shared == fresh
        used.update(c.key for c in shared or ())


# --- forged preemption records --------------------------------------------------------------------

RECORD_NOW = 1_000_000.0


def _teams(*, free_pool: bool = True) -> Snapshot:
    """p-0 is free (or runs team-c's ``third2``), p-1 runs team-c's ``third``, p-2 the forger's JobSet,
    p-3 team-x's ``idle`` (higher priority, nothing waiting); team-h's ``high`` waits for one slice."""
    pools = make_pools("p", 4)
    nodes = {p.name: make_nodes(p, ready_since=RECORD_NOW - 9000) for p in pools}
    third = make_jobset("third", namespace="team-c", priority=LOW, running_since=RECORD_NOW - 3000)
    forger = make_jobset("forger", namespace="team-f", priority=LOW, running_since=RECORD_NOW - 6000)
    idle = make_jobset("idle", namespace="team-x", priority=HIGH + 1)
    high = make_jobset("high", namespace="team-h", priority=HIGH)
    jobsets = [third, forger, idle, high]
    pods = [
        *running_pods(third, [pools[1]], nodes, started=RECORD_NOW - 3000),
        *running_pods(forger, [pools[2]], nodes, started=RECORD_NOW - 6000),
        *running_pods(idle, [pools[3]], nodes, started=RECORD_NOW - 3000),
        *pending_pods(high, unschedulable_since=RECORD_NOW - 60),
    ]
    if not free_pool:
        third2 = make_jobset("third2", namespace="team-c", priority=LOW, running_since=RECORD_NOW - 3000)
        jobsets.append(third2)
        pods.extend(running_pods(third2, [pools[0]], nodes, started=RECORD_NOW - 3000))
    return Snapshot(
        RECORD_NOW, pools, tuple(n for p in pools for n in nodes[p.name]), tuple(jobsets), tuple(pods)
    )


def _forge(snap: Snapshot, name: str, annotations: dict[str, str], **fields: object) -> Snapshot:
    jobsets = tuple(
        replace(js, annotations={**js.annotations, **annotations}, **fields) if js.name == name else js  # type: ignore[arg-type]
        for js in snap.jobsets
    )
    return replace(snap, jobsets=jobsets)


def _record(beneficiary: str, pools: str, at: float) -> dict[str, str]:
    return {
        k.PREEMPTED_FOR_ANNOTATION: beneficiary,
        k.PREEMPTED_POOLS_ANNOTATION: pools,
        k.PREEMPTED_AT_ANNOTATION: format_time(at),
    }


def test_baselines_free_pool_used_else_the_cheapest_lowest_victim() -> None:
    d = decide(_teams())
    assert d.preemptions == () and any("capacity is free" in n for n in d.notes)
    d = decide(_teams(free_pool=False))
    assert [p.victims for p in d.preemptions] == [("team-c/third",)]


def test_a_future_dated_record_cannot_switch_off_preemption_for_a_pool() -> None:
    """preempted-at in 2100 on the forger's own pool: the pool would be reserved (never a candidate,
    never free) for 75 years."""
    snap = _forge(_teams(free_pool=False), "forger", _record("team-h/high", "p-2", 4_102_444_800.0))
    d = decide(snap)
    assert any("in the future" in n for n in d.notes)
    assert [p.victims for p in d.preemptions] == [("team-c/third",)]


def test_a_record_for_an_idle_beneficiary_cannot_hide_a_free_pool() -> None:
    """Reserving free p-0 for team-x's idle JobSet made the controller preempt team-c for high."""
    snap = _forge(_teams(), "forger", _record("team-x/idle", "p-0", RECORD_NOW - 5))
    d = decide(snap)
    assert d.preemptions == ()
    assert any("not waiting" in n for n in d.notes)


def test_an_unmanaged_jobset_cannot_reserve_a_pool() -> None:
    snap = _forge(_teams(), "forger", _record("team-x/idle", "p-0", RECORD_NOW - 5), labels={})
    assert decide(snap).preemptions == ()


def test_a_record_naming_a_missing_or_lower_beneficiary_is_ignored() -> None:
    for beneficiary in ("team-x/nobody", "team-c/third"):
        snap = _forge(_teams(), "forger", _record(beneficiary, "p-0", RECORD_NOW - 5))
        assert decide(snap).preemptions == (), beneficiary


def test_a_record_crediting_a_beneficiary_with_a_third_teams_pool_cannot_starve_it() -> None:
    """Crediting high with team-c's running pool made high wait for capacity that never comes."""
    snap = _forge(_teams(free_pool=False), "forger", _record("team-h/high", "p-0", RECORD_NOW - 5))
    d = decide(snap)
    assert [p.beneficiary for p in d.preemptions] == ["team-h/high"]


def test_a_record_for_pools_of_another_shape_is_ignored() -> None:
    snap = _forge(_teams(), "forger", _record("team-x/idle", "p-0", RECORD_NOW - 5), topology="2x2")
    assert decide(snap).preemptions == ()


def test_arbitrary_preemption_count_is_bounded() -> None:
    pools = make_pools("p", 1)
    nodes = {p.name: make_nodes(p, ready_since=RECORD_NOW - 9000) for p in pools}
    low = make_jobset("low", priority=LOW, annotations={k.PREEMPTION_COUNT_ANNOTATION: "9" * 5000})
    high = make_jobset("high", priority=HIGH)
    pods = [
        *running_pods(low, pools, nodes, started=RECORD_NOW - 3000),
        *pending_pods(high, unschedulable_since=RECORD_NOW - 60),
    ]
    d = decide(Snapshot(RECORD_NOW, pools, tuple(nodes["p-0"]), (low, high), tuple(pods)))
    counts = [
        v
        for a in d.actions
        if hasattr(a, "annotations")
        for key, v in a.annotations
        if key == k.PREEMPTION_COUNT_ANNOTATION
    ]
    assert counts == ["1"]
