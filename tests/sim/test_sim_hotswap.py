"""The controller's decision core driving the simulated cluster on the seed scenarios.

Every run here uses ``verify_idle``: whenever the simulator would skip a reconcile because the cluster is
quiescent, it runs ``decide`` anyway and fails if the core wanted to act.
"""

from __future__ import annotations

from typing import Any

from tpu_platform.hotswap.core import Settings
from tpu_platform.sim.episode_log import DecisionLog, episode_timeline
from tpu_platform.sim.failures import KUBELET_RESTART
from tpu_platform.sim.kueue_tas import KueueTas
from tpu_platform.sim.model import CAUSE_CONTROLLER, CAUSE_SCHEDULER
from tpu_platform.sim.params import Timings, floor_seconds
from tpu_platform.sim.policies import Baseline, Hotswap
from tpu_platform.sim.run import Result, compare, run, stack_scenario
from tpu_platform.sim.scenarios import seed_scenario, seed_stack
from tpu_platform.sim.traces import Failure, random_trace
from tpu_platform.sim.workload import pools_from_stack

T = Timings()
S = Settings(force_delete_unconfirmed=True)
"""The NotReady timer path (opted in): these runs have no Compute Engine corroboration."""
FAIL_AT = 1800.0
FLOOR = floor_seconds(T)
"""The honest floor: NotReady, then an unobstructed restart including a victim's drain."""
LAG = 2 * T.reconcile_interval_s
"""A decision can lag its threshold by one reconcile interval, and the one after it by another."""
CLEARED = T.node_monitor_grace_s + S.dead_node_confirm_seconds
"""When the controller force-deletes the pods on the dead node (BlockingRecreate waits for this)."""
RESTART = T.jobset_recreate_s + 2 * T.schedule_s + T.follower_create_s + T.pod_startup_s


def controller(**kw: object) -> Result:
    return run(seed_scenario(**kw), Hotswap(S, verify_idle=True))  # type: ignore[arg-type]


def mttr(r: Result) -> float:
    (episode,) = r.metrics.episodes
    assert episode.workload == "default/high" and episode.seconds is not None
    return episode.seconds


def pools_after(r: Result, key: str, t: float) -> set[str]:
    return {iv.lane for iv in r.metrics.occupancy if iv.key == f"default/{key}" and iv.start >= t}


def failed_pool(r: Result) -> str:
    ((_, _, pool),) = r.metrics.failures
    return pool


def test_with_a_spare_recreate_jobsets_also_wait_for_the_dead_node_confirmation() -> None:
    """JobSet deletes child Jobs with Foreground propagation and recreates a Job only once its
    predecessor is gone, under Recreate as under BlockingRecreate (kubernetes-sigs/jobset v0.12.0
    ``pkg/controllers/jobset_controller.go``, ``deleteJobs`` / ``shouldCreateJob``; jobset #576): the
    restart waits for the force-delete of the pod on the dead node."""
    r = controller(spare=True, restart_strategy="Recreate", pod_failure_policy=False)
    assert mttr(r) >= FLOOR
    assert CLEARED <= mttr(r) <= CLEARED + RESTART + LAG
    assert r.controller is not None and r.controller.actions["force-delete"] == 1
    assert failed_pool(r) not in pools_after(r, "high", FAIL_AT)
    assert r.summary.preemptions == {} and r.summary.hazards == 0


def test_with_a_spare_blocking_recreate_waits_only_for_the_dead_node_confirmation() -> None:
    r = controller(spare=True)
    assert CLEARED <= mttr(r) <= CLEARED + RESTART + LAG
    assert r.controller is not None and r.controller.actions["force-delete"] == 1
    assert [x.workload for x in r.metrics.losses] == ["default/high"], "low is untouched"


def test_without_a_spare_recovery_is_near_the_floor_and_low_gets_the_slice_back_after_repair() -> None:
    base, hot = compare(seed_scenario(spare=False), verify_idle=True)
    # Dead pod cleared, restart; the leader's victim exits, then the rest of the victim's JobSet.
    assert mttr(hot) <= CLEARED + RESTART + 2 * T.pod_termination_s + LAG
    assert mttr(base) / mttr(hot) > 5
    assert hot.summary.preemptions == {"scheduler": 1}, (
        "kube-scheduler nominates first; the controller defers"
    )
    assert {x.cause for x in hot.metrics.losses if x.workload == "default/low-0"} == {CAUSE_SCHEDULER}
    broken = failed_pool(hot)
    ((_, _, repaired),) = hot.metrics.repairs
    assert repaired is not None
    assert hot.controller is not None
    tainted = [(t0, t1) for pool, t0, t1 in hot.controller.tainted if pool == broken]
    assert tainted and all(t1 is not None for _, t1 in tainted), "tainted while broken, untainted at the end"
    assert (
        tainted[0][0] - FAIL_AT <= T.node_monitor_grace_s + S.unhealthy_after_seconds + T.reconcile_interval_s
    )
    untainted = max(t1 for _, t1 in tainted if t1 is not None)
    assert untainted >= repaired + S.healthy_after_seconds - T.node_register_spread_s
    runs = [iv for iv in hot.metrics.runs if iv.key == "default/low-0"]
    last = max(runs, key=lambda iv: iv.start)
    assert last.end == hot.scenario.end and last.start >= untainted, "low runs again on the recovered pool"
    assert broken in {
        iv.lane for iv in hot.metrics.occupancy if iv.key == "default/low-0" and iv.start >= untainted
    }


def test_when_kube_scheduler_cannot_preempt_the_controller_frees_the_slice_that_loses_least() -> None:
    kw = dict(spare=False, scheduler_preemption=False, low_checkpoints=(600.0, 3600.0))
    base, hot = compare(seed_scenario(**kw), verify_idle=True)  # type: ignore[arg-type]
    assert hot.controller is not None
    (pre,) = hot.controller.preemptions
    assert pre.beneficiary == "default/high" and pre.victims == ("default/low-0",)
    (loss,) = [x for x in hot.metrics.losses if x.cause == CAUSE_CONTROLLER]
    assert loss.workload == "default/low-0" and loss.seconds < 600.0, "it checkpoints every 10 min"
    # The core's estimate (chips x seconds since the last checkpoint, at decision time) is what was lost
    # by the time the victim's pods had exited.
    assert 0 <= loss.chip_seconds - pre.work_lost <= 16 * (T.pod_termination_s + 1)
    # Waits preemption_pending_seconds for kube-scheduler, then the victim exits before the restart.
    assert mttr(hot) <= CLEARED + S.preemption_pending_seconds + RESTART + 2 * T.pod_termination_s + LAG
    # Without the controller nothing frees a slice: high waits for the repaired pool.
    assert base.summary.preemptions == {}
    assert mttr(base) >= T.node_monitor_grace_s + T.auto_repair_after_s + T.repair_s
    assert all(x.workload == "default/high" for x in base.metrics.losses)


def test_a_reboot_fails_fast_then_the_pool_is_held_for_t_good() -> None:
    r = controller(spare=False, reboot_after=120.0)
    assert mttr(r) <= CLEARED + RESTART + 2 * T.pod_termination_s + LAG
    assert r.controller is not None
    ((pool, t0, t1),) = r.controller.tainted
    assert pool == failed_pool(r) and t1 is not None
    assert t0 - FAIL_AT <= T.node_monitor_grace_s + S.unhealthy_after_seconds + T.reconcile_interval_s
    assert t1 >= FAIL_AT + 120.0 + S.healthy_after_seconds, "held for T_good after the kubelet came back"
    assert r.metrics.repairs == []


def day_of_random_failures() -> tuple[Any, tuple[Any, ...]]:
    """A four-slice seed stack and one day of seeded node failures (30 % transient)."""
    cfg = seed_stack(4)
    trace = tuple(
        random_trace(
            pools_from_stack(cfg),
            seed=11,
            start=600.0,
            end=86400.0,
            node_mtbf_s=86400.0,
            transient_fraction=0.3,
        )
    )
    return cfg, trace


def test_quiescence_skips_never_hide_an_action_on_a_random_trace() -> None:
    cfg, trace = day_of_random_failures()
    assert len(trace) >= 5
    scenario = stack_scenario(cfg, trace=trace, end=86400.0, seed=11)
    result = run(scenario, Hotswap(S, verify_idle=True))
    assert result.controller is not None and result.controller.skipped_idle == 0
    assert result.controller.reconciles > 0
    quick = run(scenario, Hotswap(S))
    assert quick.controller is not None and quick.controller.skipped_idle > 0
    assert quick.summary == result.summary, "skipping idle reconciles changes nothing"


def test_the_failure_named_by_pool_hits_that_pool_under_both_policies() -> None:
    scenario = seed_scenario(spare=True)
    named = stack_scenario(
        seed_stack(3),
        trace=(Failure(FAIL_AT, "seed-4x4-2-n0"),),
        end=FAIL_AT + 600.0,
        workloads=list(scenario.workloads),
    )
    for r in (run(named, Baseline()), run(named, KueueTas()), run(named, Hotswap(S))):
        assert r.metrics.failures == [(FAIL_AT, "seed-4x4-2-n0", "seed-4x4-2")]


LEASE = Settings(lease_stale_seconds=20.0, force_delete_unconfirmed=True)


def test_the_lease_signal_gains_nothing_while_the_restart_waits_for_the_force_delete() -> None:
    """Earlier detection taints and evicts sooner, but the Foreground-deleted Job is recreated only once
    the pod on the dead node is gone (jobset ``shouldCreateJob``), which the core does only after
    NotReady plus ``dead_node_confirm_seconds``."""
    scenario = seed_scenario(spare=True, restart_strategy="Recreate", pod_failure_policy=False)
    without = run(scenario, Hotswap(S, verify_idle=True))
    with_lease = run(scenario, Hotswap(LEASE, verify_idle=True))
    assert abs(mttr(with_lease) - mttr(without)) <= LAG
    assert mttr(with_lease) >= CLEARED
    assert with_lease.metrics.failures == without.metrics.failures
    assert with_lease.controller is not None and without.controller is not None
    assert with_lease.controller.actions["force-delete"] == without.controller.actions["force-delete"], (
        "the pod on the dead node is still force-deleted only once NotReady confirms it"
    )


def test_the_lease_signal_on_a_random_trace_hides_no_action() -> None:
    cfg, trace = day_of_random_failures()
    scenario = stack_scenario(cfg, trace=trace, end=86400.0, seed=11)
    without = run(scenario, Hotswap(S, verify_idle=True))
    with_lease = run(scenario, Hotswap(LEASE, verify_idle=True))
    assert with_lease.summary.mttr_s and len(with_lease.summary.mttr_s) == len(without.summary.mttr_s)
    assert with_lease.summary.mttr_p50_s >= FLOOR
    quick = run(scenario, Hotswap(LEASE))
    assert quick.summary == with_lease.summary, "skipping idle reconciles changes nothing with leases on"


CONFIRMED = Settings(lease_stale_seconds=20.0, compute_corroboration=True, unhealthy_after_seconds=120.0)
"""T_bad far beyond the Compute Engine answer: whatever declares the pool sooner is the confirmation."""
SEEN = T.compute_status_lag_s + T.compute_api_latency_s + T.compute_reread_s + T.reconcile_interval_s
"""After a silent death: Compute Engine's status turns (``compute_status_lag_s``), the adapter's next
re-read of the RUNNING answer (``compute_reread_s``) on a reconcile's grid, answering after
``compute_api_latency_s``."""


def test_a_compute_confirmation_declares_the_pool_and_clears_the_dead_pod_without_waiting_t_bad() -> None:
    """The dead VM's pool is tainted, its pods failed fast and the dead node's pod force-deleted as soon
    as Compute Engine's not-running answer is read, long before T_bad (120 s here) or NotReady would;
    never a force delete of a pod whose VM still runs."""
    scenario = seed_scenario(spare=True)
    r = run(scenario, Hotswap(CONFIRMED, verify_idle=True))
    assert r.controller is not None
    ((_, tainted_at, _),) = [iv for iv in r.controller.tainted if iv[0] == failed_pool(r)]
    assert FAIL_AT + T.compute_status_lag_s <= tainted_at <= FAIL_AT + SEEN + LAG
    assert tainted_at < FAIL_AT + T.node_monitor_grace_s, "before NotReady, let alone T_bad"
    assert r.controller.actions["force-delete"] == 1 and r.cluster.unsafe_force_deletes == 0
    assert mttr(r) <= SEEN + RESTART + LAG


def test_a_kubelet_restart_is_never_declared_early_by_corroboration() -> None:
    """A live VM under a silent kubelet reads RUNNING: nothing is confirmed, so no early declaration,
    eviction or force delete; with T_bad at 120 s a 60 s kubelet pause passes untouched."""
    cfg = seed_stack(3)
    trace = (Failure(FAIL_AT, "seed-4x4-2-n0", back_after=60.0, kind=KUBELET_RESTART),)
    scenario = stack_scenario(cfg, trace=trace, end=FAIL_AT + 1200.0)
    r = run(scenario, Hotswap(CONFIRMED, verify_idle=True))
    assert r.controller is not None
    assert r.controller.tainted == [] and r.cluster.force_deletes == 0
    assert r.controller.actions["evict-fail-fast"] == 0


def test_the_episode_log_shows_the_confirmation_declaring_and_clearing_in_one_reconcile() -> None:
    log = DecisionLog()
    scenario = seed_scenario(spare=True)
    r = run(scenario, Hotswap(CONFIRMED, on_decision=log.record))
    ((at, node, _),) = r.metrics.failures
    (episode,) = r.metrics.episodes
    steps = dict(episode_timeline(log, episode, node, CONFIRMED))
    names = [name for name, _ in episode_timeline(log, episode, node, CONFIRMED)]
    assert names[-1] == "pods Running" and steps["pods Running"] == mttr(r)
    renewed, suspect = steps["last Lease renewal"], steps["suspect"]
    assert renewed is not None and suspect is not None
    assert -T.lease_renew_s <= renewed <= 0 and suspect == renewed + CONFIRMED.lease_stale_seconds
    confirmed = steps["confirmed not running"]
    assert confirmed is not None and at + confirmed >= at + T.compute_status_lag_s
    assert steps["pool declared"] == steps["fail-fast eviction"] == steps["force delete"] == confirmed
    assert steps["first Compute answer (RUNNING)"] is not None
    assert steps["NotReady"] == T.node_monitor_grace_s and confirmed < T.node_monitor_grace_s
