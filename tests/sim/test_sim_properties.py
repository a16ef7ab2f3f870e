"""Attacks on the simulator: random mixes of every failure kind under the three policies must keep the
cluster's invariants (one TPU pod per node, Kueue's books balanced, TAS assignments disjoint, episodes
ordered), and Kueue's hierarchical quota must never hand out more than the tree holds."""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tpu_platform import catalog
from tpu_platform.quota import FlavorQuota, QuotaLayout, QuotaNode, QuotaTree, TreeUsage
from tpu_platform.sim.failures import KINDS, KUBELET_RESTART
from tpu_platform.sim.kueue import ClusterQueue, Kueue, QueueSetup
from tpu_platform.sim.run import Result, Simulation, make_policy, stack_scenario
from tpu_platform.sim.scenarios import seed_jobsets, seed_stack
from tpu_platform.sim.traces import Failure

SLICES = 3
NODES = [f"seed-4x4-{p}-n{i}" for p in range(SLICES) for i in range(4)]
FOUR = catalog.lookup("4x4")


@st.composite
def traces(draw: st.DrawFn) -> tuple[Failure, ...]:
    out = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(KINDS))
        at = draw(st.floats(200.0, 5000.0)).__round__(1)
        back = (
            draw(st.floats(5.0, 200.0)).__round__(1)
            if kind == KUBELET_RESTART or draw(st.booleans())
            else None
        )
        out.append(Failure(at, draw(st.sampled_from(NODES)), back_after=back, kind=kind))
    return tuple(sorted(out, key=lambda f: (f.at, f.node)))


def check(r: Result, kueue: Kueue) -> None:
    c = r.cluster
    for node in c.nodes.values():
        assert len(node.holders) <= 1, f"{node.name} holds {node.holders}"
    used: Counter[str] = Counter()
    for w in c.workloads.values():
        if w.state == "admitted":
            used[w.cluster_queue] += w.spec.slices
    for name, by_topology in kueue.usage.items():
        assert by_topology.get("4x4", 0) == used[name], f"{name}: Kueue's books disagree with admissions"
    for w in c.workloads.values():
        assert w.state in ("queued", "admitted", "done", "failed")
    for ep in r.metrics.episodes:
        assert ep.end is None or ep.end >= ep.start
        if ep.running_at is not None and ep.end is not None:
            assert ep.start <= ep.running_at <= ep.end
        assert ep.seconds is None or ep.seconds >= 0


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trace=traces(), policy=st.sampled_from(["recipe", "kueue_tas", "hotswap"]))
def test_random_mixed_incidents_keep_the_invariants(trace: tuple[Failure, ...], policy: str) -> None:
    workloads = seed_jobsets(low_checkpoints=(3600.0, 600.0))
    scenario = stack_scenario(seed_stack(SLICES), trace=trace, end=9000.0, workloads=workloads)
    sim = Simulation(scenario, make_policy(policy, scenario, verify_idle=True))
    r = sim.run()
    check(r, sim.kueue)
    pools = [p for pools in sim.kueue.assigned.values() for p in pools]
    assert len(pools) == len(set(pools)), "a slice is assigned to one workload at a time"
    assert (policy == "kueue_tas") or not pools, "only kueue_tas admits with TAS"


@st.composite
def trees(draw: st.DrawFn) -> QueueSetup:
    """A root, up to two child cohorts, and up to four queues hung anywhere, with random quotas."""

    def quota() -> FlavorQuota:
        nominal = draw(st.integers(0, 3))
        return FlavorQuota(
            FOUR,
            "tpu-4x4",
            nominal,
            draw(st.one_of(st.none(), st.integers(0, 3))),
            draw(st.one_of(st.none(), st.integers(0, nominal))),
        )

    cohorts = {"root": QuotaNode("Cohort", "root", None, (quota(),) if draw(st.booleans()) else ())}
    for i in range(draw(st.integers(0, 2))):
        cohorts[f"c{i}"] = QuotaNode("Cohort", f"c{i}", "root", (quota(),) if draw(st.booleans()) else ())
    queues = {}
    for i in range(draw(st.integers(1, 4))):
        parent = draw(st.sampled_from(sorted(cohorts)))
        queues[f"q{i}"] = ClusterQueue(QuotaNode("ClusterQueue", f"q{i}", parent, (quota(),), team=f"q{i}"))
    tree = QuotaTree(cohorts.values(), (cq.node for cq in queues.values()))
    return QueueSetup(QuotaLayout((), tree), queues)


@settings(max_examples=200, deadline=None)
@given(setup=trees(), data=st.data())
def test_hierarchical_quota_never_admits_more_than_the_tree_holds(
    setup: QueueSetup, data: st.DataObject
) -> None:
    """Admitting greedily while ``available`` allows it keeps every queue within nominal + borrowing
    limit and the whole tree within the sum of all nominal quotas (Kueue's ``resource_node.go``)."""
    books = TreeUsage(setup.plan.tree)
    used: dict[str, dict[str, int]] = {q: {} for q in setup.queues}
    order = data.draw(st.lists(st.sampled_from(sorted(setup.queues)), max_size=30))
    for queue in order:
        if books.available(setup.queues[queue].node, FOUR) >= 1:
            books.charge(setup.queues[queue].node, FOUR, 1)
            used[queue]["4x4"] = used[queue].get("4x4", 0) + 1
    total = sum(q.nominal for c in setup.plan.cohorts for q in c.quotas) + sum(
        cq.quotas["4x4"].nominal for cq in setup.queues.values()
    )
    assert sum(u.get("4x4", 0) for u in used.values()) <= total
    for name, cq in setup.queues.items():
        q = cq.quotas["4x4"]
        if q.borrowing_limit is not None:
            assert used[name].get("4x4", 0) <= q.nominal + q.borrowing_limit
        assert books.raw_available(cq.node, FOUR) >= 0 or used[name].get("4x4", 0) == 0
