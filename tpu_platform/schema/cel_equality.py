"""CEL's heterogeneous equality, as the Kubernetes API server evaluates ``==`` and ``!=``.

cel-python raises "no matching overload" when the two sides have different types; cel-go, which
the API server runs, does not: values of different types are simply unequal, and numbers compare
by value across ``int``, ``uint`` and ``double`` (``1 == 1.0u`` is true, ``'metrics' != 0`` is true).
Lists and maps compare element by element with the same rule.

Source: the CEL language definition (google/cel-spec ``doc/langdef.md``, "Equality": heterogeneous
equality, numbers compared by value across types) and its implementation in cel-go
(``common/types/compare.go``, ``common/types/equal.go``), which the API server links.
"""

from __future__ import annotations

import math
from typing import Any

from celpy import celtypes
from celpy.evaluation import CELFunction

_NUMERIC = (celtypes.IntType, celtypes.UintType, celtypes.DoubleType)


def _kind(value: Any) -> str:
    """The CEL type family a value belongs to (bool before int: ``BoolType`` subclasses ``int``)."""
    if isinstance(value, celtypes.BoolType):
        return "bool"
    if isinstance(value, _NUMERIC):
        return "number"
    if isinstance(value, celtypes.StringType):
        return "string"
    if isinstance(value, celtypes.BytesType):
        return "bytes"
    if isinstance(value, celtypes.ListType):
        return "list"
    if isinstance(value, celtypes.MapType):
        return "map"
    if value is None or isinstance(value, celtypes.NullType):
        return "null"
    return type(value).__name__


def cel_equal(left: Any, right: Any) -> bool:
    """``left == right`` under CEL's heterogeneous equality."""
    kind = _kind(left)
    if kind != _kind(right):
        return False
    if kind == "number":
        # NaN is unequal to everything, itself included (IEEE 754, as cel-go).
        if isinstance(left, float) and math.isnan(left):
            return False
        if isinstance(right, float) and math.isnan(right):
            return False
        if isinstance(left, float) or isinstance(right, float):
            return float(left) == float(right)
        return int(left) == int(right)
    if kind == "null":
        return True
    if kind == "list":
        return len(left) == len(right) and all(cel_equal(a, b) for a, b in zip(left, right, strict=True))
    if kind == "map":
        if len(left) != len(right):
            return False
        for key, value in left.items():
            match = [other for other in right if cel_equal(key, other)]
            if not match or not cel_equal(value, right[match[0]]):
                return False
        return True
    return bool(left == right)


def cel_eq(left: Any, right: Any) -> celtypes.BoolType:
    return celtypes.BoolType(cel_equal(left, right))


def cel_ne(left: Any, right: Any) -> celtypes.BoolType:
    return celtypes.BoolType(not cel_equal(left, right))


# Passed to ``celpy.Environment.program(functions=...)``: overrides cel-python's strict operators.
EQUALITY_FUNCTIONS: dict[str, CELFunction] = {"_==_": cel_eq, "_!=_": cel_ne}
