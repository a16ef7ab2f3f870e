"""Helpers every section's checks share: shape lookups and pool capacity."""

from __future__ import annotations

from ... import catalog
from ...queueplan import pool_flavors
from ..platform import PlatformConfig
from ..problems import Loc, Problems


def pool_slices_by_shape(cfg: PlatformConfig) -> dict[catalog.SliceShape, int]:
    """Slices per shape the slice pools provide (pools with unknown shapes are skipped)."""
    return {flavor.shape: flavor.slices for flavor in pool_flavors(cfg)}


def check_shape(
    topology: str, multi_host: bool | None, here: Loc, problems: Problems
) -> catalog.SliceShape | None:
    try:
        return catalog.lookup(topology, multi_host)
    except catalog.UnsupportedSliceError as err:
        problems.add((*here, "topology"), str(err))
        return None
