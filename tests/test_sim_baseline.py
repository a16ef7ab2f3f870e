"""The scheduler-only recipe on the seed scenarios: what it does and does not do (failure-model.md).

Bounds come from the timing parameters, not from recorded runs: a repair-bound recovery cannot start
before NotReady + auto-repair + PodGC's quarantine, and finishes within one restart after that.
"""

from __future__ import annotations

from tpu_platform.sim.model import CAUSE_SCHEDULER
from tpu_platform.sim.params import Timings
from tpu_platform.sim.policies import Baseline
from tpu_platform.sim.run import Result, run
from tpu_platform.sim.scenarios import seed_scenario

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


def test_recreate_without_pod_failure_policy_restarts_at_the_taint_eviction_on_the_spare() -> None:
    r = run(seed_scenario(spare=True, restart_strategy="Recreate", pod_failure_policy=False), Baseline())
    evicted = T.node_monitor_grace_s + T.toleration_s
    assert evicted <= mttr(r) <= evicted + RESTART + T.pod_termination_s
    assert mttr(r) < REPAIR_BOUND
    assert failed_pool(r) not in pools_after(r, "high", FAIL_AT)
    assert r.summary.hazards == 0


def test_without_a_spare_the_leader_preempts_one_node_of_low_which_returns_after_repair() -> None:
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


def test_a_restarted_leader_lands_on_the_broken_slice_and_hangs_until_repair() -> None:
    r = run(seed_scenario(spare=False, restart_strategy="Recreate", pod_failure_policy=False), Baseline())
    broken = failed_pool(r)
    assert any(pool == broken for _, _, pool in r.metrics.hazards)
    assert any(key == "default/high" and pool == broken for _, key, pool in r.metrics.hazards)
    assert mttr(r) >= REPAIR_BOUND, "restarted at the 300 s eviction, yet it waited for the repair"


def test_a_reboot_restarts_the_jobset_in_place_once_the_kubelet_is_back() -> None:
    r = run(seed_scenario(spare=False, reboot_after=120.0), Baseline())
    assert 120.0 <= mttr(r) <= 120.0 + T.pod_termination_s + RESTART, "old pods exit first (BlockingRecreate)"
    assert r.summary.preemptions == {}
    assert pools_after(r, "high", FAIL_AT) == {failed_pool(r)}
    assert r.metrics.repairs == [], "back before auto-repair"
