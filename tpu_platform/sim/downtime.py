"""Downtime of managed high-priority JobSets, split into planned moves at a checkpoint and the rest.

A JobSet is *down* from the moment its running pods are interrupted (its run stops, it restarts, or
Kueue evicts it) until all its pods are Running again. A down interval is *planned* when it began
with the controller moving the work off a slice before its maintenance (cause
:data:`~tpu_platform.sim.checkpoints.CAUSE_MOVE`) after the workload answered the checkpoint request;
every other interval (GKE's drain when the window opens, a move at the deadline without an answer,
a failure, a preemption) is *unplanned*. Intervals still open at the end count up to the end.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tpu_platform.sim.checkpoints import CAUSE_MOVE, answered_before
from tpu_platform.sim.jobset import RunObserver
from tpu_platform.sim.model import CAUSE_DONE, CAUSE_KUEUE, Workload


@dataclass(slots=True)
class Downtime(RunObserver):
    high_priority: int
    planned_s: float = 0.0
    unplanned_s: float = 0.0
    planned_moves: int = 0
    """Interruptions that were moves at a checkpoint."""
    unplanned_moves: int = 0
    """Moves at the deadline, without an answer."""
    intervals: list[tuple[str, float, float, bool]] = field(default_factory=list)
    """(workload, start, end, planned)."""
    _down: dict[str, tuple[float, bool]] = field(default_factory=dict)
    _up: set[str] = field(default_factory=set)

    def _counts(self, w: Workload) -> bool:
        return w.spec.managed and w.priority >= self.high_priority

    def _stop(self, w: Workload, now: float, cause: str) -> None:
        if not self._counts(w) or w.key not in self._up or cause == CAUSE_DONE:
            return
        self._up.discard(w.key)
        planned = cause == CAUSE_MOVE and answered_before(w, now)
        if cause == CAUSE_MOVE:
            if planned:
                self.planned_moves += 1
            else:
                self.unplanned_moves += 1
        self._down[w.key] = (now, planned)

    def _close(self, key: str, now: float) -> None:
        begin = self._down.pop(key, None)
        if begin is None:
            return
        start, planned = begin
        if planned:
            self.planned_s += now - start
        else:
            self.unplanned_s += now - start
        self.intervals.append((key, start, now, planned))

    def pods_running(self, w: Workload, now: float) -> None:
        if self._counts(w):
            self._close(w.key, now)
            self._up.add(w.key)

    def run_stopped(self, w: Workload, now: float, cause: str, lost_s: float, was_productive: bool) -> None:
        self._stop(w, now, cause)

    def restarted(self, w: Workload, now: float, cause: str, counted: bool) -> None:
        self._stop(w, now, cause)

    def suspended(self, w: Workload, now: float) -> None:
        self._stop(w, now, CAUSE_KUEUE)

    def finished(self, w: Workload, now: float) -> None:
        self._up.discard(w.key)
        self._close(w.key, now)

    def close(self, end: float) -> None:
        for key in sorted(self._down):
            self._close(key, end)


class Tee(RunObserver):
    """Several run observers behind the JobSet controller's one."""

    def __init__(self, *observers: RunObserver) -> None:
        self.observers = observers

    def run_started(self, w: Workload, now: float) -> None:
        for o in self.observers:
            o.run_started(w, now)

    def pods_running(self, w: Workload, now: float) -> None:
        for o in self.observers:
            o.pods_running(w, now)

    def run_stopped(self, w: Workload, now: float, cause: str, lost_s: float, was_productive: bool) -> None:
        for o in self.observers:
            o.run_stopped(w, now, cause, lost_s, was_productive)

    def restarted(self, w: Workload, now: float, cause: str, counted: bool) -> None:
        for o in self.observers:
            o.restarted(w, now, cause, counted)

    def finished(self, w: Workload, now: float) -> None:
        for o in self.observers:
            o.finished(w, now)

    def suspended(self, w: Workload, now: float) -> None:
        for o in self.observers:
            o.suspended(w, now)
