"""What a run measured: recovery episodes of high-priority JobSets, work thrown away, productive chip
time, and the intervals the timeline picture draws.

- An *episode* starts at an incident that touches a high-priority JobSet (it had a pod on the node, or
  on the slice for maintenance and Spot). If the JobSet's run is interrupted within
  ``incident_settle_s``, two measures follow: *pods Running* (every pod bound to a live node and
  started: the MTTR sample) and *training resumed* (compiled, checkpoint restored, plus the work since
  its last checkpoint that must be done again). If nothing interrupts it, both are 0. Episodes still
  open at the end are counted as unrecovered, not averaged in.
- *Lost work* is the progress since the last checkpoint thrown away when a run breaks, in chip-seconds,
  by cause (failure, preemption by kube-scheduler, by the controller, by Kueue).
- *Utilization* is productive chip-seconds over all chip-seconds of the fleet.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from tpu_platform.sim.failures import HOST_DEATH
from tpu_platform.sim.jobset import RunObserver
from tpu_platform.sim.model import CAUSE_DONE, SimNode, SimPod, Workload
from tpu_platform.sim.traces import Failure


def percentile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default); NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


@dataclass(slots=True)
class Episode:
    workload: str
    priority: int
    chips: int
    restart_strategy: str
    pod_failure_policy: bool
    start: float
    kind: str = HOST_DEATH
    interrupted: float | None = None
    """When its run stopped (None: not, or not yet)."""
    acted: float | None = None
    """When something first acted on it: its JobSet restarted, or Kueue evicted it."""
    running_at: float | None = None
    end: float | None = None
    """Training resumed (or ``start`` when the incident never interrupted it)."""
    lost_s: float = 0.0
    """Progress since the last checkpoint thrown away (seconds of the JobSet's own work)."""

    @property
    def seconds(self) -> float | None:
        """Pods Running again, from the incident."""
        if self.end is None:
            return None
        return (self.running_at if self.running_at is not None else self.end) - self.start

    @property
    def resumed_seconds(self) -> float | None:
        """Back at the step it had reached when the incident struck: resumed plus the work redone."""
        return None if self.end is None else self.end - self.start + self.lost_s


@dataclass(frozen=True, slots=True)
class Loss:
    at: float
    workload: str
    priority: int
    chips: int
    seconds: float
    cause: str

    @property
    def chip_seconds(self) -> float:
        return self.chips * self.seconds


@dataclass(frozen=True, slots=True)
class Interval:
    lane: str
    """A pool name (occupancy) or a workload key (productive runs)."""
    key: str
    start: float
    end: float


class Recorder(RunObserver):
    def __init__(
        self, *, high_priority: int, total_chips: int, start: float, settle_s: float = 1800.0
    ) -> None:
        self.high_priority = high_priority
        self.settle_s = settle_s
        self.total_chips = total_chips
        self.start = start
        self.episodes: list[Episode] = []
        self._open: dict[str, Episode] = {}
        self.losses: list[Loss] = []
        self.productive_chip_s = 0.0
        self._since: dict[str, tuple[float, int]] = {}
        self.runs: list[Interval] = []
        self.occupancy: list[Interval] = []
        self._occupied: dict[tuple[str, str], float] = {}
        self.failures: list[tuple[float, str, str]] = []
        """(time, node, pool) of failures that hit a live node."""
        self.kinds: list[str] = []
        """The kind of each entry of ``failures``."""
        self.running_marks: list[tuple[float, str]] = []
        """(time, workload) whenever a JobSet's pods are all Running (for the picture's markers)."""
        self.absorbed = 0
        self.repairs: list[tuple[str, float, float | None]] = []
        self.restarts: Counter[str] = Counter()
        self.counted_restarts = 0
        self.preemptions: Counter[str] = Counter()
        self.hazards: list[tuple[float, str, str]] = []
        self.completed = 0
        self.failed_workloads = 0

    # --- runs ----------------------------------------------------------------------------------------
    def _settled(self, key: str, now: float) -> Episode | None:
        """The open episode of ``key``; one never interrupted within the settle window closes at 0 s."""
        ep = self._open.get(key)
        if ep is not None and ep.interrupted is None and now - ep.start > self.settle_s:
            ep.end = ep.start
            del self._open[key]
            return None
        return ep

    def run_started(self, w: Workload, now: float) -> None:
        self._since[w.key] = (now, w.chips)
        ep = self._settled(w.key, now)
        if ep is not None and ep.interrupted is not None:
            ep.end = now
            del self._open[w.key]

    def pods_running(self, w: Workload, now: float) -> None:
        self.running_marks.append((now, w.key))
        ep = self._settled(w.key, now)
        if ep is not None and ep.interrupted is not None and ep.running_at is None:
            ep.running_at = now

    def run_stopped(self, w: Workload, now: float, cause: str, lost_s: float, was_productive: bool) -> None:
        since = self._since.pop(w.key, None)
        if since is not None:
            self.productive_chip_s += (now - since[0]) * since[1]
            self.runs.append(Interval(w.key, w.key, since[0], now))
        if lost_s > 0:
            self.losses.append(Loss(now, w.key, w.priority, w.chips, lost_s, cause))
        ep = self._settled(w.key, now)
        if ep is not None and cause != CAUSE_DONE:
            if ep.interrupted is None:
                ep.interrupted = now
            ep.lost_s += lost_s
            ep.running_at = None

    def incident(self, now: float, w: Workload, kind: str) -> None:
        """An incident touched ``w``: open an episode unless one is open for it already."""
        if w.priority < self.high_priority or w.state != "admitted":
            return
        if self._settled(w.key, now) is not None:
            return
        ep = Episode(
            w.key, w.priority, w.chips, w.spec.restart_strategy, w.spec.pod_failure_policy, now, kind
        )
        self._open[w.key] = ep
        self.episodes.append(ep)

    def restarted(self, w: Workload, now: float, cause: str, counted: bool) -> None:
        self.restarts[cause] += 1
        self.counted_restarts += int(counted)
        self._acted(w, now)

    def suspended(self, w: Workload, now: float) -> None:
        self._acted(w, now)

    def _acted(self, w: Workload, now: float) -> None:
        ep = self._open.get(w.key)
        if ep is not None and ep.acted is None:
            ep.acted = now

    def finished(self, w: Workload, now: float) -> None:
        if w.state == "done":
            self.completed += 1
        else:
            self.failed_workloads += 1

    # --- infrastructure, scheduling, Kueue -----------------------------------------------------------
    def node_failed(self, now: float, node: SimNode, kind: str = HOST_DEATH) -> None:
        self.failures.append((now, node.name, node.pool))
        self.kinds.append(kind)

    def failure_absorbed(self, now: float, failure: Failure) -> None:
        self.absorbed += 1

    def repair(self, pool: str, now: float, started: bool) -> None:
        if started:
            self.repairs.append((pool, now, None))
            return
        for i in range(len(self.repairs) - 1, -1, -1):
            name, begin, end = self.repairs[i]
            if name == pool and end is None:
                self.repairs[i] = (name, begin, now)
                return

    def occupied(self, pool: str, workload: str, now: float, holding: bool) -> None:
        if holding:
            self._occupied[(pool, workload)] = now
        else:
            begin = self._occupied.pop((pool, workload), None)
            if begin is not None:
                self.occupancy.append(Interval(pool, workload, begin, now))

    def scheduler_preempted(self, pod: SimPod, victims: list[SimPod]) -> None:
        self.preemptions["scheduler"] += 1

    def kueue_preempted(self, w: Workload, victims: list[Workload]) -> None:
        self.preemptions["kueue"] += len(victims)

    def hazard(self, now: float, pod: SimPod, pool: str) -> None:
        self.hazards.append((now, pod.workload, pool))

    # --- end of run ----------------------------------------------------------------------------------
    def close(self, end: float) -> None:
        """Account open runs and occupancy up to ``end`` (interrupted episodes stay open: unrecovered)."""
        for key in sorted(self._open):
            self._settled(key, end)
        for key, (since, chips) in sorted(self._since.items()):
            self.productive_chip_s += (end - since) * chips
            self.runs.append(Interval(key, key, since, end))
        self._since.clear()
        for (pool, workload), begin in sorted(self._occupied.items()):
            self.occupancy.append(Interval(pool, workload, begin, end))
        self._occupied.clear()


@dataclass(frozen=True, slots=True)
class Summary:
    mttr_s: tuple[float, ...]
    unrecovered: int
    mttr_p50_s: float
    mttr_p95_s: float
    resumed_s: tuple[float, ...]
    resumed_p50_s: float
    resumed_p95_s: float
    lost_chip_hours: dict[str, float]
    """By cause, for JobSets below the top priority."""
    low_priority_lost_chip_hours: float
    high_priority_lost_chip_hours: float
    utilization: float
    failures: int
    hazards: int
    restarts: int
    preemptions: dict[str, int] = field(default_factory=dict)
    stuck: tuple[str, ...] = ()
    """JobSets left partially placed at the end (some pods bound, others unschedulable > 10 min)."""


def summarize(
    rec: Recorder, end: float, controller_preemptions: int = 0, stuck: tuple[str, ...] = ()
) -> Summary:
    durations = tuple(e.seconds for e in rec.episodes if e.seconds is not None)
    resumed = tuple(e.resumed_seconds for e in rec.episodes if e.resumed_seconds is not None)
    lost: dict[str, float] = {}
    high = 0.0
    for loss in rec.losses:
        if loss.priority >= rec.high_priority:
            high += loss.chip_seconds / 3600.0
        else:
            lost[loss.cause] = lost.get(loss.cause, 0.0) + loss.chip_seconds / 3600.0
    span = max(end - rec.start, 1e-9)
    preemptions = dict(rec.preemptions)
    if controller_preemptions:
        preemptions["controller"] = controller_preemptions
    return Summary(
        mttr_s=durations,
        unrecovered=sum(1 for e in rec.episodes if e.end is None),
        mttr_p50_s=percentile(durations, 50),
        mttr_p95_s=percentile(durations, 95),
        resumed_s=resumed,
        resumed_p50_s=percentile(resumed, 50),
        resumed_p95_s=percentile(resumed, 95),
        lost_chip_hours=dict(sorted(lost.items())),
        low_priority_lost_chip_hours=sum(lost.values()),
        high_priority_lost_chip_hours=high,
        utilization=rec.productive_chip_s / (rec.total_chips * span),
        failures=len(rec.failures),
        hazards=len(rec.hazards),
        restarts=sum(rec.restarts.values()),
        preemptions=preemptions,
        stuck=stuck,
    )
