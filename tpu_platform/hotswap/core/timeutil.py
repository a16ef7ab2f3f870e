"""RFC 3339 <-> epoch seconds. The core works in float epoch seconds; annotations hold RFC 3339."""

from __future__ import annotations

import math
from datetime import UTC, datetime

MAX_EPOCH = 253_402_300_799.0
"""9999-12-31T23:59:59Z: the last instant RFC 3339 can write."""


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
