"""Times on cluster objects: RFC 3339 text <-> float epoch seconds, and the clock-skew bound.

Every time read from the cluster counts only if it is finite and no later than the snapshot's now
plus :data:`CLOCK_SKEW_SECONDS` (:func:`accepted`); what a refused time means is decided where it is
read (docs/hotswap-core.md, "times.py" and "screening.py").
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Final

MAX_EPOCH = 253_402_300_799.0
"""9999-12-31T23:59:59Z: the last instant RFC 3339 can write."""
CLOCK_SKEW_SECONDS: Final = 2.0
"""How far beyond the controller's now a time read from the cluster may lie and still count: the
writer's clock (kubelet, API server, workload, another controller replica) against the controller's,
and writers that round to whole seconds. The one skew for every such time."""


def accepted(t: object, now: float, not_before: float | None = None) -> bool:
    """``t`` is a finite time (float or int) no later than ``now + CLOCK_SKEW_SECONDS`` and, with
    ``not_before``, no earlier than ``not_before - CLOCK_SKEW_SECONDS``. NaN and the infinities fail."""
    if type(t) is not float and type(t) is not int:
        return False
    if not (t - t == 0 and t <= now + CLOCK_SKEW_SECONDS):
        return False
    return not_before is None or t >= not_before - CLOCK_SKEW_SECONDS


def bounded(t: float | None, now: float, not_before: float | None = None) -> float | None:
    """``t`` if :func:`accepted`, else None (as if the time were not known)."""
    return t if t is not None and accepted(t, now, not_before) else None


def format_time(t: float) -> str:
    """Render epoch seconds as RFC 3339 UTC; whole seconds stay short, fractions keep microseconds."""
    dt = datetime.fromtimestamp(t, tz=UTC)
    if dt.microsecond == 0:
        return dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str | None) -> float | None:
    """Parse RFC 3339 (``Z`` or offset, optional fraction) or plain epoch seconds; None if unparsable.

    Unparsable values, non-finite numbers (``NaN``, ``inf``) and times outside 1970..9999 are treated
    as absent, so a hand-edited annotation can never crash a reconcile or poison arithmetic.
    """
    if not isinstance(text, str):
        return None
    value = text.strip()
    if not value or len(value) > 64:
        return None
    try:
        number = float(value)
    except ValueError:
        try:
            dt = datetime.fromisoformat(value)
        except ValueError:
            return None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        number = dt.timestamp()
    if not math.isfinite(number) or not 0.0 <= number <= MAX_EPOCH:
        return None
    return number


def parse_time_list(text: str | None) -> tuple[float, ...]:
    """Parse a comma-separated list of times, dropping unparsable items."""
    if not text:
        return ()
    out = [parse_time(item) for item in text.split(",")]
    return tuple(t for t in out if t is not None)


def format_time_list(times: tuple[float, ...] | list[float]) -> str:
    return ",".join(format_time(t) for t in times)


def shown(t: object) -> str:
    """A time for a message: RFC 3339 when it can be written so, else its short repr."""
    if (type(t) is float or type(t) is int) and t - t == 0 and 0.0 <= t <= MAX_EPOCH:
        return format_time(float(t))
    text = repr(t)
    return text if len(text) <= 40 else f"{text[:37]}..."
