"""Each upstream behaviour the simulator models, pinned by a test whose docstring cites its source
(the same sources as docs/benchmarks.md): the node lifecycle controller, taint-based eviction, PodGC,
GKE's repair of a multi-host slice, and the failure kinds with their GKE signals."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from tpu_platform.config import parse_platform
from tpu_platform.hotswap.core import constants as k
from tpu_platform.plan import load_stack_config, parse_stack_config, stack_file
from tpu_platform.sim.failures import (
    CHIP_ERROR,
    HOST_DEATH,
    KUBELET_RESTART,
    MAINTENANCE,
    MASS_EVENT,
    SPOT_PREEMPTION,
)
from tpu_platform.sim.infra import UNSCHEDULABLE_TAINT
from tpu_platform.sim.params import Timings, floor_seconds
from tpu_platform.sim.policies import Hotswap
from tpu_platform.sim.run import Result, Scenario, make_policy, run, stack_timings
from tpu_platform.sim.scenarios import seed_scenario
from tpu_platform.sim.traces import Failure, mass_trace, pool_trace
from tpu_platform.sim.versions import kubernetes_minor, node_monitor_grace_s
from tpu_platform.sim.workload import pools_from_stack

T = Timings()
FAIL_AT = 1800.0
HIGH = "default/high"


def high_pool(policy: str, scenario: Scenario) -> str:
    """The slice the high-priority JobSet holds at FAIL_AT under ``policy`` (placement before the
    incident does not depend on the trace)."""
    quiet = run(replace(scenario, trace=(), end=FAIL_AT), make_policy(policy, scenario))
    (pool,) = {iv.lane for iv in quiet.metrics.occupancy if iv.key == HIGH and iv.end >= FAIL_AT}
    return pool


def hit(policy: str, kind: str, *, spare: bool = False, back_after: float | None = None, **kw: Any) -> Result:
    """One incident of ``kind`` at FAIL_AT on the high-priority JobSet's slice, under ``policy``."""
    scenario = seed_scenario(spare=spare, **kw)
    pool = high_pool(policy, scenario)
    trace = (Failure(FAIL_AT, f"{pool}-n0", back_after=back_after, kind=kind),)
    return run(replace(scenario, trace=trace), make_policy(policy, scenario))


def episode(r: Result) -> Any:
    (ep,) = [e for e in r.metrics.episodes if e.workload == HIGH]
    return ep


# --- Kubernetes version -----------------------------------------------------------------------------
def test_node_monitor_grace_period_is_50_s_from_kubernetes_1_32() -> None:
    """kubernetes/kubernetes #126287 raised the node-monitor-grace-period default from 40 s to 50 s in
    1.32 (``pkg/controller/nodelifecycle/config/v1alpha1/defaults.go``)."""
    assert kubernetes_minor("1.31.2-gke.1115000") == 31
    assert kubernetes_minor("1.33") == 33
    assert node_monitor_grace_s(31) == 40.0
    assert node_monitor_grace_s(32) == 50.0
    with pytest.raises(ValueError, match=r"cluster\.minMasterVersion"):
        kubernetes_minor("latest")


def test_the_stacks_version_sets_the_grace_period() -> None:
    """A stack pinned to the TPU v6e minimum (1.31.2) gets 40 s; a release channel's default gets 50 s."""
    prod = parse_stack_config(load_stack_config(stack_file("prod")))
    assert stack_timings(prod).node_monitor_grace_s == 50.0
    raw = {
        "project": "sim-project",
        "region": "us-east5",
        "zone": "us-east5-b",
        "cluster": {"name": "c", "minMasterVersion": "1.31.2-gke.1115000"},
        "slicePools": [{"name": "s", "topology": "4x4"}],
        "teams": [{"name": "t", "quota": [{"topology": "4x4", "slices": 1}]}],
    }
    assert stack_timings(parse_platform(raw)).node_monitor_grace_s == 40.0


# --- node lifecycle, taint eviction, PodGC ----------------------------------------------------------
def test_a_silent_node_goes_not_ready_after_the_grace_period_with_the_unreachable_taints() -> None:
    """kubernetes/kubernetes ``pkg/controller/nodelifecycle/node_lifecycle_controller.go``
    (``tryUpdateNodeHealth``, ``processTaintBaseEviction``): Ready=Unknown after node-monitor-grace-period
    without status, then ``node.kubernetes.io/unreachable`` NoSchedule and NoExecute (with timeAdded)."""
    scenario = seed_scenario(spare=True)
    pool = high_pool("recipe", scenario)
    node = f"{pool}-n0"
    just_before = replace(scenario, trace=(Failure(FAIL_AT, node),), end=FAIL_AT + T.node_monitor_grace_s - 1)
    r = run(just_before, make_policy("recipe", scenario))
    assert r.cluster.nodes[node].ready
    after = run(replace(just_before, end=FAIL_AT + T.node_monitor_grace_s), make_policy("recipe", scenario))
    api = after.cluster.nodes[node].api
    ready = api.condition("Ready")
    assert ready is not None and ready.status == "Unknown"
    assert ready.last_transition == FAIL_AT + T.node_monitor_grace_s
    effects = {t.effect for t in api.taints if t.key == k.UNREACHABLE_TAINT}
    assert effects == {"NoSchedule", "NoExecute"}


def test_taint_eviction_deletes_the_pod_after_its_toleration_and_it_stays_terminating() -> None:
    """``pkg/controller/tainteviction/taint_eviction.go`` (``processPodOnNode``): the pod is deleted when
    its ``tolerationSeconds`` for the NoExecute taint run out (300 s, added by the DefaultTolerationSeconds
    admission plugin); a dead kubelet never confirms the deletion."""
    scenario = seed_scenario(spare=True)
    pool = high_pool("recipe", scenario)
    evict_at = FAIL_AT + T.node_monitor_grace_s + T.toleration_s
    r = run(
        replace(scenario, trace=(Failure(FAIL_AT, f"{pool}-n0"),), end=evict_at + 60),
        make_policy("recipe", scenario),
    )
    stuck = [p for p in r.cluster.pods.values() if p.node == f"{pool}-n0"]
    assert stuck and all(p.deletion == evict_at and p.disruption == "DeletionByTaintManager" for p in stuck)


def test_podgc_fails_and_deletes_pods_of_a_deleted_node_after_its_quarantine() -> None:
    """``pkg/controller/podgc/gc_controller.go`` (``gcOrphaned``): pods bound to a Node that no longer
    exists are marked Failed and deleted after the 40 s quarantine; GKE's repair deletes the Nodes."""
    scenario = seed_scenario(spare=True)
    pool = high_pool("recipe", scenario)
    repair_at = FAIL_AT + T.node_monitor_grace_s + T.auto_repair_after_s
    trace = (Failure(FAIL_AT, f"{pool}-n0"),)
    before = run(
        replace(scenario, trace=trace, end=repair_at + T.orphan_gc_s - 1), make_policy("recipe", scenario)
    )
    assert any(p.node == f"{pool}-n0" for p in before.cluster.pods.values()), "still there in quarantine"
    after = run(
        replace(scenario, trace=trace, end=repair_at + T.orphan_gc_s + 1), make_policy("recipe", scenario)
    )
    assert not any(p.node == f"{pool}-n0" for p in after.cluster.pods.values())


@pytest.mark.parametrize("replaces", [True, False])
def test_gke_repairs_the_whole_slice_either_way_sources_disagree_on_the_node_objects(replaces: bool) -> None:
    """GKE recreates a multi-host TPU slice as a unit (GKE "About TPUs in GKE"). Whether the Node
    objects are deleted and new ones register, or the same ones go Ready again, is not documented;
    both are modelled. Either way the slice is usable again after the repair."""
    timings = replace(
        T, repair_replaces_nodes=replaces, hung_guest_fraction=0.0, compute_restart_fraction=0.0
    )
    scenario = seed_scenario(spare=False, timings=timings, after=4000.0)
    pool = high_pool("recipe", scenario)
    uids = {
        n: nd.api.uid
        for n, nd in run(
            replace(scenario, trace=(), end=FAIL_AT), make_policy("recipe", scenario)
        ).cluster.nodes.items()
    }
    r = run(replace(scenario, trace=(Failure(FAIL_AT, f"{pool}-n0"),)), make_policy("recipe", scenario))
    ((repaired_pool, _, done),) = r.metrics.repairs
    assert repaired_pool == pool and done is not None
    members = [n for n in r.cluster.nodes.values() if n.pool == pool]
    assert len(members) == 4 and all(n.ready and n.alive for n in members)
    same = all(n.api.uid == uids[n.name] for n in members)
    assert same is not replaces
    assert episode(r).end is not None


# --- failure kinds ----------------------------------------------------------------------------------
def test_a_chip_error_fails_the_pod_at_once_and_leaves_the_node_ready_without_chips() -> None:
    """A TPU chip or ICI error with the kubelet alive: the trainer exits with an error (pod Failed, no
    DisruptionTarget, so it counts against maxRestarts), the Node stays Ready, and the device plugin
    withdraws the chips, so nothing schedules there until GKE repairs the slice."""
    r = hit("recipe", CHIP_ERROR, spare=True)
    ep = episode(r)
    assert ep.kind == CHIP_ERROR and ep.interrupted == FAIL_AT
    assert ep.seconds is not None and ep.seconds >= floor_seconds(T, CHIP_ERROR) - T.schedule_s
    assert r.metrics.counted_restarts >= 1


@pytest.mark.parametrize("policy", ["recipe", "kueue_tas", "hotswap"])
def test_a_short_kubelet_restart_interrupts_nothing(policy: str) -> None:
    """A kubelet restart shorter than node-monitor-grace-period leaves the node Ready and the
    containers running (the kubelet does not own them): a 0 s recovery under every policy."""
    r = hit(policy, KUBELET_RESTART, back_after=T.node_monitor_grace_s - 10)
    ep = episode(r)
    assert ep.interrupted is None and ep.seconds == 0.0 and ep.resumed_seconds == 0.0


def test_a_long_kubelet_restart_is_survived_by_the_recipe_and_acted_on_by_the_others() -> None:
    """Past the grace period the node goes NotReady: the recipe's 300 s toleration outlasts the restart;
    the controller fails the slice fast (NotReady + T_bad) and kueue_tas's 30 s toleration evicts, so
    both interrupt a JobSet that would have been fine."""
    back = T.node_monitor_grace_s + 39.0
    assert episode(hit("recipe", KUBELET_RESTART, back_after=back)).interrupted is None
    assert episode(hit("hotswap", KUBELET_RESTART, back_after=back)).interrupted is not None
    assert episode(hit("kueue_tas", KUBELET_RESTART, back_after=back)).interrupted is not None


@pytest.mark.parametrize("policy", ["recipe", "kueue_tas", "hotswap"])
def test_maintenance_drains_with_a_checkpoint_and_nothing_waits_for_the_window(policy: str) -> None:
    """GKE labels the nodes ``cloud.google.com/scheduled-maintenance-time`` with the notice, then
    cordons (``node.kubernetes.io/unschedulable``) and drains the slice; the trainer checkpoints on
    SIGTERM, so no work is lost, and the JobSet runs elsewhere long before the slice is back. (The
    hotswap controller's maintenance-aware moves, off here, move it before: test_sim_maintenance.)"""
    if policy == "hotswap":
        scenario = seed_scenario(spare=True)
        off = replace(scenario, settings=scenario.settings.replace(maintenance_moves=False))
        pool = high_pool(policy, off)
        r = run(
            replace(off, trace=(Failure(FAIL_AT, f"{pool}-n0", kind=MAINTENANCE),)), Hotswap(off.settings)
        )
    else:
        r = hit(policy, MAINTENANCE, spare=True)
    ep = episode(r)
    assert ep.lost_s == 0.0
    assert ep.seconds is not None and ep.seconds < T.maintenance_s / 2
    assert ep.seconds >= floor_seconds(T, MAINTENANCE) - T.schedule_s
    cordoned = [
        n for n in r.cluster.nodes.values() if any(t.key == UNSCHEDULABLE_TAINT for t in n.api.taints)
    ]
    assert not cordoned, "uncordoned once the maintenance is over"


def test_the_maintenance_notice_labels_the_slice_ahead_of_the_window() -> None:
    scenario = seed_scenario(spare=True)
    pool = high_pool("recipe", scenario)
    trace = (Failure(FAIL_AT, f"{pool}-n0", kind=MAINTENANCE),)
    r = run(replace(scenario, trace=trace, end=FAIL_AT - 1), make_policy("recipe", scenario))
    labels = [
        n.api.labels.get(k.SCHEDULED_MAINTENANCE_LABEL) for n in r.cluster.nodes.values() if n.pool == pool
    ]
    assert labels == [f"{FAIL_AT:.0f}"] * 4


def test_a_spot_preemption_taints_stops_pods_and_takes_the_nodes_after_the_notice() -> None:
    """GKE "Spot VMs" (https://cloud.google.com/kubernetes-engine/docs/concepts/spot-vms): a 30 s
    notice, the ``cloud.google.com/impending-node-termination`` taint, the kubelet's graceful node
    shutdown sets the pods Failed (DisruptionTarget) within 15 s, then the VMs are gone."""
    scenario = seed_scenario(spare=True)
    pool = high_pool("recipe", scenario)
    trace = (Failure(FAIL_AT, f"{pool}-n0", kind=SPOT_PREEMPTION),)
    during = run(
        replace(scenario, trace=trace, end=FAIL_AT + T.spot_notice_s - 1), make_policy("recipe", scenario)
    )
    members = [n for n in during.cluster.nodes.values() if n.pool == pool]
    assert members and all(n.api.has_taint(k.IMPENDING_TERMINATION_TAINT) for n in members)
    ep = episode(during)
    assert ep.interrupted == FAIL_AT + T.pod_termination_s, "stopped by the kubelet, not at the notice"
    assert during.summary.restarts >= 1 and during.metrics.counted_restarts == 0, (
        "Failed with DisruptionTarget: the repository's pod failure policy makes the restart free"
    )
    gone = run(
        replace(scenario, trace=trace, end=FAIL_AT + T.spot_notice_s + 1), make_policy("recipe", scenario)
    )
    assert not [n for n in gone.cluster.nodes.values() if n.pool == pool]


def test_slice_level_and_mass_traces() -> None:
    """Maintenance and Spot incidents are per slice; a mass event kills a host in three slices at once."""
    cfg = parse_stack_config(load_stack_config(stack_file("prod")))
    pools = pools_from_stack(cfg)
    mass = mass_trace(pools, seed=3, start=0.0, end=40 * 86400.0, mean_s=2 * 86400.0)
    by_time: dict[float, set[str]] = {}
    for f in mass:
        assert f.kind == MASS_EVENT
        by_time.setdefault(f.at, set()).add(f.node.rsplit("-n", 1)[0])
    assert by_time and all(len(p) == 3 for p in by_time.values())
    spot = pool_trace(pools, seed=3, start=0.0, end=40 * 86400.0, mean_s=5 * 86400.0, kind=SPOT_PREEMPTION)
    assert spot and all(f.node.endswith("-n0") for f in spot)
    assert Failure(1.0, "x", kind=HOST_DEATH).back_after is None
    with pytest.raises(ValueError, match="needs back_after"):
        Failure(1.0, "x", kind=KUBELET_RESTART)
    with pytest.raises(ValueError, match="unknown kind"):
        Failure(1.0, "x", kind="meteor")
