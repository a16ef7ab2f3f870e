"""Work-lost, completion and utilization accounting, and the percentile helper."""

from __future__ import annotations

import math

import pytest

from tpu_platform.sim.metrics import percentile
from tpu_platform.sim.model import CAUSE_FAILURE, WorkloadSpec
from tpu_platform.sim.params import Timings
from tpu_platform.sim.policies import Baseline, Hotswap
from tpu_platform.sim.run import Result, run, stack_scenario
from tpu_platform.sim.scenarios import HIGH, LOW, seed_stack
from tpu_platform.sim.traces import Failure

T = Timings()


def one_slice(
    *specs: WorkloadSpec, fail_at: float | None = None, end: float = 4000.0, slices: int = 1
) -> Result:
    trace = (Failure(fail_at, "seed-4x4-n2"),) if fail_at is not None else ()
    return run(stack_scenario(seed_stack(slices), trace=trace, end=end, workloads=list(specs)), Baseline())


def spec(name: str, **kw: object) -> WorkloadSpec:
    base: dict[str, object] = dict(
        namespace="default", queue="default-queue", priority_class=LOW, priority=1_000_000, topology="4x4"
    )
    base.update(kw)
    return WorkloadSpec(name=name, **base)  # type: ignore[arg-type]


@pytest.mark.parametrize("checkpoint", [600.0, 1000.0, None])
def test_a_failure_loses_the_progress_since_the_last_checkpoint(checkpoint: float | None) -> None:
    fail_at = 2500.0
    r = one_slice(spec("job", checkpoint_s=checkpoint), fail_at=fail_at)
    first = min(r.metrics.runs, key=lambda iv: iv.start)
    assert first.end == fail_at
    progress = fail_at - first.start
    expected = progress - (math.floor(progress / checkpoint) * checkpoint if checkpoint else 0.0)
    (loss,) = r.metrics.losses
    assert loss.cause == CAUSE_FAILURE and loss.workload == "default/job"
    assert loss.seconds == pytest.approx(expected)
    assert loss.chip_seconds == pytest.approx(16 * expected)


def test_a_finished_jobset_frees_its_quota_for_the_next_in_the_queue() -> None:
    r = one_slice(spec("first", work_s=500.0), spec("second", submit_at=1.0), end=2000.0)
    assert r.metrics.completed == 1
    first = [iv for iv in r.metrics.runs if iv.key == "default/first"]
    second = [iv for iv in r.metrics.runs if iv.key == "default/second"]
    assert len(first) == 1 and first[0].end - first[0].start == pytest.approx(500.0)
    assert len(second) == 1 and second[0].start >= first[0].end + T.pod_startup_s
    assert r.metrics.losses == [], "completing loses nothing"


def test_progress_survives_restarts_up_to_the_checkpoint() -> None:
    work = 3000.0
    r = one_slice(spec("job", work_s=work, checkpoint_s=600.0), fail_at=1500.0, end=20000.0)
    assert r.metrics.completed == 1
    productive = sum(iv.end - iv.start for iv in r.metrics.runs)
    (loss,) = r.metrics.losses
    assert productive == pytest.approx(work + loss.seconds), "lost progress is redone, saved progress is not"


def test_utilization_is_productive_chip_time_over_fleet_chip_time() -> None:
    r = run(
        stack_scenario(
            seed_stack(2),
            trace=(Failure(2000.0, ""),),
            end=5000.0,
            workloads=[spec("high", priority_class=HIGH, priority=2_000_000), spec("low", submit_at=1.0)],
        ),
        Hotswap(),
    )
    productive = sum((iv.end - iv.start) * 16 for iv in r.metrics.runs)
    assert r.summary.utilization == pytest.approx(productive / (2 * 16 * 5000.0))
    assert 0.5 < r.summary.utilization < 1.0
    assert r.summary.low_priority_lost_chip_hours == pytest.approx(
        sum(x.chip_seconds for x in r.metrics.losses if x.priority < 2_000_000) / 3600
    )
    assert r.summary.high_priority_lost_chip_hours == pytest.approx(
        sum(x.chip_seconds for x in r.metrics.losses if x.priority >= 2_000_000) / 3600
    )


def test_percentile_interpolates_between_ranks() -> None:
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.5
    assert percentile([float(x) for x in range(1, 102)], 95) == pytest.approx(96.0)
    assert percentile([7.0], 95) == 7.0
    assert math.isnan(percentile([], 50))
