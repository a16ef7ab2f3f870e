"""Expand the stack's slice pools into one planned slice (one node pool) each.

Everything downstream (node pools, Kueue flavors, quota math, the plan summary, the
simulator) works from these ``SliceSpec`` values, so the arithmetic lives in one place.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from . import catalog
from .config import PlatformConfig
from .constants import LABEL_CAPACITY, LABEL_SLICE_GROUP, LABEL_TEAM

DEFAULT_MULTI_HOST_MAX_PODS = 15
# Dynamic Workload Scheduler capacity: flex-start VMs, alone or through ProvisioningRequests.
DWS_CAPACITY = ("flexStart", "queuedProvisioning")


@dataclass(frozen=True, slots=True)
class SliceSpec:
    """One TPU v6e slice as GKE will build it: one node pool in one zone."""

    pool_name: str
    group: str
    shape: catalog.SliceShape
    zone: str
    capacity: str
    reservation: str | None = None
    reservation_project: str | None = None
    max_run_duration: str | None = None
    team: str | None = None
    auto_repair: bool = True
    auto_upgrade: bool = True
    node_version: str | None = None
    max_pods_per_node: int | None = None
    labels: dict[str, str] = field(default_factory=dict)
    image_streaming: bool = True
    boot_disk_type: str | None = None
    boot_disk_size_gb: int | None = None

    @property
    def resource_labels(self) -> dict[str, str]:
        """Compute Engine labels on the TPU VMs, for cost allocation by team, slice group and capacity
        (billing exports carry VM labels; keys and values: lowercase letters, digits, '-' and '_')."""
        out = {"tpu-platform-slice-group": self.group, "tpu-platform-capacity": self.capacity}
        if self.team:
            out["tpu-platform-team"] = self.team
        return {key: re.sub(r"[^a-z0-9_-]", "-", value.lower())[:63] for key, value in out.items()}

    @property
    def autoscaled(self) -> bool:
        """Flex-start and queued provisioning pools scale from zero instead of a fixed size."""
        return self.capacity in DWS_CAPACITY

    @property
    def flex_start(self) -> bool:
        """Both DWS modes run flex-start VMs: queued provisioning is flex-start with queued
        provisioning (https://cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest:
        "add the --flex-start and --enable-queued-provisioning flags")."""
        return self.capacity in DWS_CAPACITY

    @property
    def chips(self) -> int:
        return self.shape.chips

    @property
    def nodes(self) -> int:
        return self.shape.vms


def expand_slices(cfg: PlatformConfig) -> list[SliceSpec]:
    """Every slice of the stack, in stack order, with its labels and capacity settings."""
    specs: list[SliceSpec] = []
    for pool in cfg.slice_pools:
        shape = catalog.lookup(pool.topology, pool.multi_host)
        auto_repair = pool.capacity.type not in DWS_CAPACITY if pool.auto_repair is None else pool.auto_repair
        max_pods = pool.max_pods_per_node
        if max_pods is None and shape.multi_host:
            max_pods = DEFAULT_MULTI_HOST_MAX_PODS
        for name in pool.pool_names():
            labels = {LABEL_SLICE_GROUP: pool.name, LABEL_CAPACITY: pool.capacity.type.lower()}
            if pool.team:
                labels[LABEL_TEAM] = pool.team
            labels.update(pool.labels)
            specs.append(
                SliceSpec(
                    pool_name=name,
                    group=pool.name,
                    shape=shape,
                    zone=cfg.pool_zone(pool),
                    capacity=pool.capacity.type,
                    reservation=pool.capacity.reservation,
                    reservation_project=pool.capacity.reservation_project,
                    max_run_duration=pool.capacity.max_run_duration
                    if pool.capacity.type == "flexStart"
                    else None,
                    team=pool.team,
                    auto_repair=auto_repair,
                    auto_upgrade=pool.auto_upgrade,
                    node_version=pool.node_version,
                    max_pods_per_node=max_pods,
                    labels=dict(sorted(labels.items())),
                    image_streaming=pool.image_streaming,
                    boot_disk_type=pool.boot_disk.type if pool.boot_disk else None,
                    boot_disk_size_gb=pool.boot_disk.size_gb if pool.boot_disk else None,
                )
            )
    return specs


@dataclass(frozen=True, slots=True)
class ShapeCapacity:
    """How many slices and chips of one shape the stack provides."""

    shape: catalog.SliceShape
    slices: int

    @property
    def chips(self) -> int:
        return self.slices * self.shape.chips


def capacity_by_shape(specs: list[SliceSpec]) -> list[ShapeCapacity]:
    """Slices and chips per shape, ordered by the catalog."""
    counts = Counter(spec.shape for spec in specs)
    return [ShapeCapacity(shape, counts[shape]) for shape in catalog.all_shapes() if counts[shape]]
