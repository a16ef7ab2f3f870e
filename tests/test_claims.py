"""Nominal quota claimed per flavor, by owner: one adder for the stack's check, the queue plan and
the policy pack."""

from __future__ import annotations

from tpu_platform.claims import Claims


def test_claims_keep_first_claim_order_and_add_up() -> None:
    claims: Claims[str, str] = Claims()
    claims.add("y", "q1", 16)
    claims.add("x", "q2", 8)
    claims.add("y", "q3", 0.5)
    assert (claims.flavors(), claims.total("y"), claims.total("missing")) == (["y", "x"], 16.5, 0)
    assert claims.over({"y": 16}) == ["y", "x"]
