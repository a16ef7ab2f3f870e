"""Every reader of a Kubernetes quantity or a Go duration gives what the one parser of its format
gives (``tpu_platform/hotswap/formats``), and keeps its own words for what it refuses."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tpu_platform.config.formats import parse_quantity as stack_quantity
from tpu_platform.config.kueue import check_duration, duration_seconds
from tpu_platform.hotswap.core.settings import SettingsError
from tpu_platform.hotswap.core.settings import setting_value as _as_duration
from tpu_platform.hotswap.formats.duration import parse_duration
from tpu_platform.hotswap.formats.quantity import QuantityError, parse_quantity
from tpu_platform.kueue.objects import _quantity as rendered_weight
from tpu_platform.policy.kueue_rules import parse_quantity as policy_quantity
from tpu_platform.sim.kueue import _duration_s as sim_seconds
from tpu_platform.status.model import quantity as status_quantity

QUANTITIES = [
    "64",
    "500m",
    "1.5",
    "2Ki",
    "1Gi",
    "3Pi",
    "1Ei",
    "1P",
    "2E",
    "1e3",
    "1.5E-2",
    "+7",
    "-4",
    "0.0000000001",
]
DURATIONS = ["30m", "1h30m", "90s", "1.5h", "500ms", "250us", "12µs", "12μs", ".5s", "5.s", "0", "+10m"]


@pytest.mark.parametrize("text", QUANTITIES)
def test_every_quantity_reader_gives_the_parsers_value(text: str) -> None:
    value = parse_quantity(text)
    assert stack_quantity(text) == value
    assert policy_quantity(text) == float(value)
    assert policy_quantity(f" {text} ") == float(value), "JSON decoding drops surrounding whitespace"
    assert status_quantity(text) == float(value)


@pytest.mark.parametrize("text", ["sixteen", "1GiB", "1 Gi", "0x10", "1.2.3", ""])
def test_the_readers_refuse_what_the_api_server_refuses_in_their_own_words(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)
    with pytest.raises(ValueError, match="is not a Kubernetes quantity such as '500m'"):
        stack_quantity(text)
    assert policy_quantity(text) is None


def test_the_stack_is_stricter_than_the_server_only_where_it_can_be_a_typo() -> None:
    """The server reads a number without digits as 0 and takes any int32 exponent."""
    assert parse_quantity("Gi") == 0 and parse_quantity(".") == 0
    with pytest.raises(ValueError, match="is not a Kubernetes quantity"):
        stack_quantity("Gi")
    assert parse_quantity("1e40") == Decimal("1e40")
    with pytest.raises(ValueError, match="exponent out of range for a container resource"):
        stack_quantity("1e40")


@pytest.mark.parametrize("text", [".", "-", "Gi", "Ti", "k", "e3"])
def test_upstream_reads_a_number_without_digits_as_zero_on_its_fast_path(text: str) -> None:
    assert parse_quantity(text) == 0


@pytest.mark.parametrize("text", ["Pi", "Ei", "e-10", ".e-29"])
def test_elsewhere_it_finds_no_digits_and_refuses_it(text: str) -> None:
    with pytest.raises(QuantityError, match="no digits"):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("weight", "rendered"),
    [("1", 1), ("16", 16), ("0.5", "0.5"), ("500m", "500m"), ("1k", "1k"), ("+1", "+1")],
)
def test_fair_sharing_weights_render_plain_whole_numbers_as_integers(
    weight: str, rendered: int | str
) -> None:
    assert rendered_weight(weight) == rendered


@pytest.mark.parametrize("text", DURATIONS)
def test_every_duration_reader_gives_the_parsers_value(text: str) -> None:
    seconds = parse_duration(text) / 10**9
    assert check_duration(text, "timeout") == text
    assert duration_seconds(text) == seconds
    assert sim_seconds(text) == seconds
    assert _as_duration("healthy_after_seconds", text) == seconds


@pytest.mark.parametrize(("text", "words"), [
    ("30 minutes", "is not a duration such as '30m'"),
    ("1d", "is not a duration such as '30m'"),
    ("-5m", "is negative, which Kueue rejects"),
    ("400d", "is not a duration such as '30m'"),
    ("367d", "is not a duration"),
    ("8785h", "is longer than a year"),
    ("3000000h", "is longer than a year"),
])  # fmt: skip
def test_the_stack_refuses_durations_in_its_own_words(text: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        check_duration(text, "timeout")


def test_the_simulator_and_the_controller_keep_their_words() -> None:
    with pytest.raises(ValueError, match=r"duration '90' needs a unit \(s, m, h\)"):
        sim_seconds("90")
    with pytest.raises(ValueError, match="cannot read duration '1d'"):
        sim_seconds("1d")
    assert _as_duration("healthy_after_seconds", " 90 ") == 90.0, "a bare number is seconds"
    with pytest.raises(SettingsError, match="expected seconds or a duration like '30s', '2m'"):
        _as_duration("healthy_after_seconds", "1d")
    with pytest.raises(SettingsError, match="must be a finite number >= 0"):
        _as_duration("healthy_after_seconds", "-5s")
