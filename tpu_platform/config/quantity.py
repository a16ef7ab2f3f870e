"""Kubernetes quantities (``resource.Quantity``), parsed as the API server parses them.

The grammar is apimachinery's (k8s.io/apimachinery v0.34.12 ``pkg/api/resource/quantity.go``):
a signed decimal number (``1``, ``1.5``, ``.5``, ``5.``) followed by a binary-SI suffix (``Ki`` ...
``Ei``), a decimal-SI suffix (``n``, ``u``, ``m``, none, ``k``, ``M`` ... ``E``: ``suffix.go``) or a
decimal exponent (``e3``, ``E-6``). A parsed value keeps at most nano precision, rounded up
(``ParseQuantity``: a value finer than 1n becomes 1n), which is what a webhook comparing quantities
sees.
"""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal

_QUANTITY = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
NANO = Decimal("1e-9")


def parse_quantity(text: str) -> Decimal | None:
    """The quantity's value, rounded up to 1n as the API server stores it; None if not a quantity."""
    match = _QUANTITY.match(text.strip())
    if not match:
        return None
    number, suffix = Decimal(match.group(1)), match.group(2) or ""
    if suffix in _BINARY:
        value = number * _BINARY[suffix]
    elif suffix in _DECIMAL:
        value = number.scaleb(_DECIMAL[suffix])
    elif suffix:
        value = number.scaleb(int(suffix[1:]))
    else:
        value = number
    return value.quantize(NANO, rounding=ROUND_CEILING) if value != value.to_integral_value() else value
