"""The ``kueue_tas`` policy: Kueue 0.19.2 TopologyAwareScheduling with failed-node replacement and
FailFast, FailureRecoveryPolicy and shorter tolerations, each step pinned to Kueue's source."""

from __future__ import annotations

from dataclasses import replace

from tpu_platform.sim.failures import CHIP_ERROR, HOST_DEATH
from tpu_platform.sim.kueue_tas import KueueTas
from tpu_platform.sim.params import Timings
from tpu_platform.sim.run import Result, make_policy, run
from tpu_platform.sim.scenarios import seed_scenario
from tpu_platform.sim.traces import Failure

from .test_sim_upstream import FAIL_AT, HIGH, episode, high_pool, hit

T = Timings()
TAINT_EVICTED = FAIL_AT + T.node_monitor_grace_s + T.tas_toleration_s
"""NotReady, then the user's 30 s toleration: the pod on the dead node gets its deletionTimestamp."""
FORCE_DELETED = TAINT_EVICTED + T.termination_grace_s + T.frp_forceful_s
"""FailureRecoveryPolicy: deletionTimestamp (request + grace period) + forcefulTerminationGracePeriod."""
RESTART = T.jobset_recreate_s + 2 * T.schedule_s + T.follower_create_s + T.pod_startup_s


def tas(**kw: object) -> Result:
    return hit("kueue_tas", HOST_DEATH, **kw)  # type: ignore[arg-type]


def test_tas_places_each_job_on_one_whole_healthy_slice() -> None:
    """``pkg/cache/scheduler/tas_nodes_cache.go``: TAS counts capacity only on Ready, schedulable nodes,
    and the assignment becomes the pods' node selector (``pkg/controller/tas/topology_ungater.go``)."""
    r = tas(spare=True)
    w = r.cluster.workloads[HIGH]
    assert w.assigned is not None and len(w.assigned) == 1
    pods = w.current_pods()
    assert pods and {p.pool for p in pods} == set(w.assigned)
    assert r.summary.hazards == 0


def test_the_workload_is_evicted_only_once_its_pod_on_the_not_ready_node_terminates() -> None:
    """``pkg/controller/tas/node_controller.go`` (``getWorkloadStatus`` / ``checkPodsOnNode``): with
    TASReplaceNodeOnPodTermination (Beta, on in 0.19.2) a NotReady node fails the workload only when it
    has no progressing pod there; taint eviction after the 30 s toleration makes the pod terminate. No
    node of the slice is free to replace it, so FailFast evicts (``evictWorkloadIfNeeded``)."""
    r = tas(spare=True)
    ep = episode(r)
    assert ep.acted is not None
    assert TAINT_EVICTED <= ep.acted <= TAINT_EVICTED + 1.0


def test_failure_recovery_policy_force_deletes_the_stuck_pod_which_unblocks_the_restart() -> None:
    """``pkg/controller/failurerecovery/pod_termination_controller.go`` (``Reconcile``): a terminating pod
    with ``kueue.x-k8s.io/safe-to-forcefully-delete`` on an unreachable node is set Failed and deleted one
    minute after its deletionTimestamp; only then can JobSet recreate the Job (``shouldCreateJob``)."""
    scenario = seed_scenario(spare=True)
    pool = high_pool("kueue_tas", scenario)
    policy = KueueTas()
    r = run(replace(scenario, trace=(Failure(FAIL_AT, f"{pool}-n0"),)), policy)
    assert policy.force_deleted >= 1
    ep = episode(r)
    assert ep.seconds is not None
    assert FORCE_DELETED - FAIL_AT <= ep.seconds <= FORCE_DELETED - FAIL_AT + RESTART + T.kueue_admit_s + 1


def test_without_a_spare_kueue_preempts_a_lower_priority_workload_for_the_slice() -> None:
    """Requeued, the high-priority workload fits its quota but no healthy slice is free: Kueue preempts
    the lower-priority workload of its ClusterQueue (withinClusterQueue: LowerPriority), a whole JobSet."""
    r = tas(spare=False)
    assert r.summary.preemptions.get("kueue") == 1
    assert episode(r).end is not None
    assert r.summary.hazards == 0


def test_a_chip_error_is_not_a_node_failure_to_tas_so_the_restart_waits_for_gke() -> None:
    """A Ready, untainted node is healthy to the TAS node controller whatever its pods do
    (``getWorkloadStatus``: ready and no scheduling taints), so the restarted Job stays assigned to the
    slice whose chips are gone; it moves only when GKE's repair deletes the nodes ("Node not found")."""
    r = hit("kueue_tas", CHIP_ERROR, spare=True)
    ep = episode(r)
    assert ep.seconds is not None and ep.seconds >= T.chip_repair_after_s


def test_kueue_tas_beats_the_recipe_and_trails_the_controller_on_a_dead_host() -> None:
    recipe = episode(hit("recipe", HOST_DEATH, spare=True)).seconds
    kueue = episode(tas(spare=True)).seconds
    hot = episode(hit("hotswap", HOST_DEATH, spare=True)).seconds
    assert recipe is not None and kueue is not None and hot is not None
    assert hot < kueue < recipe


def test_the_policy_names() -> None:
    assert make_policy("kueue_tas", seed_scenario(spare=True)).name == "kueue_tas"
