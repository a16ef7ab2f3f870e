"""The simulator's model of maintenance-aware moves: GKE's notice on the slice's nodes (the
``cloud.google.com/scheduled-maintenance-time`` label, epoch seconds, seven days ahead:
https://cloud.google.com/kubernetes-engine/docs/how-to/view-maintenance-events,
https://cloud.google.com/tpu/docs/view-maintenance-notifications), the trainers' answers to the
controller's checkpoint request (``tpu_platform.sim.checkpoints``) and the downtime split
(``tpu_platform.sim.downtime``)."""

from __future__ import annotations

from dataclasses import replace

from tpu_platform.hotswap.core import constants as k
from tpu_platform.sim.failures import MAINTENANCE
from tpu_platform.sim.policies import Baseline, Hotswap
from tpu_platform.sim.run import Scenario, Simulation, run, stack_scenario
from tpu_platform.sim.scenarios import seed_jobsets, seed_stack
from tpu_platform.sim.traces import Failure

WINDOW = 20_000.0


def scenario(
    *, windows: tuple[float, ...] = (WINDOW,), never: float = 0.0, end: float = 40_000.0
) -> Scenario:
    """``high`` and ``low`` on two 4x4 slices (no spare); maintenance on the slice ``high`` runs on."""
    trace = tuple(Failure(w, "seed-4x4-0-n0", None, MAINTENANCE) for w in windows)
    s = stack_scenario(seed_stack(2), trace=trace, end=end, workloads=seed_jobsets())
    return replace(s, timings=s.timings.with_overrides({"checkpoint_never_answers": never}))


def test_the_recipe_is_drained_at_the_window_and_hotswap_moves_at_a_checkpoint() -> None:
    s = scenario()
    recipe = run(s, Baseline())
    assert recipe.downtime is not None and recipe.downtime.unplanned_s > 0
    assert recipe.downtime.intervals[0][1] == WINDOW, "GKE's drain when the window opens"
    hot = run(s, Hotswap(s.settings, verify_idle=True))
    d = hot.downtime
    assert d is not None
    assert d.unplanned_s == 0.0 and d.planned_moves == 1 and d.planned_s > 0
    (_, start, end, planned), *_ = d.intervals
    lead = s.settings.maintenance_move_lead_seconds + s.settings.maintenance_checkpoint_seconds
    assert planned and WINDOW - lead <= start < WINDOW - s.settings.maintenance_move_lead_seconds
    assert end < WINDOW, "running elsewhere before the window opens"
    assert hot.summary.high_priority_lost_chip_hours < 0.01, "moved right after its checkpoint"


def test_a_workload_that_never_answers_is_moved_at_the_deadline_and_counts_unplanned() -> None:
    s = scenario(never=1.0)
    hot = run(s, Hotswap(s.settings))
    d = hot.downtime
    assert d is not None and d.planned_moves == 0 and d.unplanned_moves == 1
    start = d.intervals[0][1]
    deadline = WINDOW - s.settings.maintenance_move_lead_seconds
    assert deadline <= start < deadline + 5
    assert d.unplanned_s > 0


def test_moves_off_leaves_the_window_to_gke() -> None:
    s = scenario()
    off = replace(s, settings=s.settings.replace(maintenance_moves=False))
    d = run(off, Hotswap(off.settings)).downtime
    assert d is not None and d.planned_moves == 0 and d.intervals[0][1] == WINDOW


def test_the_label_shows_the_next_window_and_survives_the_repair() -> None:
    """Two windows announced for one slice: its nodes show the earlier; the nodes that register after
    the first maintenance show the second."""
    second = WINDOW + 30_000.0
    s = scenario(windows=(WINDOW, second), end=WINDOW + 10_000.0)
    sim = Simulation(s, Baseline())
    sim.engine.run(1.0)
    labels = {
        n.api.labels.get(k.SCHEDULED_MAINTENANCE_LABEL)
        for n in sim.cluster.nodes.values()
        if n.pool == "seed-4x4-0"
    }
    assert labels == {f"{WINDOW:.0f}"}
    sim.engine.run(WINDOW + 10_000.0)
    after = [n for n in sim.cluster.nodes.values() if n.pool == "seed-4x4-0"]
    assert after and all(n.api.labels.get(k.SCHEDULED_MAINTENANCE_LABEL) == f"{second:.0f}" for n in after)
