"""Victim order: lowest priority first, then least work lost, then fewest victims, then fewest slices.

kube-scheduler (kubernetes/kubernetes ``pkg/scheduler/framework/preemption/preemption.go``,
``pickOneNodeForPreemption``: after the fewest PDB violations, the node whose highest-priority victim
has the lowest priority; design: kubernetes/design-proposals-archive ``scheduling/pod-preemption.md``,
"Preemption order") and Kueue (https://kueue.sigs.k8s.io/docs/concepts/preemption/: lower-priority
workloads are preempted first) both take the lowest priority first; the planner does the same with
whole JobSets.
"""

from __future__ import annotations

from itertools import combinations

from hypothesis import given, settings
from hypothesis import strategies as st

from tpu_platform.hotswap.core import Candidate, JobSet, Pod, Snapshot, decide, select_victims
from tpu_platform.hotswap.core.victims import VictimQueue, set_rank
from tpu_platform.testing.hotswap_builders import (
    make_jobset,
    make_nodes,
    make_pools,
    pending_pods,
    running_pods,
)

NOW = 200_000.0


def _running(jobs: list[tuple[JobSet, list[int], float]], n_pools: int, pending: list[JobSet]) -> Snapshot:
    pools = make_pools("p", n_pools)
    nodes = {p.name: make_nodes(p, ready_since=NOW - 86_400) for p in pools}
    pods: list[Pod] = []
    for js, idxs, started in jobs:
        pods.extend(running_pods(js, [pools[i] for i in idxs], nodes, started=started))
    for js in pending:
        pods.extend(pending_pods(js, unschedulable_since=NOW - 30))
    return Snapshot(
        NOW,
        pools,
        tuple(n for p in pools for n in nodes[p.name]),
        tuple([js for js, _, _ in jobs] + pending),
        tuple(pods),
    )


def test_lowest_priority_is_taken_before_less_work_lost() -> None:
    """lowA (500000, running 5 h) and lowB (1000000, running 10 min): taking lowB would make lowB's
    restart preempt lowA as well: two victims and more work lost."""
    low_a = make_jobset("low-a", priority=500_000, running_since=NOW - 5 * 3600)
    low_b = make_jobset("low-b", priority=1_000_000, running_since=NOW - 600)
    high = make_jobset("high", priority=2_000_000)
    snap = _running([(low_a, [0], NOW - 5 * 3600), (low_b, [1], NOW - 600)], 2, [high])
    d = decide(snap)
    assert [p.victims for p in d.preemptions] == [("default/low-a",)]


def test_equal_work_lost_prefers_the_victim_with_fewer_slices() -> None:
    """A 2-slice need: a 2-slice victim frees exactly enough; a 3-slice one would leave a slice idle."""
    two = make_jobset("two", priority=1000, slices=2, running_since=NOW - 600)
    three = make_jobset("three", priority=1000, slices=3, running_since=NOW - 400)
    high = make_jobset("high", priority=5000, slices=2)
    assert two.chips * 600 == three.chips * 400, "equal work lost"
    snap = _running([(two, [0, 1], NOW - 600), (three, [2, 3, 4], NOW - 400)], 5, [high])
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
