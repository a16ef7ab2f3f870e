"""The ``slicePools`` section: TPU v6e slices, one GKE node pool each."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from .base import StackModel, check_gke_name
from .formats import check_gke_version, check_label_key, check_label_value, reserved_label_prefix

CapacityType = Literal["onDemand", "reservation", "spot", "flexStart", "queuedProvisioning"]

DURATION_RE = re.compile(r"^[0-9]+s$")


class CapacityConfig(StackModel):
    """Where the TPU VMs come from. Exactly one source per pool.

    - ``onDemand``: regular capacity;
    - ``reservation``: a specific reservation (``reservation``, optionally in ``reservationProject``);
    - ``spot``: Spot VMs, preemptible at any time;
    - ``flexStart``: Dynamic Workload Scheduler flex-start (autoscaled from 0, no auto-repair);
    - ``queuedProvisioning``: DWS queued provisioning (autoscaled from 0, used through ProvisioningRequests).
    """

    type: CapacityType = "onDemand"
    reservation: str | None = None
    reservation_project: str | None = None
    max_run_duration: str | None = Field(
        None, description="Flex-start only: how long the VMs may run, in seconds, e.g. '86400s'."
    )

    @field_validator("max_run_duration")
    @classmethod
    def _duration(cls, value: str | None) -> str | None:
        if value is not None and not DURATION_RE.match(value):
            raise ValueError(
                f"maxRunDuration {value!r} must be whole seconds with an 's' suffix, e.g. '86400s'"
            )
        return value


class BootDiskConfig(StackModel):
    """The TPU VMs' boot disk; unset fields keep GKE's defaults for the machine type."""

    type: str | None = Field(None, description="Compute Engine disk type, e.g. hyperdisk-balanced.")
    size_gb: int | None = Field(None, ge=10, le=65536)

    @field_validator("type")
    @classmethod
    def _type(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^[a-z][-a-z0-9]{1,61}[a-z0-9]$", value):
            raise ValueError(f"boot disk type {value!r} is not a disk type name such as 'hyperdisk-balanced'")
        return value


class SlicePoolConfig(StackModel):
    """A group of identical TPU v6e slices; ``count`` slices become ``count`` node pools."""

    name: str
    topology: str
    multi_host: bool | None = Field(
        None, description="Only for 2x4: true for two ct6e-standard-4t VMs, false for one -8t VM."
    )
    count: int = Field(1, ge=1, le=512)
    zone: str | None = Field(None, description="Zone of these slices; defaults to gcp:zone.")
    capacity: CapacityConfig = CapacityConfig()
    team: str | None = Field(None, description="Label the pools as dedicated to this team.")
    auto_repair: bool | None = None
    auto_upgrade: bool = True
    node_version: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    max_pods_per_node: int | None = Field(None, ge=8, le=256)
    image_streaming: bool = Field(
        True, description="GKE image streaming (gcfsConfig): a restarted slice's large images start sooner."
    )
    boot_disk: BootDiskConfig | None = None

    @field_validator("name")
    @classmethod
    def _gke_name(cls, value: str) -> str:
        return check_gke_name(value, "slice pool name", max_len=36)

    @field_validator("node_version")
    @classmethod
    def _version(cls, value: str | None) -> str | None:
        return None if value is None else check_gke_version(value)

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: dict[str, str]) -> dict[str, str]:
        """Qualified keys and valid values (apimachinery's label validation), and none of the
        labels GKE, Kubernetes or the platform set themselves (``formats.RESERVED_LABEL_PREFIXES``)."""
        if len(value) > 64:
            raise ValueError(f"{len(value)} labels; the platform takes at most 64 extra labels per pool")
        for key, label in value.items():
            check_label_key(key)
            check_label_value(key, label)
            reserved = reserved_label_prefix(key)
            if reserved is not None:
                raise ValueError(
                    f"label {key!r} is under {reserved}/, which GKE, Kubernetes or the platform set "
                    "themselves (a TPU pool's accelerator and topology labels come from its shape); "
                    "remove it or use your own prefix such as example.com/"
                )
        return value

    def pool_names(self) -> list[str]:
        """Names of the node pools this group creates: ``name`` alone, or ``name-0``, ``name-1``..."""
        if self.count == 1:
            return [self.name]
        return [f"{self.name}-{i}" for i in range(self.count)]
