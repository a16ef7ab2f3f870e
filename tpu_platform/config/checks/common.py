"""Helpers every section's checks share: shape lookups, pool capacity, name suggestions."""

from __future__ import annotations

import difflib
from collections import Counter

from ... import catalog
from ..platform import PlatformConfig
from ..problems import Loc, Problems
from ..shapes import entry_shape


def pool_slices_by_shape(cfg: PlatformConfig) -> dict[catalog.SliceShape, int]:
    """Slices per shape the slice pools provide (pools with unknown shapes are skipped)."""
    counts: Counter[catalog.SliceShape] = Counter()
    for pool in cfg.slice_pools:
        shape = entry_shape(pool.topology, pool.multi_host)
        if shape is not None:
            counts[shape] += pool.count
    return dict(counts)


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
