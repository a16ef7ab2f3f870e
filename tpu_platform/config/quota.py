"""Quota entries of the ``teams`` and ``cohorts`` sections: one slice shape each, in slices or chips."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from .. import catalog
from .base import StackModel
from .shapes import entry_shape

# Caps on absurd sizes: a slice pool group holds at most 512 slices and a stack a few groups;
# 4,096 slices of the largest shape (256 chips) bound any real quota and keep Kueue's int64
# quantities far from overflow.
MAX_SLICES = 4096
MAX_CHIPS = MAX_SLICES * 256


class QuotaConfig(StackModel):
    """Quota of one slice shape, in whole slices (or in chips that make whole slices).

    ``slices``/``chips`` is the nominal quota: guaranteed to this queue. ``borrowingLimit*``
    caps what it may borrow from its cohort on top (unset: no cap); ``lendingLimit*`` caps what
    it lends to the cohort (unset: everything it is not using). Limits need a cohort.
    """

    misused_keys: ClassVar[dict[str, str]] = {
        "nominalQuota": "write the nominal quota as slices: <n> (whole slices) or chips: <n>",
        "borrowingLimit": "write borrowingLimitSlices: <n> (or borrowingLimitChips)",
        "lendingLimit": "write lendingLimitSlices: <n> (or lendingLimitChips)",
        "flavor": (
            "name the shape with topology (and multiHost for 2x4); flavors are named in "
            "tpu-platform:kueue.flavors"
        ),
        "name": (
            "name the shape with topology (and multiHost for 2x4); flavors are named in "
            "tpu-platform:kueue.flavors"
        ),
    }

    topology: str
    multi_host: bool | None = None
    slices: int | None = Field(None, ge=0, le=MAX_SLICES)
    chips: int | None = Field(None, ge=0, le=MAX_CHIPS)
    borrowing_limit_slices: int | None = Field(None, ge=0, le=MAX_SLICES)
    borrowing_limit_chips: int | None = Field(None, ge=0, le=MAX_CHIPS)
    lending_limit_slices: int | None = Field(None, ge=0, le=MAX_SLICES)
    lending_limit_chips: int | None = Field(None, ge=0, le=MAX_CHIPS)

    def shape(self) -> catalog.SliceShape | None:
        return entry_shape(self.topology, self.multi_host)


def as_slices(slices: int | None, chips: int | None, shape: catalog.SliceShape) -> int | None:
    """Whole slices of a (slices, chips) pair; chips round down (the checks reject partial slices)."""
    if slices is not None:
        return slices
    if chips is not None:
        return chips // shape.chips
    return None
