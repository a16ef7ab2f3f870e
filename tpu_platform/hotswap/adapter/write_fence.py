"""The lease's time budget, carried from the applier's fence check to the request it admits.

The applier checks the fence before each write, but the client sends the write only after the
client-side rate limiter, which can take seconds behind a backlog. client-go throttles first and
starts a request's timeout only after that ("Throttle the first try before setting up the timeout
configured on the client", ``rest/request.go`` ``Request.request``, client-go v0.34.10). So the
client asks again as it sends. :func:`fenced` binds a budget source (the elector's
:meth:`~tpu_platform.hotswap.adapter.leader.LeaderElector.write_budget`) to the writes made inside
it. :func:`write_timeout`, called by the client after the rate limiter, turns the budget into
that request's timeout, or refuses the write with :class:`WriteFenced`.

The budget travels in a context variable, as a Go ``context.Context`` carries a deadline, so the
:class:`~tpu_platform.hotswap.adapter.api.KubeApi` protocol and its fakes keep their signatures. A
thread's context is its own, so each node-patch worker binds its own writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

WriteBudget = Callable[[], float | None]
"""Seconds a write sent now may take before its client gives up, or None: no write may start."""

_BUDGET: ContextVar[WriteBudget | None] = ContextVar("hotswap_write_budget", default=None)


class WriteFenced(Exception):
    """A write that was not sent: the fence closed after the applier's check (while the write
    waited for the rate limiter, say), or too little time was left before the lease could pass."""


@contextmanager
def fenced(budget: WriteBudget | None) -> Iterator[None]:
    """Writes made inside are sent only while ``budget`` allows and time out within it (None:
    no fence, the client's own timeouts apply)."""
    token = _BUDGET.set(budget)
    try:
        yield
    finally:
        _BUDGET.reset(token)


def write_timeout(cap: float) -> float | None:
    """The total timeout for a write sent now: ``min(cap, budget)``; None outside :func:`fenced`.

    Raises :class:`WriteFenced` when the bound budget says no write may start."""
    budget = _BUDGET.get()
    if budget is None:
        return None
    seconds = budget()
    if seconds is None:
        raise WriteFenced("the lease is not held with margin: write not sent")
    return min(cap, seconds)
