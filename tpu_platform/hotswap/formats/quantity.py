"""Kubernetes resource quantities, read as the API server reads them.

One parser for every part of the platform, after k8s.io/apimachinery v0.34.x
``pkg/api/resource/quantity.go`` (``parseQuantityString`` and ``ParseQuantity``) and ``suffix.go``:
an optional sign, digits with an optional fraction, then a binary-SI suffix (Ki Mi Gi Ti Pi Ei), a
decimal-SI one (n u m "" k M G T P E) or a decimal exponent (``e3``, ``E-2``, ``e+6``). The value is
an exact ``Decimal`` with upstream's canonical rules applied: a non-zero value finer than 1n is
rounded away from zero to the next 1n, and a binary-SI value is capped at 2^63-1 (either sign).

Upstream's quirks are kept: a number may have no digits (``.``, ``-``, ``Gi``, ``k`` and ``e3`` are 0,
but ``Pi``, ``Ei`` and ``e-10`` are refused: only upstream's int64 fast path reads them, as 0), ``1.``
and ``.5`` are numbers, and ``0.1Ki`` is allowed. One
difference is deliberate: an exponent above 2^31-1, or one that takes the number's scale (exponent
minus fraction digits) below -(2^31-1), is refused, where upstream's int32 arithmetic wraps around
(it reads ``1e4294967296`` as 1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import (
    MAX_EMAX,
    MIN_EMIN,
    ROUND_UP,
    Context,
    Decimal,
    DivisionByZero,
    Inexact,
    InvalidOperation,
    Overflow,
    localcontext,
)
from typing import Final

MAX_INT64: Final = 2**63 - 1
"""Upstream's ``maxAllowed``: the cap on a binary-SI quantity."""
INT32_MAX: Final = 2**31 - 1
NANO: Final = Decimal("1E-9")
"""The finest value a quantity holds (``Nano``); finer ones are rounded up to it."""

# parseQuantityString as a pattern: the scanner takes the longest run of digits, then of fraction
# digits, then of suffix letters, an optional sign and digits to the end; greedy groups do the same.
_SCANNER = re.compile(
    r"(?P<sign>[+-]?)(?P<whole>[0-9]*)(?:\.(?P<fraction>[0-9]*))?(?P<suffix>[eEinumkKMGTP]*[+-]?[0-9]*)"
)
_EXPONENT = re.compile(r"[eE](?P<exponent>[+-]?[0-9]+)")
_DECIMAL_SI: Final = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SI: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_MAX_INT64_DIGITS: Final = len(str(MAX_INT64))


class QuantityError(ValueError):
    """``text`` is not a quantity the API server accepts; ``problem`` says which part failed."""

    def __init__(self, text: str, problem: str) -> None:
        self.text = text
        self.problem = problem
        super().__init__(f"{text[:80]!r} is not a Kubernetes quantity: {problem}")


@dataclass(frozen=True)
class QuantityParts:
    """A quantity as written, split as ``parseQuantityString`` splits it."""

    sign: str
    """``""``, ``"+"`` or ``"-"``."""
    whole: str
    """Digits before the point, as written (maybe none)."""
    fraction: str | None
    """Digits after the point (maybe none); None when there is no point."""
    suffix: str
    """Everything after the number: ``Mi``, ``m``, ``e-3``, ``""``; checked only by :func:`parse_quantity`."""

    @property
    def has_digits(self) -> bool:
        """The number holds a digit: upstream reads a number without one (``Gi``, ``.``) as 0."""
        return bool(self.whole or self.fraction)

    @property
    def is_plain_integer(self) -> bool:
        """Digits only: no sign, point or suffix."""
        return bool(self.whole) and not self.sign and self.fraction is None and not self.suffix

    @property
    def exponent(self) -> int | None:
        """The decimal exponent of an ``e``/``E`` suffix, as ``strconv.ParseInt`` reads it; None for
        any other suffix and for an exponent outside int64, which upstream refuses."""
        match = _EXPONENT.fullmatch(self.suffix)
        if match is None:
            return None
        written = match["exponent"]
        digits = written.lstrip("+-").lstrip("0") or "0"
        if len(digits) > _MAX_INT64_DIGITS:
            return None
        exponent = -int(digits) if written.startswith("-") else int(digits)
        return exponent if -MAX_INT64 - 1 <= exponent <= MAX_INT64 else None


def split_quantity(text: str) -> QuantityParts:
    """Sign, number and suffix of ``text``, or :class:`QuantityError` where upstream's scanner fails."""
    if not text:
        raise QuantityError(text, "it is empty")
    match = _SCANNER.fullmatch(text)
    if match is None:
        raise QuantityError(text, "use a number with an optional suffix such as '500m', '2', '1e3' or '1Gi'")
    return QuantityParts(match["sign"], match["whole"], match["fraction"], match["suffix"])


def parse_quantity(text: str) -> Decimal:
    """The value ``ParseQuantity`` gives ``text``, exactly, or :class:`QuantityError`."""
    parts = split_quantity(text)
    fraction = parts.fraction or ""
    ten, two = _suffix_powers(text, parts)
    if not parts.has_digits and not _fast_path(ten, two):
        raise QuantityError(text, "the number has no digits")
    scale = ten - len(fraction)
    if ten > INT32_MAX or scale < -INT32_MAX:
        raise QuantityError(text, "the exponent is out of range")
    value = Decimal(f"{parts.sign}{parts.whole + fraction or '0'}E{scale}")
    value = _times_power_of_two(value, two)
    if value == 0:
        return Decimal(0)
    value = _round_up_to_nano(value)
    if parts.suffix in _BINARY_SI and abs(value) > MAX_INT64:
        return Decimal(MAX_INT64).copy_sign(value)
    return value


def format_quantity(value: Decimal) -> str:
    """``value`` in the canonical decimal-SI form ``Quantity.String`` writes (``1500m``, ``2k``,
    ``12E``): a whole number and the largest suffix that keeps it whole; beyond ``E`` a decimal
    exponent (``12e21``) rather than a run of zeros. Finer than 1n, ``value`` is first rounded up as
    :func:`parse_quantity` would, so ``parse_quantity(format_quantity(v)) == v`` for every value
    the parser returns."""
    if not value.is_finite():
        raise QuantityError(str(value), "only finite values are quantities")
    if value == 0:
        return "0"
    rounded = _round_up_to_nano(value)
    sign, digit_tuple, _ = rounded.as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    exponent = _exponent(rounded) + len(digit_tuple) - len(digits)
    minus = "-" if sign else ""
    if exponent > _DECIMAL_SI["E"] + 2:
        return f"{minus}{digits}e{exponent}"
    suffix_exponent = max(_DECIMAL_SI["n"], min(_DECIMAL_SI["E"], exponent - exponent % 3))
    suffix = next(s for s, e in _DECIMAL_SI.items() if e == suffix_exponent)
    return f"{minus}{digits}{'0' * (exponent - suffix_exponent)}{suffix}"


def _suffix_powers(text: str, parts: QuantityParts) -> tuple[int, int]:
    """(power of ten, power of two) the suffix multiplies by, as ``suffixHandler.interpret`` reads it."""
    if parts.suffix in _DECIMAL_SI:
        return _DECIMAL_SI[parts.suffix], 0
    if parts.suffix in _BINARY_SI:
        return 0, _BINARY_SI[parts.suffix]
    exponent = parts.exponent
    if exponent is None:
        raise QuantityError(
            text, f"unknown suffix {parts.suffix[:20]!r}: use Ki Mi Gi Ti Pi Ei, n u m k M G T P E or e<N>"
        )
    return exponent, 0


def _fast_path(ten: int, two: int) -> bool:
    """Whether upstream takes its int64 fast path for a number of one digit: a binary suffix up to
    Ti (``precision >= 0``) or a scale of at least 1n. Only there does a number without digits read
    as 0; elsewhere ``inf.Dec.SetString`` finds no digits in it and the quantity is refused."""
    if two:
        return 15 - 1 - two * 3 // 10 - 1 >= 0
    return ten >= -9


def _exact_context(digits: int) -> Context:
    """A context in which arithmetic on numbers of up to ``digits`` digits is exact or raises."""
    return Context(
        prec=digits + 40,
        Emax=MAX_EMAX,
        Emin=MIN_EMIN,
        traps=[InvalidOperation, DivisionByZero, Overflow, Inexact],
    )


def _times_power_of_two(value: Decimal, power: int) -> Decimal:
    if power == 0:
        return value
    with localcontext(_exact_context(len(value.as_tuple().digits))):
        return value * (2**power)


def _round_up_to_nano(value: Decimal) -> Decimal:
    """Upstream's ``amount.Round(amount, Nano, inf.RoundUp)``: away from zero, only when finer."""
    if _exponent(value) >= -9:
        return value
    context = _exact_context(len(value.as_tuple().digits))
    context.traps[Inexact] = False
    return value.quantize(NANO, rounding=ROUND_UP, context=context)


def _exponent(value: Decimal) -> int:
    """The exponent of a finite ``Decimal`` (``as_tuple`` also allows the markers of NaN and infinity)."""
    exponent = value.as_tuple().exponent
    if not isinstance(exponent, int):
        raise QuantityError(str(value), "only finite values are quantities")
    return exponent
