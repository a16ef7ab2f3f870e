"""Seeded draws of one ``whatif`` scenario, each reduced to the figures ``whatif`` prints, and their spread.

The seed moves the scheduler's tie-breaks, the dead VM's fate and GKE's repair of the slice; on a
busy stack the recipe's recovery swings by minutes from one seed to the next, so one draw is an anecdote.
A draw keeps only its figures (a run's cluster and metrics are large), and draws use consecutive seeds
so the same command prints the same spread.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from tpu_platform.sim.model import PREEMPTIONS
from tpu_platform.sim.run import POLICIES, Result, Scenario, compare_all


@dataclass(frozen=True, slots=True)
class Sample:
    """Seconds from the incident; ``open``: not recovered when the simulation ended (a lower bound)."""

    seconds: float
    open: bool = False


@dataclass(frozen=True, slots=True)
class PolicyDraw:
    """One policy's figures in one draw."""

    running: Mapping[str, Sample]
    """High-priority JobSet hit -> until its pods were Running again."""
    resumed: Mapping[str, Sample]
    """High-priority JobSet hit -> until it was back at the step it had reached."""
    lost: Mapping[str, float]
    """Lower-priority JobSet -> chip-hours of work it lost."""
    causes: Mapping[str, frozenset[str]]
    """Lower-priority JobSet -> what took its work (``scheduler``, ``kueue``, ``failure``, ...)."""
    lost_total: float
    lost_preempted: float
    hazards: int


@dataclass(frozen=True, slots=True)
class Draw:
    seed: int
    failed: tuple[str, str] | None
    """(node, slice) the failure hit under the recipe; None: no JobSet ran there."""
    policies: Mapping[str, PolicyDraw]


def seeds(first: int, draws: int) -> range:
    """Consecutive seeds from ``first``: the same flags give the same draws."""
    return range(first, first + draws)


def p50_p95(values: Sequence[float]) -> tuple[float, float]:
    """Median and 95th percentile, interpolated between closest ranks (numpy's default, as
    ``metrics.percentile``); a single draw is its own spread."""
    if len(values) == 1:
        return values[0], values[0]
    cuts = statistics.quantiles(values, n=20, method="inclusive")
    return cuts[9], cuts[18]


def _episode_samples(r: Result, end: float, resumed: bool) -> dict[str, Sample]:
    """Per JobSet, its episodes' durations summed (as one recovery); open ones count to ``end``."""
    out: dict[str, Sample] = {}
    for key in sorted({e.workload for e in r.metrics.episodes}):
        eps = [e for e in r.metrics.episodes if e.workload == key]
        if any(e.end is None for e in eps):
            out[key] = Sample(end - eps[0].start, open=True)
        elif resumed:
            out[key] = Sample(sum(e.resumed_seconds or 0.0 for e in eps))
        else:
            out[key] = Sample(sum(e.seconds or 0.0 for e in eps))
    return out


def reduce(r: Result, end: float) -> PolicyDraw:
    """The figures of one run that ``whatif`` prints."""
    top = r.scenario.top_priority
    lost: dict[str, float] = {}
    causes: dict[str, set[str]] = {}
    for x in r.metrics.losses:
        if x.priority < top:
            lost[x.workload] = lost.get(x.workload, 0.0) + x.chip_seconds / 3600
            causes.setdefault(x.workload, set()).add(x.cause.removeprefix("preempted-by-"))
    return PolicyDraw(
        running=_episode_samples(r, end, resumed=False),
        resumed=_episode_samples(r, end, resumed=True),
        lost=lost,
        causes={k: frozenset(v) for k, v in causes.items()},
        lost_total=r.summary.low_priority_lost_chip_hours,
        lost_preempted=sum(v for cause, v in r.summary.lost_chip_hours.items() if cause in PREEMPTIONS),
        hazards=r.summary.hazards,
    )


def draw(
    scenario: Scenario, seed: int, on_policy: Callable[[str], object] | None = None
) -> tuple[Draw, dict[str, Result]]:
    """All policies on ``scenario`` with ``seed``: the reduced draw and the full runs."""
    results = compare_all(replace(scenario, seed=seed), on_policy=on_policy)
    failures = results["recipe"].metrics.failures
    failed = (failures[0][1], failures[0][2]) if failures else None
    policies = {name: reduce(results[name], scenario.end) for name in POLICIES}
    return Draw(seed, failed, policies), results
