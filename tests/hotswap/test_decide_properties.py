"""Safety rules checked over random clusters (hypothesis)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tpu_platform.hotswap.core import (
    AnnotateJobSet,
    Condition,
    Decision,
    EvictionCause,
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
    apply_actions,
    constants,
    decide,
    format_time,
    is_managed,
    is_preemptible,
    node_dead_since,
)
from tpu_platform.testing.hotswap_builders import (
    fail_node,
    make_jobset,
    make_nodes,
    make_pool,
    pending_pods,
    running_pods,
)

NOW = 1_000_000.0
AGES = [1.0, 5.0, 12.0, 35.0, 400.0]
NO_GUARD = Settings(max_bad_node_fraction=1.0)
SHAPES = ["4x4", "4x4", "4x4", "2x4"]


@st.composite
def clusters(draw: st.DrawFn) -> Snapshot:
    topologies = draw(st.lists(st.sampled_from(SHAPES), min_size=1, max_size=8))
    pools = [make_pool(f"p-{i}", topo) for i, topo in enumerate(topologies)]
    nodes: dict[str, list[Node]] = {}
    for pool in pools:
        count = pool.expected_nodes - (1 if draw(st.integers(0, 9)) == 0 else 0)
        members = []
        broken = draw(st.integers(0, 3)) == 0
        for fresh in make_nodes(pool, ready_since=NOW - 7200, count=count):
            kind = draw(st.sampled_from(["ok", "ok", "Unknown", "False", "npd"])) if broken else "ok"
            age = draw(st.sampled_from(AGES))
            node = fresh
            if kind in ("Unknown", "False"):
                node = fail_node(fresh, NOW - age, status=kind)
            elif kind == "npd":
                node = replace(
                    fresh, conditions=(*fresh.conditions, Condition("KernelDeadlock", "True", NOW - age))
                )
            members.append(node)
        if draw(st.integers(0, 4)) == 0:  # the controller declared this pool earlier
            since = format_time(NOW - draw(st.sampled_from(AGES)))
            members = [
                replace(
                    n,
                    taints=(*n.taints, Taint(constants.UNHEALTHY_TAINT_KEY, "NoSchedule", "true")),
                    annotations={constants.UNHEALTHY_SINCE_ANNOTATION: since},
                )
                for n in members
            ]
        nodes[pool.name] = members
    free = list(draw(st.permutations([p.name for p in pools])))
    by_name = {p.name: p for p in pools}
    jobsets: list[JobSet] = []
    pods: list[Pod] = []
    for i in range(draw(st.integers(0, 12))):
        js = make_jobset(
            f"js-{i}",
            priority=draw(st.sampled_from([1, 2, 3])),
            topology=draw(st.sampled_from(SHAPES)),
            slices=draw(st.integers(1, 2)),
            managed=draw(st.sampled_from([True, True, True, False])),
            preemptible=draw(st.sampled_from([True, True, False])),
            max_restarts=draw(st.integers(0, 3)),
            restarts=draw(st.integers(0, 1)),
            disruption_ignores_max_restarts=draw(st.booleans()),
            running_since=NOW - draw(st.sampled_from([60.0, 600.0, 6000.0])),
            last_checkpoint=draw(st.sampled_from([None, NOW - 30, NOW - 3000])),
        )
        jobsets.append(js)
    # Lower priorities are placed first, so higher ones are the ones left waiting (as after a failure).
    for js in sorted(jobsets, key=lambda j: j.priority):
        mode = draw(st.sampled_from(["running", "running", "pending", "mixed"]))
        fitting = [name for name in free if by_name[name].topology == js.topology]
        placed = fitting[: js.slices] if mode != "pending" else []
        if mode == "mixed":
            placed = placed[:1]
        for name in placed:
            free.remove(name)
        running = running_pods(js, [by_name[n] for n in placed], nodes, started=js.running_since or 0.0)
        restarting = draw(st.integers(0, 5)) == 0
        for pod in running:
            if restarting and draw(st.booleans()):
                pods.append(replace(pod, deletion_timestamp=NOW - draw(st.sampled_from(AGES))))
            else:
                pods.append(pod)
        if len(placed) < js.slices:
            missing = range(len(placed), js.slices)
            for pod in pending_pods(
                js, unschedulable_since=NOW - draw(st.sampled_from(AGES)), slices=missing
            ):
                nominated = next(iter(nodes.values()))[0].name if draw(st.integers(0, 5)) == 0 else None
                pods.append(replace(pod, nominated_node=nominated))
    return Snapshot(
        now=NOW,
        pools=tuple(pools),
        nodes=tuple(n for p in pools for n in nodes[p.name]),
        jobsets=tuple(jobsets),
        pods=tuple(pods),
    )


@st.composite
def contended(draw: st.DrawFn) -> Snapshot:
    """Every healthy pool busy with random lower-priority work, one to three JobSets waiting."""
    n_pools = draw(st.integers(1, 10))
    pools = [make_pool(f"p-{i}") for i in range(n_pools)]
    nodes = {p.name: list(make_nodes(p, ready_since=NOW - 7200)) for p in pools}
    jobsets: list[JobSet] = []
    pods: list[Pod] = []
    i = 0
    while i < n_pools:
        slices = min(draw(st.integers(1, 3)), n_pools - i)
        js = make_jobset(
            f"run-{i}",
            priority=draw(st.integers(1, 4)),
            slices=slices,
            managed=draw(st.sampled_from([True, True, True, False])),
            running_since=NOW - draw(st.integers(0, 5000)),
            last_checkpoint=draw(st.sampled_from([None, NOW - 10, NOW - 900])),
        )
        jobsets.append(js)
        pods.extend(running_pods(js, pools[i : i + slices], nodes, started=js.running_since or 0.0))
        i += slices
    for j in range(draw(st.integers(1, 3))):
        js = make_jobset(f"wait-{j}", priority=draw(st.integers(2, 5)), slices=draw(st.integers(1, 3)))
        jobsets.append(js)
        pods.extend(pending_pods(js, unschedulable_since=NOW - 60))
    return Snapshot(
        NOW, tuple(pools), tuple(n for p in pools for n in nodes[p.name]), tuple(jobsets), tuple(pods)
    )


@st.composite
def half_placed(draw: st.DrawFn) -> Snapshot:
    """A contended cluster in which some waiting JobSets hold part of a pool that other pods share."""
    snap = draw(contended())
    pools = {p.name: p for p in snap.pools}
    nodes: dict[str, list[Node]] = {}
    for n in snap.nodes:
        nodes.setdefault(n.pool, []).append(n)
    taken = {p.node for p in snap.pods if p.node is not None}
    open_pools = sorted(name for name, members in nodes.items() if not taken & {n.name for n in members})
    jobsets, pods = list(snap.jobsets), list(snap.pods)
    # Re-home whole pools: drop their current pods, then split their nodes between a waiting slice
    # and blockers of random priority, management and opt-out.
    chosen = draw(st.lists(st.sampled_from(sorted(pools)), min_size=1, max_size=3, unique=True))
    for k, name in enumerate(chosen):
        members = nodes[name]
        on_pool = {n.name for n in members}
        pods = [p for p in pods if p.node not in on_pool]
        js = make_jobset(f"half-{k}", priority=draw(st.integers(2, 5)))
        jobsets.append(js)
        bound = draw(st.integers(1, len(members) - 1))
        slice_pods = running_pods(js, [pools[name]], {name: members[:bound]}, started=NOW - 120)
        pods.extend(slice_pods)
        rest = pending_pods(js, unschedulable_since=NOW - 60, slices=[0], pods_per_slice=len(members))
        pods.extend(rest[bound:])
        for j, node in enumerate(members[bound:]):
            blocker = make_jobset(
                f"blk-{k}-{j}",
                priority=draw(st.integers(1, 5)),
                managed=draw(st.sampled_from([True, True, False])),
                preemptible=draw(st.sampled_from([True, True, False])),
                running_since=NOW - draw(st.integers(0, 5000)),
            )
            jobsets.append(blocker)
            leader = running_pods(blocker, [pools[name]], {name: [node]}, started=NOW - 100)
            pods.extend(leader)
            if draw(st.booleans()) and open_pools:
                other = open_pools.pop()
                pods.extend(running_pods(blocker, [pools[other]], nodes, first_slice=1))
    used = {p.jobset for p in pods}
    return replace(snap, jobsets=tuple(js for js in jobsets if js.key in used), pods=tuple(pods))


ANY_CLUSTER = st.one_of(clusters(), contended(), half_placed())


def check_safety(snap: Snapshot, d: Decision, s: Settings) -> None:
    jobsets = {js.key: js for js in snap.jobsets}
    pods = {p.key: p for p in snap.pods}
    nodes = {n.name: n for n in snap.nodes}
    statuses = {p.name: p for p in d.pools}
    annotated = {a.key: dict(a.annotations) for a in d.actions if isinstance(a, AnnotateJobSet)}
    evicted_now = {a.key for a in d.actions if isinstance(a, EvictPod)}

    for pre in d.preemptions:
        bene = jobsets[pre.beneficiary]
        assert is_managed(bene)
        freed = {}
        for v in pre.victims:
            victim = jobsets[v]
            assert victim.priority < pre.priority == bene.priority, "victim must be strictly lower"
            assert is_preemptible(victim)
            assert (victim.topology, victim.accelerator) == (bene.topology, bene.accelerator)
            freed[v] = annotated[v][constants.PREEMPTED_POOLS_ANNOTATION].split(",")
            for pool in freed[v]:
                assert statuses[pool].state is PoolState.HEALTHY
        total = len({pool for f in freed.values() for pool in f})
        assert 0 < pre.slices_needed <= bene.slices
        assert total >= pre.slices_needed
        cleared = set(pre.cleared_pools)
        for v, f in freed.items():
            if cleared.intersection(f):
                # Every pod left on a pool the beneficiary is partly placed on must go.
                assert any(p.jobset == v and p.node and nodes[p.node].pool in cleared for p in snap.pods)
            else:
                assert total - len(f) < pre.slices_needed, "a victim could have been spared"

    for a in d.actions:
        match a:
            case PatchNode():
                assert all(t.key == constants.UNHEALTHY_TAINT_KEY for t in a.add_taints)
                assert set(a.remove_taints) <= {constants.UNHEALTHY_TAINT_KEY}
                keys = [key for key, _ in a.set_annotations] + list(a.remove_annotations)
                assert all(key.startswith("tpu-platform.dev/") for key in keys)
            case AnnotateJobSet():
                assert is_managed(jobsets[a.key])
            case EvictPod():
                pod = pods[a.key]
                assert pod.jobset is not None and is_managed(jobsets[pod.jobset])
                assert not pod.terminating
                if a.cause is EvictionCause.FAIL_FAST:
                    assert a.pool is not None and statuses[a.pool].state is PoolState.UNHEALTHY
                else:
                    record = annotated.get(pod.jobset) or jobsets[pod.jobset].annotations
                    assert constants.PREEMPTED_FOR_ANNOTATION in record, (
                        "evicted on a healthy pool w/o preemption"
                    )
            case ForceDeletePod():
                pod = pods[a.key]
                assert pod.jobset is not None and is_managed(jobsets[pod.jobset])
                assert pod.terminating or a.key in evicted_now
                dead = node_dead_since(nodes[a.node])
                assert dead is not None and NOW - dead >= s.dead_node_confirm_seconds


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ANY_CLUSTER)
def test_safety_rules_hold(snap: Snapshot) -> None:
    d = decide(snap, NO_GUARD)
    check_safety(snap, d, NO_GUARD)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ANY_CLUSTER)
def test_idempotent_after_applying(snap: Snapshot) -> None:
    d = decide(snap, NO_GUARD)
    after = apply_actions(snap, d.actions)
    again = decide(after, NO_GUARD)
    assert again.actions == ()


def recreate_declared(snap: Snapshot, d: Decision) -> Snapshot:
    """Every node of each declared pool replaced as GKE's repair does: new uid, Ready, no state."""
    declared = {p.name for p in d.pools if p.declared}
    pools = {p.name: p for p in snap.pools}
    kept = [n for n in snap.nodes if n.pool not in declared]
    fresh = [
        replace(n, uid=f"{n.uid}-recreated")
        for name in sorted(declared)
        for n in make_nodes(pools[name], ready_since=NOW - 5)
    ]
    return replace(snap, nodes=(*kept, *fresh))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ANY_CLUSTER)
def test_recreated_pools_stay_declared_and_idempotent_with_memory(snap: Snapshot) -> None:
    d = decide(snap, NO_GUARD)
    after = apply_actions(snap, d.actions)
    assert decide(after, NO_GUARD, memory=d.memory).actions == ()
    repaired = recreate_declared(after, d)
    d2 = decide(repaired, NO_GUARD, memory=d.memory)
    for before in d.pools:
        status = d2.pool(before.name)
        assert status is not None
        if before.declared:
            assert status.state is PoolState.RECOVERING, "the T_good hold survives the re-creation"
            recent = {t for t in before.history if t > NOW - NO_GUARD.flap_window_seconds}
            assert recent <= set(status.history), "flap history survives the re-creation"
    check_safety(repaired, d2, NO_GUARD)
    again = decide(apply_actions(repaired, d2.actions), NO_GUARD, memory=d2.memory)
    assert again.actions == ()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ANY_CLUSTER, st.randoms(use_true_random=False))
def test_deterministic_regardless_of_input_order(snap: Snapshot, rnd: object) -> None:
    import random

    assert isinstance(rnd, random.Random)
    shuffled = replace(
        snap,
        pools=tuple(rnd.sample(snap.pools, len(snap.pools))),
        nodes=tuple(rnd.sample(snap.nodes, len(snap.nodes))),
        jobsets=tuple(rnd.sample(snap.jobsets, len(snap.jobsets))),
        pods=tuple(rnd.sample(snap.pods, len(snap.pods))),
    )
    a, b = decide(snap, NO_GUARD), decide(shuffled, NO_GUARD)
    assert a.actions == b.actions
    assert a.preemptions == b.preemptions
    assert a.pools == b.pools
    assert a.memory == b.memory
    repaired = recreate_declared(apply_actions(snap, a.actions), a)
    shuffled_repaired = replace(repaired, nodes=tuple(rnd.sample(repaired.nodes, len(repaired.nodes))))
    x = decide(repaired, NO_GUARD, memory=a.memory)
    y = decide(shuffled_repaired, NO_GUARD, memory=b.memory)
    assert (x.actions, x.pools, x.memory) == (y.actions, y.pools, y.memory)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_mass_outage_guard_blocks_everything(snap: Snapshot) -> None:
    s = Settings()
    bad = sum(
        1
        for n in snap.nodes
        if any((c.type == "Ready" and c.status != "True") or c.type == "KernelDeadlock" for c in n.conditions)
    )
    d = decide(snap, s)
    assert d.held == (bad / len(snap.nodes) > s.max_bad_node_fraction)
    if d.held:
        assert d.actions == ()
    check_safety(snap, d, s)
