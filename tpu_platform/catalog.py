"""TPU v6e (Trillium) slice catalog.

One node pool per slice: GKE creates, scales and repairs a multi-host slice as one unit,
so everything that sizes a pool (machine type, VM count, chips) is derived from the
slice topology here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass

# GKE labels every TPU node with its slice shape.
from .constants import LABEL_ACCELERATOR, LABEL_TOPOLOGY

ACCELERATOR = "tpu-v6e-slice"
MIN_GKE_VERSION = "1.31.2-gke.1115000"
FLEX_START_MIN_GKE_VERSION = "1.33.0-gke.1712000"
"""GKE: "To run TPUs, use GKE version 1.33.0-gke.1712000 or later" with flex-start ("About
flex-start provisioning mode", https://cloud.google.com/kubernetes-engine/docs/concepts/flex-start-vms)."""
FLEX_START_V6E_ZONES = ("asia-northeast1-b", "us-east5-a", "us-east5-b")
"""The zones the same page lists for TPU v6e with flex-start (queued provisioning runs flex-start VMs)."""


@dataclass(frozen=True, slots=True)
class SliceShape:
    """One supported v6e slice: its topology and the VMs GKE builds it from."""

    topology: str
    chips: int
    vms: int
    machine_type: str

    @property
    def multi_host(self) -> bool:
        """A slice spread over several VMs needs COMPACT placement and ``tpu_topology``."""
        return self.vms > 1

    @property
    def chips_per_vm(self) -> int:
        """The ``google.com/tpu`` each node advertises and each pod must request."""
        return self.chips // self.vms

    @property
    def key(self) -> str:
        """A stable identifier that tells the two 2x4 forms apart."""
        return f"{self.topology}-{'multi' if self.multi_host else 'single'}"


_SHAPES: tuple[SliceShape, ...] = (
    SliceShape("1x1", 1, 1, "ct6e-standard-1t"),
    SliceShape("2x2", 4, 1, "ct6e-standard-4t"),
    SliceShape("2x4", 8, 1, "ct6e-standard-8t"),
    SliceShape("2x4", 8, 2, "ct6e-standard-4t"),
    SliceShape("4x4", 16, 4, "ct6e-standard-4t"),
    SliceShape("4x8", 32, 8, "ct6e-standard-4t"),
    SliceShape("8x8", 64, 16, "ct6e-standard-4t"),
    SliceShape("8x16", 128, 32, "ct6e-standard-4t"),
    SliceShape("16x16", 256, 64, "ct6e-standard-4t"),
)

MAX_SLICE_CHIPS = max(s.chips for s in _SHAPES)


class UnsupportedSliceError(ValueError):
    """Raised for a topology (or 2x4 form) that TPU v6e does not offer."""


def all_shapes() -> tuple[SliceShape, ...]:
    """Every supported v6e slice shape, smallest first."""
    return _SHAPES


def valid_topologies() -> list[str]:
    """Topologies in catalog order, each once."""
    return list(dict.fromkeys(s.topology for s in _SHAPES))


def _describe_valid() -> str:
    return ", ".join(f"{s.topology} ({s.chips} chips, {s.vms} x {s.machine_type})" for s in _SHAPES)


def lookup(topology: str, multi_host: bool | None = None) -> SliceShape:
    """Return the shape for ``topology``.

    ``2x4`` exists twice: one ct6e-standard-8t VM (default) or two ct6e-standard-4t VMs
    (``multi_host=True``, what xpk builds). For every other topology ``multi_host``
    must be left unset or match the catalog.
    """
    matches = [s for s in _SHAPES if s.topology == topology]
    if not matches:
        raise UnsupportedSliceError(
            f"TPU v6e has no slice topology {topology!r}; valid topologies: {_describe_valid()}"
        )
    if multi_host is None:
        return matches[0]
    for shape in matches:
        if shape.multi_host == multi_host:
            return shape
    kind = "multi-host" if multi_host else "single-host"
    raise UnsupportedSliceError(
        f"TPU v6e topology {topology!r} has no {kind} form; valid shapes: {_describe_valid()}"
    )


def node_labels(shape: SliceShape) -> dict[str, str]:
    """The labels GKE puts on every node of a slice of this shape."""
    return {LABEL_ACCELERATOR: ACCELERATOR, LABEL_TOPOLOGY: shape.topology}
