"""A helper every section's checks share: the slice shape an entry names."""

from __future__ import annotations

from ... import catalog
from ..problems import Loc, Problems


def check_shape(
    topology: str, multi_host: bool | None, here: Loc, problems: Problems
) -> catalog.SliceShape | None:
    try:
        return catalog.lookup(topology, multi_host)
    except catalog.UnsupportedSliceError as err:
        problems.add((*here, "topology"), str(err))
        return None
