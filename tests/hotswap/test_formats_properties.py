"""Properties of the quantity and Go-duration parsers (hypothesis): what either formatter writes
parses back to the same value, and no text makes a parser raise anything but its own error."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from tpu_platform.hotswap.formats.duration import (
    MAX_NANOSECONDS,
    MIN_NANOSECONDS,
    DurationError,
    format_duration,
    parse_duration,
)
from tpu_platform.hotswap.formats.quantity import (
    MAX_INT64,
    QuantityError,
    format_quantity,
    parse_quantity,
    split_quantity,
)
from tpu_platform.policy.kueue_rules import parse_quantity as policy_quantity

RELAXED = settings(deadline=None, max_examples=300)
MAX_MILLISECONDS = MAX_NANOSECONDS // 10**6

QUANTITY_ALPHABET = "0123456789.+-eEinumkKMGTPi "
DURATION_ALPHABET = "0123456789.+-nsuµμmh d\x85"

nanounits = st.integers(min_value=-(10**40), max_value=10**40)
"""Quantities in whole nanounits, far beyond int64 either way."""
grammar_like_quantities = st.text(alphabet=QUANTITY_ALPHABET, max_size=24)
grammar_like_durations = st.text(alphabet=DURATION_ALPHABET, max_size=24)
long_digit_runs = st.builds(
    lambda head, zeros, digits, tail: head + "0" * zeros + digits + tail,
    st.sampled_from(["", "-", "1e", "1e-", "1.", "0.", "1E+"]),
    st.sampled_from([0, 5000]),
    st.text(alphabet="0123456789", min_size=1, max_size=5000),
    st.sampled_from(["", "Ki", "m", "s", "h", "ns", "e5"]),
)
"""Past Python's 4300-digit limit on int(str), with and without leading zeros."""


@RELAXED
@given(nanounits)
def test_a_formatted_quantity_parses_back(nanos: int) -> None:
    value = Decimal(nanos).scaleb(-9)
    assert parse_quantity(format_quantity(value)) == value


@RELAXED
@given(nanounits)
def test_formatting_a_parsed_quantity_is_a_fixed_point(nanos: int) -> None:
    text = format_quantity(Decimal(nanos).scaleb(-9))
    assert format_quantity(parse_quantity(text)) == text


@RELAXED
@given(st.integers(min_value=0, max_value=2**70), st.sampled_from(["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]))
def test_binary_quantities_are_capped_as_upstream_caps_them(number: int, suffix: str) -> None:
    value = parse_quantity(f"{number}{suffix}")
    assert value == min(number * 2 ** (10 * ("KMGTPE".index(suffix[0]) + 1)), MAX_INT64)


@RELAXED
@given(st.integers(min_value=MIN_NANOSECONDS, max_value=MAX_NANOSECONDS))
def test_a_formatted_duration_parses_back(nanoseconds: int) -> None:
    assert parse_duration(format_duration(nanoseconds)) == nanoseconds


@RELAXED
@given(
    st.integers(min_value=0, max_value=2**31 - 1)
    | st.integers(min_value=-MAX_MILLISECONDS, max_value=MAX_MILLISECONDS)
)
def test_durations_in_whole_milliseconds_round_trip(milliseconds: int) -> None:
    """Go's own TestParseDurationRoundTrip draws these (``rand.Int31()`` milliseconds)."""
    nanoseconds = milliseconds * 10**6
    assert parse_duration(format_duration(nanoseconds)) == nanoseconds


@RELAXED
@given(st.text() | grammar_like_quantities | long_digit_runs)
def test_the_quantity_parser_raises_only_its_own_error(text: str) -> None:
    try:
        value = parse_quantity(text)
    except QuantityError:
        return
    assert value.is_finite()
    assert split_quantity(text).has_digits or value == 0


@RELAXED
@given(st.text() | grammar_like_quantities | long_digit_runs)
def test_the_policy_reader_never_raises(text: str) -> None:
    result = policy_quantity(text)
    assert result is None or isinstance(result, float)


@RELAXED
@given(st.text() | grammar_like_durations | long_digit_runs)
def test_the_duration_parser_raises_only_its_own_error(text: str) -> None:
    try:
        value = parse_duration(text)
    except DurationError:
        return
    assert MIN_NANOSECONDS <= value <= MAX_NANOSECONDS
