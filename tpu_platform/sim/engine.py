"""The discrete-event engine: a heap of timed callbacks.

Events at the same time run in the order they were scheduled, so with seeded generators a run is
reproducible. Randomness is not drawn here but from one generator per concern, each seeded from the
scenario's seed (the failure trace, kube-scheduler's tie-breaks, each repair's registration times), so
that one concern drawing more numbers under one policy does not shift another's: both policies see the
same failures and the same repairs.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(order=True, slots=True)
class _Event:
    at: float
    seq: int
    name: str = field(compare=False)
    fn: Callable[..., None] = field(compare=False)
    args: tuple[Any, ...] = field(compare=False, default=())
    cancelled: bool = field(compare=False, default=False)


class Handle:
    """Lets the scheduler of an event cancel it before it fires."""

    __slots__ = ("_event",)

    def __init__(self, event: _Event) -> None:
        self._event = event

    @property
    def at(self) -> float:
        return self._event.at

    @property
    def pending(self) -> bool:
        return not self._event.cancelled

    def cancel(self) -> None:
        self._event.cancelled = True


class Engine:
    """Time only moves forward; ``record`` keeps (time, name) of every fired event for replay checks."""

    def __init__(self, *, start: float = 0.0, record: bool = False) -> None:
        self.now = start
        self._queue: list[_Event] = []
        self._seq = itertools.count()
        self.fired = 0
        self.log: list[tuple[float, str]] | None = [] if record else None

    def at(self, when: float, name: str, fn: Callable[..., None], *args: Any) -> Handle:
        if when < self.now:
            raise ValueError(f"event {name!r} scheduled in the past ({when} < {self.now})")
        event = _Event(when, next(self._seq), name, fn, args)
        heapq.heappush(self._queue, event)
        return Handle(event)

    def after(self, delay: float, name: str, fn: Callable[..., None], *args: Any) -> Handle:
        return self.at(self.now + max(0.0, delay), name, fn, *args)

    def run(self, until: float) -> None:
        """Fire every event due at or before ``until``; the clock ends at ``until``."""
        queue = self._queue
        while queue and queue[0].at <= until:
            event = heapq.heappop(queue)
            if event.cancelled:
                continue
            event.cancelled = True
            self.now = event.at
            self.fired += 1
            if self.log is not None:
                self.log.append((event.at, event.name))
            event.fn(*event.args)
        self.now = max(self.now, until)

    def __len__(self) -> int:
        return sum(1 for e in self._queue if not e.cancelled)
