"""Slice shapes as stack files name them (``topology`` plus ``multiHost`` for 2x4)."""

from __future__ import annotations

from .. import catalog


def entry_shape(topology: str, multi_host: bool | None) -> catalog.SliceShape | None:
    """The catalog shape a stack entry names; None when TPU v6e has no such slice."""
    try:
        return catalog.lookup(topology, multi_host)
    except catalog.UnsupportedSliceError:
        return None


def describe_shape(shape: catalog.SliceShape) -> str:
    """``4x4``; the two forms of 2x4 say which one they are."""
    if shape.topology == "2x4":
        return f"2x4 ({'multi' if shape.multi_host else 'single'}-host)"
    return shape.topology


def default_flavor_name(shape: catalog.SliceShape) -> str:
    """``tpu-v6e-4x4``; the two-VM form of 2x4 (the one that shares labels) is ``tpu-v6e-2x4-multihost``."""
    base = f"tpu-v6e-{shape.topology}"
    if shape == catalog.lookup(shape.topology):
        return base
    return f"{base}-multihost"
