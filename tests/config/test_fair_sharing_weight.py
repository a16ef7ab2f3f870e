"""Fair-sharing weights accepted exactly as Kueue v0.19.2 accepts them.

The table is Kueue's own (``test/integration/singlecluster/webhook/core/cohort_test.go``, the
``FairSharing weight`` entries, run there against the real webhook); the rule is
``pkg/webhooks/common.go`` ``validateFairSharing``.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tpu_platform.config.base import fair_sharing_weight
from tpu_platform.config.formats import parse_quantity

KUEUE_TABLE = [  # (weight, Kueue admits it)
    ("1", True),
    ("0", True),
    ("-1", False),
    ("0.5", True),
    ("1m", True),
    ("1u", True),
    ("2n", True),
    ("1n", False),
    ("0.0000000001", False),
]


def accepted(value: object) -> bool:
    try:
        fair_sharing_weight(value)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize(("weight", "kueue"), KUEUE_TABLE)
def test_agrees_with_kueues_webhook_table(weight: str, kueue: bool) -> None:
    assert accepted(weight) is kueue


def test_agreement_count_on_kueues_table() -> None:
    agree = sum(accepted(w) is k for w, k in KUEUE_TABLE)
    print(f"fair-sharing weights: {agree}/{len(KUEUE_TABLE)} of Kueue v0.19.2's webhook cases agree")
    assert agree == len(KUEUE_TABLE)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1Ki", 1024),
        ("500m", Decimal("0.5")),
        ("1e3", 1000),
        ("1E-3", Decimal("0.001")),
        (".5", Decimal("0.5")),
    ],
)
def test_quantity_forms(text: str, value: Decimal) -> None:
    assert parse_quantity(text) == value


def test_yaml_numbers_are_weights_too() -> None:
    """A YAML ``0.000001`` arrives as a float; Kueue accepts that weight (1u)."""
    assert fair_sharing_weight(0.000001) == "1e-06"
    assert not accepted(1e-12) and not accepted(True) and not accepted("one")


@given(st.decimals(min_value=Decimal("0"), max_value=Decimal("1e6"), allow_nan=False, places=9))
def test_a_decimal_is_accepted_iff_kueue_would(value: Decimal) -> None:
    assert accepted(str(value)) is (value == 0 or value > Decimal("1e-9"))
