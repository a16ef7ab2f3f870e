"""The scheduler-only recipe on the seed scenarios: what it does and does not do (failure-model.md).

Bounds come from the timing parameters, not from recorded runs: a repair-bound recovery cannot start
before NotReady + auto-repair + PodGC's quarantine, and finishes within one restart after that.
"""

from __future__ import annotations

from tpu_platform.sim.model import CAUSE_SCHEDULER
from tpu_platform.sim.params import Timings
from tpu_platform.sim.policies import Baseline
from tpu_platform.sim.run import Result, run, stack_scenario
from tpu_platform.sim.scenarios import seed_scenario, seed_stack

T = Timings()
FAIL_AT = 1800.0
RESTART = T.jobset_recreate_s + 2 * T.schedule_s + T.follower_create_s + T.pod_startup_s
"""An unobstructed restart: new Jobs, leader scheduled, followers created and scheduled, startup."""
REPAIR_BOUND = T.node_monitor_grace_s + T.auto_repair_after_s + T.orphan_gc_s
"""When pods on the dead slice finally vanish: NotReady, auto-repair deletes the nodes, PodGC."""


def mttr(r: Result) -> float:
    (episode,) = r.metrics.episodes
    assert episode.workload == "default/high" and episode.start == FAIL_AT
    assert episode.seconds is not None, "recovered before the end"
    return episode.seconds


def pools_after(r: Result, key: str, t: float) -> set[str]:
    return {iv.lane for iv in r.metrics.occupancy if iv.key == f"default/{key}" and iv.start >= t}


def failed_pool(r: Result) -> str:
    ((_, _, pool),) = r.metrics.failures
    return pool


def test_blocking_recreate_with_a_spare_waits_for_the_repair_then_uses_the_spare() -> None:
    r = run(seed_scenario(spare=True), Baseline())
    assert REPAIR_BOUND <= mttr(r) <= REPAIR_BOUND + RESTART + T.pod_termination_s
    broken = failed_pool(r)
    (landed,) = pools_after(r, "high", FAIL_AT)
    assert landed != broken and landed not in pools_after(r, "low-0", 0.0)
    assert r.summary.preemptions == {}
    assert [x.workload for x in r.metrics.losses] == ["default/high"], "low is untouched"


def test_recreate_restarts_at_the_taint_eviction_but_its_jobs_wait_for_the_stuck_pod() -> None:
    """The 300 s taint eviction makes the pod on the dead node Terminating, which fails its Job (no pod
    failure policy: podReplacementPolicy TerminatingOrFailed), and JobSet restarts; but it deletes the
    Jobs with Foreground propagation and recreates a Job only once its predecessor is gone
    (kubernetes-sigs/jobset v0.12.0 ``pkg/controllers/jobset_controller.go``, ``deleteJobs`` /
    ``shouldCreateJob``; jobset #576), so the restart waits for PodGC after the repair deleted the node,
    as BlockingRecreate does."""
    r = run(seed_scenario(spare=True, restart_strategy="Recreate", pod_failure_policy=False), Baseline())
    assert REPAIR_BOUND <= mttr(r) <= REPAIR_BOUND + RESTART + T.pod_termination_s
    assert failed_pool(r) not in pools_after(r, "high", FAIL_AT)
    assert r.summary.hazards == 0
    assert r.summary.restarts == 1, "one restart: the Jobs wait, they are not recreated twice"


def test_without_a_spare_the_leader_preempts_one_node_of_low_which_returns_after_repair() -> None:
    """kube-scheduler's DefaultPreemption (kubernetes/kubernetes
    ``pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go``, ``SelectVictimsOnNode``;
    ``pkg/scheduler/framework/preemption/preemption.go``, ``pickOneNodeForPreemption``) evicts the
    lower-priority pod of one node and nominates the preemptor there; JobSet's exclusive placement
    (kubernetes-sigs/jobset v0.12.0 ``pkg/webhooks/pod_webhook.go``, ``setExclusiveAffinities``, scoped
    to pods of the same priority) lets the high-priority leader share the pool with the victim's other
    pods, and ``setNodeSelector`` pins its followers there."""
    r = run(seed_scenario(spare=False), Baseline())
    assert REPAIR_BOUND <= mttr(r) <= REPAIR_BOUND + RESTART + 2 * T.pod_termination_s
    assert r.summary.preemptions == {"scheduler": 1}
    (low_loss,) = [x for x in r.metrics.losses if x.workload == "default/low-0"]
    assert low_loss.cause == CAUSE_SCHEDULER and low_loss.seconds > 0
    broken = failed_pool(r)
    assert pools_after(r, "high", FAIL_AT) == pools_after(r, "low-0", 0.0) - {broken}
    ((pool, _, repaired),) = r.metrics.repairs
    assert pool == broken and repaired is not None
    back = [iv for iv in r.metrics.occupancy if iv.key == "default/low-0" and iv.lane == broken]
    assert back and back[-1].start >= repaired - T.node_register_spread_s, "low lands on the recovered pool"
    last_run = max((iv for iv in r.metrics.runs if iv.key == "default/low-0"), key=lambda iv: iv.start)
    assert last_run.end == r.scenario.end and last_run.start > repaired, "and runs there"


def test_under_recreate_each_job_waits_only_for_its_own_predecessor() -> None:
    """Under Recreate a Job of the same name is created once *its* predecessor is gone
    (kubernetes-sigs/jobset v0.12.0 ``pkg/controllers/jobset_controller.go``, ``shouldCreateJob``), so in
    a two-slice JobSet the Job on the healthy slice is recreated right after the 300 s taint eviction,
    and the Job of the broken slice only after PodGC removed its stuck pod. The recreated leader does not
    land on the broken slice: the stuck pod of the other Job still repels it (exclusive placement's
    anti-affinity counts Terminating pods until they are gone)."""
    from dataclasses import replace

    base = seed_scenario(spare=False, restart_strategy="Recreate", pod_failure_policy=False)
    high = replace(base.workloads[0], slices=2)
    scenario = stack_scenario(
        seed_stack(3), trace=base.trace, end=base.end, workloads=[high, *base.workloads[1:]]
    )
    r = run(scenario, Baseline())
    w = r.cluster.workloads["default/high"]
    assert w.restarts == 1
    created = {p.slice_index: p.created for p in w.current_pods() if p.leader}
    broken = failed_pool(r)
    evicted = FAIL_AT + T.node_monitor_grace_s + T.toleration_s
    healthy, stuck = sorted(created, key=lambda i: created[i])
    assert created[healthy] <= evicted + T.pod_termination_s + T.jobset_recreate_s + T.schedule_s
    assert created[stuck] >= FAIL_AT + REPAIR_BOUND
    assert r.summary.hazards == 0
    assert broken not in {p.pool for p in w.current_pods() if p.created < FAIL_AT + REPAIR_BOUND}
