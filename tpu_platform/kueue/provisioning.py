"""Dynamic Workload Scheduler through Kueue: the ProvisioningRequest admission check.

Queued-provisioning node pools get nodes only for ProvisioningRequests
(https://cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest). Kueue creates those
requests itself when a ClusterQueue's flavor carries its ProvisioningRequest admission check
(kueue v0.19.2 ``site/content/en/docs/concepts/admission_check/provisioning_request.md``):

- a ``ProvisioningRequestConfig`` with GKE's class ``queued-provisioning.gke.io``, managing
  ``google.com/tpu`` (the resource the DWS pools provide);
- an ``AdmissionCheck`` whose controller is ``kueue.x-k8s.io/provisioning-request`` and whose
  parameters name that config;
- on every ClusterQueue with quota on a queued-provisioning flavor,
  ``admissionChecksStrategy.admissionChecks: [{name, onFlavors: [...]}]`` (v1beta2 has only the
  strategy form, ``site/content/en/docs/concepts/admission_check/_index.md``), so only workloads
  on those flavors wait for capacity and the rest are admitted on quota alone.

Without them Kueue admits workloads on quota and their pods stay Pending forever. Kueue's own
Configuration needs nothing more: its manager sets up the provisioning controller whenever the API
server serves ProvisioningRequests, as GKE's does (kueue v0.19.2 ``cmd/kueue/main.go``,
``provisioning.ServerSupportsProvisioningRequest``), and the chart's RBAC covers them. Pure functions
of a validated stack; objects validate against ``../shared/crds/kueue-v0.19.2``.
"""

from __future__ import annotations

from typing import Any

from .. import catalog
from ..config import PlatformConfig
from ..constants import LABEL_MANAGED_BY, LABEL_PART_OF, TPU_RESOURCE
from ..slices import expand_slices

KUEUE_API = "kueue.x-k8s.io/v1beta2"
PROVISIONING_CLASS = "queued-provisioning.gke.io"
PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
CHECK_NAME = "dws-provisioning"
CONFIG_NAME = "dws-queued-provisioning"
MANAGED_LABELS = {LABEL_MANAGED_BY: "tpu-platform", LABEL_PART_OF: "tpu-platform"}


def queued_shapes(cfg: PlatformConfig) -> list[catalog.SliceShape]:
    """Slice shapes served by queued-provisioning pools (validation keeps them apart from others)."""
    shapes = {spec.shape for spec in expand_slices(cfg) if spec.capacity == "queuedProvisioning"}
    return [shape for shape in catalog.all_shapes() if shape in shapes]


def dws_flavor_names(cfg: PlatformConfig) -> list[str]:
    return [cfg.kueue.flavor_name(shape) for shape in queued_shapes(cfg)]


def max_run_duration_seconds(cfg: PlatformConfig) -> int | None:
    """The shortest ``maxRunDuration`` of the queued pools: a ProvisioningRequest parameter."""
    durations = [
        int(pool.capacity.max_run_duration.removesuffix("s"))
        for pool in cfg.slice_pools
        if pool.capacity.type == "queuedProvisioning" and pool.capacity.max_run_duration
    ]
    return min(durations) if durations else None


def provisioning_request_config(cfg: PlatformConfig) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "provisioningClassName": PROVISIONING_CLASS,
        "managedResources": [TPU_RESOURCE],
    }
    seconds = max_run_duration_seconds(cfg)
    if seconds is not None:
        # GKE's ProvisioningRequest parameter for how long the nodes may run.
        spec["parameters"] = {"maxRunDurationSeconds": str(seconds)}
    return {
        "apiVersion": KUEUE_API,
        "kind": "ProvisioningRequestConfig",
        "metadata": {"name": CONFIG_NAME, "labels": dict(MANAGED_LABELS)},
        "spec": spec,
    }


def admission_check() -> dict[str, Any]:
    return {
        "apiVersion": KUEUE_API,
        "kind": "AdmissionCheck",
        "metadata": {"name": CHECK_NAME, "labels": dict(MANAGED_LABELS)},
        "spec": {
            "controllerName": PROVISIONING_CONTROLLER,
            "parameters": {
                "apiGroup": "kueue.x-k8s.io",
                "kind": "ProvisioningRequestConfig",
                "name": CONFIG_NAME,
            },
        },
    }


def provisioning_objects(cfg: PlatformConfig) -> list[dict[str, Any]]:
    """The config and the check, in creation order; none when no pool uses queued provisioning."""
    if not queued_shapes(cfg):
        return []
    return [provisioning_request_config(cfg), admission_check()]


def with_admission_checks(cfg: PlatformConfig, cluster_queue: dict[str, Any]) -> dict[str, Any]:
    """The ClusterQueue with the DWS check on the queued flavors it has quota on."""
    dws = set(dws_flavor_names(cfg))
    used = [
        flavor["name"]
        for group in cluster_queue["spec"].get("resourceGroups", [])
        for flavor in group["flavors"]
        if flavor["name"] in dws
    ]
    if not used:
        return cluster_queue
    spec = dict(cluster_queue["spec"])
    spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": CHECK_NAME, "onFlavors": sorted(used)}]}
    return {**cluster_queue, "spec": spec}
