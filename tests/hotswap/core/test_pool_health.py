"""Pool health (``core/pool_health.py``): detection, hysteresis, the state the controller keeps on
nodes, and when a terminating pod stops counting as leaving its pool.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest

from tpu_platform.hotswap.core import (
    Condition,
    Decision,
    EvictPod,
    ForceDeletePod,
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
)
from tpu_platform.hotswap.core.pool_health import (
    DELETION_OVERDUE_SECONDS,
    MAX_DRAIN_GRACE_SECONDS,
    still_draining,
)
from tpu_platform.testing.hotswap_builders import (
    fail_node,
    heal_node,
    make_jobset,
    make_nodes,
    make_pool,
    running_pods,
)

NOW = 50_000.0
SETTINGS = Settings(max_bad_node_fraction=1.0, force_delete_unconfirmed=True)


def one_pool(
    edit: dict[int, Node] | None = None, *, count: int | None = None, pods: Sequence[Pod] = ()
) -> Snapshot:
    pool = make_pool("p")
    nodes = list(make_nodes(pool, ready_since=NOW - 3600, count=count))
    for i, node in (edit or {}).items():
        nodes[i] = node
    js = make_jobset("job", priority=10)
    return Snapshot(now=NOW, pools=(pool,), nodes=tuple(nodes), jobsets=(js,), pods=tuple(pods))


def base_node(i: int = 0) -> Node:
    return make_nodes(make_pool("p"), ready_since=NOW - 3600)[i]


def state(snap: Snapshot, settings: Settings = SETTINGS) -> PoolState:
    status = decide(snap, settings).pool("p")
    assert status is not None
    return status.state


def step(snap: Snapshot, at: float, settings: Settings = SETTINGS) -> tuple[Snapshot, Decision]:
    """Decide at time ``at`` and return the snapshot with the actions applied."""
    snap = replace(snap, now=at)
    d = decide(snap, settings)
    return apply_actions(snap, d.actions), d


@pytest.mark.parametrize(
    "node",
    [
        fail_node(base_node(), NOW - 11, status="Unknown"),
        fail_node(base_node(), NOW - 11, status="False"),
        replace(
            base_node(), conditions=(*base_node().conditions, Condition("KernelDeadlock", "True", NOW - 11))
        ),
        replace(base_node(), taints=(Taint(constants.UNREACHABLE_TAINT, "NoExecute", time_added=NOW - 11),)),
        replace(
            base_node(), labels={**base_node().labels, constants.SCHEDULED_MAINTENANCE_LABEL: str(NOW - 11)}
        ),
        replace(base_node(), conditions=(), created=NOW - 11),
    ],
    ids=["unknown", "not-ready", "npd-condition", "unreachable-taint", "scheduled-maintenance", "no-ready"],
)
def test_timed_signals_declare_after_t_bad(node: Node) -> None:
    # Maintenance-aware moves declare a pool past its move deadline at once (test_hotswap_maintenance);
    # here the window's own signal is under test.
    plain = SETTINGS.replace(maintenance_moves=False)
    assert state(one_pool({2: node}), plain) is PoolState.UNHEALTHY
    younger = replace(one_pool({2: node}), now=NOW - 2)
    assert state(younger, plain) is PoolState.SUSPECT


def test_configured_taint_and_condition_are_signals() -> None:
    settings = Settings(max_bad_node_fraction=1.0, problem_taint_keys=("example.com/tpu-ici-broken",))
    node = replace(base_node(), taints=(Taint("example.com/tpu-ici-broken", "NoSchedule"),))
    assert state(one_pool({0: node}), settings) is PoolState.SUSPECT
    assert state(one_pool({0: node}), SETTINGS) is PoolState.HEALTHY
    npd = replace(
        base_node(), conditions=(*base_node().conditions, Condition("KernelDeadlock", "False", NOW))
    )
    assert state(one_pool({0: npd})) is PoolState.HEALTHY


def test_future_scheduled_maintenance_is_not_a_problem_until_the_lead() -> None:
    node = replace(
        base_node(), labels={**base_node().labels, constants.SCHEDULED_MAINTENANCE_LABEL: str(NOW + 600)}
    )
    assert state(one_pool({0: node})) is PoolState.HEALTHY
    lead = Settings(max_bad_node_fraction=1.0, maintenance_lead_seconds=3600)
    assert state(one_pool({0: node}), lead) is PoolState.UNHEALTHY


@pytest.mark.parametrize(
    "node",
    [
        replace(
            base_node(),
            labels={
                **base_node().labels,
                constants.ACTIVE_MAINTENANCE_LABEL: constants.ACTIVE_MAINTENANCE_VALUE,
            },
        ),
        replace(base_node(), taints=(Taint(constants.IMPENDING_TERMINATION_TAINT, "NoSchedule"),)),
        replace(base_node(), taints=(Taint(constants.MAINTENANCE_WINDOW_TAINT, "NoSchedule"),)),
    ],
    ids=["active-maintenance-label", "impending-termination", "maintenance-window"],
)
def test_untimed_signals_are_stamped_then_declared(node: Node) -> None:
    snap, d = step(one_pool({1: node}), NOW)
    assert d.pools[0].state is PoolState.SUSPECT
    stamps = {n.annotations.get(constants.SUSPECT_SINCE_ANNOTATION) for n in snap.nodes}
    assert stamps == {format_time(NOW)}, "stamped identically on every node of the pool"
    snap, d = step(snap, NOW + 9)
    assert d.pools[0].state is PoolState.SUSPECT and d.actions == ()
    snap, d = step(snap, NOW + 10)
    assert d.pools[0].state is PoolState.UNHEALTHY
    assert all(constants.SUSPECT_SINCE_ANNOTATION not in n.annotations for n in snap.nodes)


def test_incomplete_slice_is_bad() -> None:
    snap, d = step(one_pool(count=3), NOW)
    assert d.pools[0].state is PoolState.SUSPECT
    assert "slice incomplete: 3/4" in d.pools[0].reason
    _, d = step(snap, NOW + 10)
    assert d.pools[0].state is PoolState.UNHEALTHY


def test_suspect_pool_that_clears_removes_its_stamp() -> None:
    snap, _ = step(one_pool(count=3), NOW)
    full = replace(snap, nodes=(*snap.nodes, replace(base_node(3), annotations={})))
    after, d = step(full, NOW + 5)
    assert d.pools[0].state is PoolState.HEALTHY
    assert all(constants.SUSPECT_SINCE_ANNOTATION not in n.annotations for n in after.nodes)


def test_recovery_clock_survives_a_controller_restart() -> None:
    dead = fail_node(base_node(0), NOW - 20)
    snap, d = step(one_pool({0: dead}), NOW)
    assert d.pools[0].declared_now
    healed = replace(snap, nodes=(heal_node(snap.nodes[0], NOW + 5), *snap.nodes[1:]))
    snap, d = step(healed, NOW + 10)
    assert d.pools[0].state is PoolState.RECOVERING
    assert snap.nodes[0].annotations[constants.CLEAN_SINCE_ANNOTATION] == format_time(NOW + 10)
    # A new leader sees only the cluster: same conclusions from the annotations.
    _, d = step(snap, NOW + 129)
    assert d.pools[0].state is PoolState.RECOVERING and d.actions == ()
    after, d = step(snap, NOW + 130)
    assert d.pools[0].recovered_now
    assert all(not n.has_taint(constants.UNHEALTHY_TAINT_KEY) for n in after.nodes)
    assert all(constants.UNHEALTHY_SINCE_ANNOTATION not in n.annotations for n in after.nodes)
    assert all(constants.UNHEALTHY_HISTORY_ANNOTATION in n.annotations for n in after.nodes)


def test_a_relapse_during_recovery_restarts_the_clean_clock() -> None:
    dead = fail_node(base_node(0), NOW - 20)
    snap, _ = step(one_pool({0: dead}), NOW)
    snap, _ = step(replace(snap, nodes=(heal_node(snap.nodes[0], NOW + 5), *snap.nodes[1:])), NOW + 10)
    relapsed = replace(snap, nodes=(fail_node(snap.nodes[0], NOW + 50), *snap.nodes[1:]))
    snap, d = step(relapsed, NOW + 51)
    assert d.pools[0].state is PoolState.UNHEALTHY
    assert all(constants.CLEAN_SINCE_ANNOTATION not in n.annotations for n in snap.nodes)
    snap = replace(snap, nodes=(heal_node(snap.nodes[0], NOW + 60), *snap.nodes[1:]))
    _, d = step(snap, NOW + 60 + 119)
    assert d.pools[0].state is PoolState.RECOVERING


def test_replaced_node_gets_the_taint_and_state() -> None:
    dead = fail_node(base_node(0), NOW - 20)
    snap, _ = step(one_pool({0: dead}), NOW)
    fresh = replace(
        base_node(0), name="p-n9", annotations={}, conditions=(Condition("Ready", "True", NOW + 1),)
    )
    rebuilt = replace(snap, nodes=(*snap.nodes[1:], fresh))
    _, d = step(rebuilt, NOW + 2)
    assert d.pools[0].state is PoolState.RECOVERING, "the replacement is clean, the clock starts"
    patches = {a.node: a for a in d.actions if isinstance(a, PatchNode)}
    assert sorted(patches) == ["p-n1", "p-n2", "p-n3", "p-n9"]
    assert [t.key for t in patches["p-n9"].add_taints] == [constants.UNHEALTHY_TAINT_KEY]
    assert dict(patches["p-n9"].set_annotations)[constants.UNHEALTHY_SINCE_ANNOTATION] == format_time(NOW)
    for name in ("p-n1", "p-n2", "p-n3"):
        assert patches[name].add_taints == ()
        assert dict(patches[name].set_annotations) == {constants.CLEAN_SINCE_ANNOTATION: format_time(NOW + 2)}


def pod_on(node: str, *, terminating_since: float | None, jobset: str = "default/job") -> Pod:
    return Pod(
        "default",
        f"pod-{node}",
        f"uid-{node}",
        jobset=jobset,
        job="job-slice-0",
        node=node,
        phase="Running",
        deletion_timestamp=terminating_since,
    )


@pytest.mark.parametrize(
    ("node", "deleted"),
    [
        (fail_node(base_node(0), NOW - 31, status="Unknown"), True),
        (fail_node(base_node(0), NOW - 31, status="False"), True),
        (fail_node(base_node(0), NOW - 29, status="Unknown"), False),
        (base_node(0), False),
    ],
    ids=["dead-unknown", "dead-notready", "not-yet-confirmed", "merely-slow"],
)
def test_stuck_terminating_pods_are_force_deleted_only_on_confirmed_dead_nodes(
    node: Node, deleted: bool
) -> None:
    stuck = pod_on(node.name, terminating_since=NOW - 3000)
    d = decide(one_pool({0: node}, pods=[stuck]), SETTINGS)
    deletes = [a for a in d.actions if isinstance(a, ForceDeletePod)]
    assert deletes == (
        [ForceDeletePod("default", stuck.name, stuck.uid, node.name, "default/job", deletes[0].reason)]
        if deleted
        else []
    )


def test_unmanaged_pods_are_never_force_deleted_or_evicted() -> None:
    dead = fail_node(base_node(0), NOW - 300)
    stuck = pod_on(dead.name, terminating_since=NOW - 300, jobset="default/other")
    running = pod_on("p-n1", terminating_since=None, jobset="default/other")
    d = decide(one_pool({0: dead}, pods=[stuck, running]), SETTINGS)
    assert not any(isinstance(a, ForceDeletePod | EvictPod) for a in d.actions)


def test_managed_pods_on_unhealthy_pool_are_failed_fast_even_on_healthy_nodes() -> None:
    pool = make_pool("p")
    nodes = list(make_nodes(pool, ready_since=NOW - 3600))
    nodes[3] = fail_node(nodes[3], NOW - 15)
    js = make_jobset("job", priority=10)
    pods = running_pods(js, [pool], {"p": nodes})
    d = decide(Snapshot(NOW, (pool,), tuple(nodes), (js,), pods), SETTINGS)
    evicted = sorted(a.node or "" for a in d.actions if isinstance(a, EvictPod))
    assert evicted == ["p-n0", "p-n1", "p-n2", "p-n3"]
    off = decide(Snapshot(NOW, (pool,), tuple(nodes), (js,), pods), SETTINGS.replace(fail_fast=False))
    assert not any(isinstance(a, EvictPod) for a in off.actions)


def test_other_accelerators_are_ignored() -> None:
    pool = make_pool("cpu", accelerator="nvidia-h100")
    nodes = tuple(fail_node(n, NOW - 100) for n in make_nodes(pool))
    d = decide(Snapshot(NOW, (pool,), nodes), SETTINGS)
    assert d.pools == () and d.actions == ()


# --- a held deletion stops counting as draining -----------------------------------------------


def pod(**kw: object) -> Pod:
    base = Pod(
        "team-a",
        "p",
        "uid-p",
        jobset="team-a/train",
        jobset_uid="uid-js",
        job="train-slice-0",
        job_uid="uid-job",
    )
    return replace(base, **kw)  # type: ignore[arg-type]


def test_a_deletion_drains_only_until_it_is_overdue() -> None:
    now = 1000.0
    fresh = pod(deletion_timestamp=now + 30, deletion_grace=30.0)
    assert still_draining(fresh, now)
    held = pod(deletion_timestamp=now - DELETION_OVERDUE_SECONDS - 1, deletion_grace=30.0)
    assert not still_draining(held, now)
    # A year of grace period counts for MAX_DRAIN_GRACE_SECONDS only.
    asked = now - MAX_DRAIN_GRACE_SECONDS - DELETION_OVERDUE_SECONDS - 1
    endless = pod(deletion_timestamp=asked + 365 * 86400, deletion_grace=365 * 86400.0)
    assert not still_draining(endless, now)
    assert still_draining(replace(endless, deletion_timestamp=now + 365 * 86400 - 60), now)
    assert not still_draining(pod(), now)
