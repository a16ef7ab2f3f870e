"""Go durations, read as Go's ``time.ParseDuration`` reads them.

One parser for every part of the platform (Kueue's Configuration decodes its timeouts into
``metav1.Duration`` with it; the controller's settings take the same syntax), after Go 1.26
``src/time/format.go`` ``ParseDuration``: an optional sign, then one or more decimal numbers, each
with an optional fraction and a unit (``ns``, ``us``, ``µs`` or ``μs``, ``ms``, ``s``, ``m``,
``h``), such as ``300ms``, ``-1.5h`` or ``2h45m``; ``0`` alone (or signed) is zero. The value is whole
nanoseconds in int64, a larger one is an error, and a fraction is taken with Go's own float64
arithmetic, so the result is Go's to the nanosecond.
"""

from __future__ import annotations

from typing import Final, Literal

MAX_NANOSECONDS: Final = 2**63 - 1
MIN_NANOSECONDS: Final = -(2**63)
NANOSECONDS_PER_SECOND: Final = 10**9
UNITS: Final = {
    "ns": 1,
    "us": 10**3,
    "µs": 10**3,  # U+00B5 micro sign
    "μs": 10**3,  # U+03BC Greek small letter mu
    "ms": 10**6,
    "s": 10**9,
    "m": 60 * 10**9,
    "h": 3600 * 10**9,
}
_DIGITS = "0123456789"
_LIMIT = 1 << 63
"""Go accumulates the magnitude in a uint64 and refuses more than this."""

Problem = Literal["invalid", "missing unit", "unknown unit", "overflow"]


class DurationError(ValueError):
    """``text`` is not a Go duration. ``problem`` says why, as Go's messages do (Go reports an
    overflow as ``invalid duration``; it is told apart here so callers can say "too long")."""

    def __init__(self, text: str, problem: Problem, unit: str = "") -> None:
        self.text = text
        self.problem = problem
        shown = repr(text[:80])
        if problem == "missing unit":
            message = f"missing unit in duration {shown}"
        elif problem == "unknown unit":
            message = f"unknown unit {unit[:20]!r} in duration {shown}"
        elif problem == "overflow":
            message = f"invalid duration {shown}: longer than int64 nanoseconds (about 292 years)"
        else:
            message = f"invalid duration {shown}"
        super().__init__(message)


def parse_duration(text: str) -> int:
    """Nanoseconds of the Go duration ``text``, or :class:`DurationError` where Go returns an error."""
    rest = text
    negative = False
    if rest[:1] in ("-", "+"):
        negative = rest[0] == "-"
        rest = rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise DurationError(text, "invalid")
    total = 0
    while rest:
        amount, rest = _term(text, rest)
        total += amount
        if total > _LIMIT:
            raise DurationError(text, "overflow")
    if negative:
        return -total
    if total > MAX_NANOSECONDS:
        raise DurationError(text, "overflow")
    return total


def duration_seconds(text: str) -> float:
    """Seconds of the Go duration ``text`` (the nearest float), or :class:`DurationError`."""
    return parse_duration(text) / NANOSECONDS_PER_SECOND


def format_duration(nanoseconds: int) -> str:
    """Go's ``Duration.String``: ``1h2m3.5s``, ``1.5µs``, ``0s``; :func:`parse_duration` reads it back."""
    if not MIN_NANOSECONDS <= nanoseconds <= MAX_NANOSECONDS:
        raise DurationError(str(nanoseconds), "overflow")
    sign = "-" if nanoseconds < 0 else ""
    magnitude = abs(nanoseconds)
    if magnitude == 0:
        return "0s"
    if magnitude < UNITS["us"]:
        return f"{sign}{magnitude}ns"
    if magnitude < UNITS["ms"]:
        return f"{sign}{_decimal(magnitude, 3)}µs"
    if magnitude < UNITS["s"]:
        return f"{sign}{_decimal(magnitude, 6)}ms"
    minutes, nanos = divmod(magnitude, UNITS["m"])
    hours, minutes = divmod(minutes, 60)
    text = f"{_decimal(nanos, 9)}s"
    if hours or minutes:
        text = f"{minutes}m{text}"
    if hours:
        text = f"{hours}h{text}"
    return sign + text


def _term(text: str, rest: str) -> tuple[int, str]:
    """One ``[0-9]*(.[0-9]*)?unit`` term of ``rest`` in nanoseconds, and what follows it."""
    if not rest or not (rest[0] == "." or rest[0] in _DIGITS):
        raise DurationError(text, "invalid")
    whole, rest, had_whole = _leading_int(text, rest)
    fraction, scale, had_fraction = 0, 1.0, False
    if rest[:1] == ".":
        fraction, scale, rest, had_fraction = _leading_fraction(rest[1:])
    if not had_whole and not had_fraction:
        raise DurationError(text, "invalid")
    end = next((i for i, c in enumerate(rest) if c == "." or c in _DIGITS), len(rest))
    if end == 0:
        raise DurationError(text, "missing unit")
    unit_name, rest = rest[:end], rest[end:]
    unit = UNITS.get(unit_name)
    if unit is None:
        raise DurationError(text, "unknown unit", unit_name)
    if whole > _LIMIT // unit:
        raise DurationError(text, "overflow")
    amount = whole * unit
    if fraction > 0:
        amount += int(float(fraction) * (float(unit) / scale))
        if amount > _LIMIT:
            raise DurationError(text, "overflow")
    return amount, rest


def _leading_int(text: str, rest: str) -> tuple[int, str, bool]:
    """Go's ``leadingInt``: the leading digits as a number, refusing more than 2^63."""
    value = 0
    i = 0
    while i < len(rest) and rest[i] in _DIGITS:
        if value > _LIMIT // 10:
            raise DurationError(text, "overflow")
        value = value * 10 + int(rest[i])
        if value > _LIMIT:
            raise DurationError(text, "overflow")
        i += 1
    return value, rest[i:], i > 0


def _leading_fraction(rest: str) -> tuple[int, float, str, bool]:
    """Go's ``leadingFraction``: digits after the point, kept only while they fit (later digits
    are dropped, not an error), with the float64 power of ten they are divided by."""
    value, scale = 0, 1.0
    i = 0
    overflow = False
    while i < len(rest) and rest[i] in _DIGITS:
        if not overflow:
            if value > (_LIMIT - 1) // 10:
                overflow = True
            else:
                candidate = value * 10 + int(rest[i])
                if candidate > _LIMIT:
                    overflow = True
                else:
                    value = candidate
                    scale *= 10
        i += 1
    return value, scale, rest[i:], i > 0


def _decimal(value: int, places: int) -> str:
    """``value / 10**places`` written without trailing zeros (Go's ``fmtFrac`` and ``fmtInt``)."""
    whole, fraction = divmod(value, 10**places)
    digits = str(fraction).rjust(places, "0").rstrip("0")
    return f"{whole}.{digits}" if digits else str(whole)
