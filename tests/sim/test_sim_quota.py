"""The simulator admits on the stack's queue plan: its ClusterQueues are the plan's nodes and its books
are the plan's ``TreeUsage``, so cohort usage follows Kueue 0.19.2's hierarchy
(``pkg/cache/scheduler/resource_node.go``: ``addUsage``/``removeUsage``) through admissions,
preemptions and finishes alike."""

from __future__ import annotations

from hypothesis import given, settings, target
from hypothesis import strategies as st

from tpu_platform import catalog
from tpu_platform.plan import load_stack_config, parse_stack_config, stack_file
from tpu_platform.quota import QuotaNode, TreeUsage, quota_layout
from tpu_platform.sim.cluster import Cluster
from tpu_platform.sim.engine import Engine
from tpu_platform.sim.kueue import Kueue, setup_from_stack
from tpu_platform.sim.model import Workload, WorkloadSpec
from tpu_platform.sim.params import Timings
from tpu_platform.sim.workload import priority_levels

PROD = parse_stack_config(load_stack_config(stack_file("prod")))
SHAPES = {"4x4": (4, 16), "8x8": (16, 64)}


def test_the_simulators_queues_are_the_plans() -> None:
    plan = quota_layout(PROD)
    setup = setup_from_stack(PROD)
    assert [cq.node for cq in setup.queues.values()] == plan.cluster_queues
    assert setup.plan.tree.cohort_nodes == plan.tree.cohort_nodes
    assert setup.local_queues == {lq: node.name for node in plan.cluster_queues for lq in node.local_queues}


def test_a_workload_of_a_topology_its_queue_has_no_quota_for_never_fits() -> None:
    setup = setup_from_stack(PROD)
    kueue = Kueue(Cluster(Engine(), Timings(), []), setup, start=lambda w: None, evict=lambda w: None)
    for cq in setup.queues.values():
        assert not kueue.fits(cq, "2x2", 1)
        assert kueue.fits(cq, next(iter(cq.quotas)), 1)


@settings(max_examples=60, deadline=None)
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(sorted(t.name for t in PROD.teams)),
            st.sampled_from(sorted(SHAPES)),
            st.integers(0, len(PROD.priorities) - 1),
            st.integers(1, 2),
            st.booleans(),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_the_books_are_what_the_admitted_workloads_hold(ops: list[tuple[str, str, int, int, bool]]) -> None:
    """After any run of submissions, preemptions and finishes, every node of the tree (cohorts too)
    holds exactly what charging the admitted workloads on fresh books gives, and no ClusterQueue is
    past what the tree lets it have."""
    setup = setup_from_stack(PROD)
    engine = Engine()
    cluster = Cluster(engine, Timings(), [])

    def evict(w: Workload) -> None:
        w.state = "queued"

    evicted: list[str] = []
    kueue = Kueue(
        cluster, setup, start=lambda w: None, evict=evict, on_preempt=lambda w, v: evicted.append(w.key)
    )
    levels = priority_levels(PROD)
    teams = {t.name: t for t in PROD.teams}
    for i, (team, topology, level, slices, finish) in enumerate(ops):
        name, value = levels[level]
        namespace, queue = teams[team].local_queue_list()[0]
        spec = WorkloadSpec(
            name=f"w{i}",
            namespace=namespace,
            queue=queue,
            priority_class=name,
            priority=value,
            topology=topology,
            slices=slices,
        )
        kueue.submit(spec, shape_nodes=SHAPES[topology][0], shape_chips=SHAPES[topology][1])
        engine.run(engine.now + 1.0)
        admitted = [w for w in cluster.workloads.values() if w.state == "admitted"]
        if finish and admitted:
            admitted[0].state = "done"
            kueue.release(admitted[0])
            engine.run(engine.now + 1.0)
    target(float(len(evicted)), label="preemptions")  # steer the search toward reclaim and preemption
    fresh = TreeUsage(setup.plan.tree)
    for w in cluster.workloads.values():
        if w.state == "admitted":
            cq = setup.queues[w.cluster_queue]
            shape = cq.shape(w.spec.topology)
            assert shape is not None
            fresh.charge(cq.node, shape, w.spec.slices)
    nodes: list[QuotaNode] = [*setup.plan.tree.queue_nodes, *setup.plan.tree.cohort_nodes]
    for node in nodes:
        for topology in SHAPES:
            shape = catalog.lookup(topology)
            assert kueue.books.of(node, shape) == fresh.of(node, shape), (node.name, topology)
    for cq in setup.queues.values():
        for q in cq.quotas.values():
            assert kueue.books.of(cq.node, q.shape) <= setup.plan.tree.potential(cq.node, q.shape)
