"""Helpers every section's checks share: shape lookups, pool capacity, name suggestions."""

from __future__ import annotations

import difflib

from ... import catalog
from ...queueplan import pool_flavors
from ..platform import PlatformConfig
from ..problems import Loc, Problems


def pool_slices_by_shape(cfg: PlatformConfig) -> dict[catalog.SliceShape, int]:
    """Slices per shape the slice pools provide (pools with unknown shapes are skipped)."""
    return {flavor.shape: flavor.slices for flavor in pool_flavors(cfg)}


def closest(name: str, options: list[str]) -> str:
    """A "did you mean" hint for a misspelt name, or nothing."""
    close = difflib.get_close_matches(name, options, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_shape(
    topology: str, multi_host: bool | None, here: Loc, problems: Problems
) -> catalog.SliceShape | None:
    try:
        return catalog.lookup(topology, multi_host)
    except catalog.UnsupportedSliceError as err:
        problems.add((*here, "topology"), str(err))
        return None
