"""The quantity and Go-duration parsers against upstream's own test tables (``go_tables.py``).

Every extractable row must agree: the same value, or refused where upstream refuses. The counts go
to the test report (``record_property``) and to stdout, as ``quantity: N of N upstream rows
agree``. No row is excluded: :data:`EXCLUDED` would name one, with the reason, if one had to be.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from tests.hotswap.go_tables import (
    GoSources,
    QuantityRow,
    duration_rows,
    go_sources,
    quantity_comparisons,
    quantity_rows,
)
from tpu_platform.hotswap.formats.duration import DurationError, parse_duration
from tpu_platform.hotswap.formats.quantity import QuantityError, parse_quantity

EXCLUDED: dict[str, str] = {}
"""Upstream rows the parsers deliberately do not follow: input -> why. Empty: they follow every row."""

Record = Any  # pytest's record_property fixture


@pytest.fixture(scope="module")
def sources() -> GoSources:
    found = go_sources()
    if isinstance(found, str):
        pytest.skip(found)
    return found


@pytest.fixture(scope="module")
def quantity_test(sources: GoSources) -> Path:
    if sources.quantity_test is None:
        pytest.skip(
            f"k8s.io/apimachinery@{sources.apimachinery_version} is not in the Go module cache: "
            "run ./dev upstream (it downloads the modules upstream/ pins)"
        )
    return sources.quantity_test


def _report(record_property: Record, name: str, agreed: int, total: int, where: str) -> str:
    line = f"{name}: {agreed} of {total} upstream rows agree ({where})"
    record_property(f"{name}_rows", total)
    record_property(f"{name}_agree", agreed)
    print(line)
    return line


def _quantity(text: str) -> Fraction | None:
    try:
        return Fraction(parse_quantity(text))
    except QuantityError:
        return None


def _duration(text: str) -> int | None:
    try:
        return parse_duration(text)
    except DurationError:
        return None


def _go_reading(nanoseconds: int | None) -> str:
    return "refuses it" if nanoseconds is None else str(nanoseconds)


def _quantity_disagrees(row: QuantityRow) -> str | None:
    """Why ``row`` disagrees with the parser, or None."""
    got = _quantity(row.text)
    if row.expect is None:
        return None if got is None else f"{row.table}: {row.text!r} parsed as {got}, upstream refuses it"
    if isinstance(row.expect, str):
        want = _quantity(row.expect)
        if got is None or want is None or got != want:
            return f"{row.table}: {row.text!r} gave {got}, {row.expect!r} gave {want}; upstream: equal"
        return None
    if got is None:
        return f"{row.table}: {row.text!r} refused, upstream gives {row.expect}"
    same = float(got) == float(row.expect) if row.as_float else got == row.expect
    return None if same else f"{row.table}: {row.text!r} gave {got}, upstream {row.expect}"


def test_every_go_parse_duration_row_agrees(sources: GoSources, record_property: Record) -> None:
    rows = [row for row in duration_rows(sources.time_test) if row.text not in EXCLUDED]
    assert len(rows) > 50, "parseDurationTests and parseDurationErrorTests shrank: check go_tables.py"
    wrong = [
        f"{row.text!r}: got {_duration(row.text)}, Go {_go_reading(row.nanoseconds)}"
        for row in rows
        if _duration(row.text) != row.nanoseconds
    ]
    line = _report(
        record_property,
        "duration",
        len(rows) - len(wrong),
        len(rows),
        f"{sources.go_version} time_test.go parseDurationTests and parseDurationErrorTests",
    )
    assert not wrong, line + ":\n" + "\n".join(wrong)


def test_every_apimachinery_quantity_row_agrees(
    sources: GoSources, quantity_test: Path, record_property: Record
) -> None:
    rows = [row for row in quantity_rows(quantity_test) if row.text not in EXCLUDED]
    comparisons = quantity_comparisons(quantity_test)
    assert len(rows) > 300, "apimachinery's quantity tables shrank: check go_tables.py"
    wrong = [why for row in rows if (why := _quantity_disagrees(row)) is not None]
    for x, y, sign in comparisons:
        a, b = _quantity(x), _quantity(y)
        if a is None or b is None or (a > b) - (a < b) != sign:
            wrong.append(f"TestQuantityCmp: {x!r} vs {y!r} should compare {sign}, parsed {a} and {b}")
    total = len(rows) + len(comparisons)
    line = _report(
        record_property,
        "quantity",
        total - len(wrong),
        total,
        f"apimachinery {sources.apimachinery_version} quantity_test.go",
    )
    assert not wrong, line + ":\n" + "\n".join(wrong)


def test_the_go_string_reader_keeps_invalid_utf8_invalid(sources: GoSources) -> None:
    """Go's error table has byte strings that are no UTF-8; they must reach the parser as such."""
    texts = [row.text for row in duration_rows(sources.time_test) if row.nanoseconds is None]
    assert "\udc85\udc85" in texts and "\ufffd" in texts


def test_no_exclusion_is_stale(sources: GoSources) -> None:
    """An excluded row must still be upstream's, or its reason is about nothing."""
    known = {row.text for row in duration_rows(sources.time_test)}
    if sources.quantity_test is not None:
        known |= {row.text for row in quantity_rows(sources.quantity_test)}
    assert not set(EXCLUDED) - known


def test_a_value_finer_than_a_nanounit_is_rounded_away_from_zero() -> None:
    """What upstream's rows ``3.001n`` -> 4n and ``-0.000000000001Ki`` -> -2n rest on, here without Go."""
    assert parse_quantity("3.001n") == Decimal("4e-9")
    assert parse_quantity("-0.000000000001Ki") == Decimal("-2e-9")
