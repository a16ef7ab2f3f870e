"""``TpuSlicePool``: a group of identical TPU v6e slices, one GKE node pool per slice."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp

from tpu_platform.slices import SliceSpec

from .gke_cluster import OAUTH_SCOPES

RESERVATION_KEY = "compute.googleapis.com/reservation-name"


@dataclass(frozen=True)
class TpuSlicePoolArgs:
    """The slices of one ``slicePools`` entry and the cluster they join."""

    project: str
    cluster_name: pulumi.Input[str]
    cluster_location: pulumi.Input[str]
    slices: Sequence[SliceSpec]
    node_service_account: pulumi.Input[str] | None = None
    resource_manager_tags: pulumi.Input[Mapping[str, str]] | None = None
    """Tags GKE attaches to every VM of the slices (``{tagKeys/N: tagValues/M}``): the hotswap
    controller's scope (``components/vm_scope.py``). An in-place node pool update, not a replacement
    (terraform-provider-google v7.44.0 ``node_config.go``: no ``ForceNew``, sent as
    ``UpdateNodePoolRequest.resourceManagerTags``)."""
    depends_on: Sequence[pulumi.Resource] = field(default_factory=tuple)
    """What GKE needs before it can create the nodes (the grants that let it attach the tags)."""


def reservation_affinity(spec: SliceSpec) -> gcp.container.NodePoolNodeConfigReservationAffinityArgs | None:
    """SPECIFIC_RESERVATION for reserved slices; NO_RESERVATION for spot, flex-start and DWS."""
    if spec.capacity == "reservation":
        name = spec.reservation or ""
        if spec.reservation_project:
            name = f"projects/{spec.reservation_project}/reservations/{name}"
        return gcp.container.NodePoolNodeConfigReservationAffinityArgs(
            consume_reservation_type="SPECIFIC_RESERVATION", key=RESERVATION_KEY, values=[name]
        )
    if spec.capacity in ("spot", "flexStart", "queuedProvisioning"):
        return gcp.container.NodePoolNodeConfigReservationAffinityArgs(
            consume_reservation_type="NO_RESERVATION"
        )
    return None


def upgrade_settings(spec: SliceSpec) -> gcp.container.NodePoolUpgradeSettingsArgs | None:
    """Upgrades that need no spare TPU capacity: surge 0/1; none set for flex-start VMs.

    For flex-start (and queued provisioning) nodes GKE chooses short-lived upgrades itself ("For
    nodes that use Flex-start VMs, GKE uses short-lived upgrades": GKE "Node pool upgrade
    strategies"), and the provider accepts only ``SURGE`` and ``BLUE_GREEN`` for
    ``upgrade_settings.strategy`` (terraform-provider-google v7.44.0
    ``google/services/container/resource_container_node_pool.go``, ``validation.StringInSlice``),
    so the field is left for GKE to fill in."""
    if spec.flex_start:
        return None
    return gcp.container.NodePoolUpgradeSettingsArgs(strategy="SURGE", max_surge=0, max_unavailable=1)


class TpuSlicePool(pulumi.ComponentResource):
    """Node pools for a group of slices; each pool is one whole slice in one zone."""

    node_pools: list[gcp.container.NodePool]
    pool_names: pulumi.Output[list[str]]

    def __init__(self, name: str, args: TpuSlicePoolArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("tpu-platform:gke:TpuSlicePool", name, None, opts)
        self.node_pools = [self._node_pool(name, spec, args) for spec in args.slices]
        self.pool_names = pulumi.Output.all(*[pool.name for pool in self.node_pools])
        self.register_outputs({"poolNames": self.pool_names})

    def _node_pool(self, name: str, spec: SliceSpec, args: TpuSlicePoolArgs) -> gcp.container.NodePool:
        """Logical name: this component's name plus the slice's suffix (``-0``, ``-1``...)."""
        shape = spec.shape
        placement = (
            gcp.container.NodePoolPlacementPolicyArgs(type="COMPACT", tpu_topology=shape.topology)
            if shape.multi_host
            else None
        )
        # DWS pools scale from 0 to one whole slice, location policy ANY. A slice pool has exactly one
        # zone, so the per-zone limits equal the totals; per-zone limits avoid the total_* limits
        # that GKE tooling has dropped or overridden (terraform-google-kubernetes-engine#1639,
        # k8s-config-connector#1051).
        autoscaling = (
            gcp.container.NodePoolAutoscalingArgs(
                min_node_count=0, max_node_count=shape.vms, location_policy="ANY"
            )
            if spec.autoscaled
            else None
        )
        node_config = gcp.container.NodePoolNodeConfigArgs(
            machine_type=shape.machine_type,
            labels=spec.labels,
            spot=True if spec.capacity == "spot" else None,
            flex_start=True if spec.flex_start else None,
            max_run_duration=spec.max_run_duration,
            reservation_affinity=reservation_affinity(spec),
            gvnic=gcp.container.NodePoolNodeConfigGvnicArgs(enabled=True),
            gcfs_config=gcp.container.NodePoolNodeConfigGcfsConfigArgs(enabled=True)
            if spec.image_streaming
            else None,
            disk_type=spec.boot_disk_type,
            disk_size_gb=spec.boot_disk_size_gb,
            resource_labels=spec.resource_labels,
            resource_manager_tags=args.resource_manager_tags,
            service_account=args.node_service_account,
            oauth_scopes=OAUTH_SCOPES,
            workload_metadata_config=gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(
                mode="GKE_METADATA"
            ),
        )
        return gcp.container.NodePool(
            name + spec.pool_name.removeprefix(spec.group),
            name=spec.pool_name,
            project=args.project,
            cluster=args.cluster_name,
            location=args.cluster_location,
            node_locations=[spec.zone],
            node_count=None if spec.autoscaled else shape.vms,
            initial_node_count=0 if spec.autoscaled else None,
            autoscaling=autoscaling,
            placement_policy=placement,
            queued_provisioning=gcp.container.NodePoolQueuedProvisioningArgs(enabled=True)
            if spec.capacity == "queuedProvisioning"
            else None,
            node_config=node_config,
            management=gcp.container.NodePoolManagementArgs(
                auto_repair=spec.auto_repair, auto_upgrade=spec.auto_upgrade
            ),
            upgrade_settings=upgrade_settings(spec),
            max_pods_per_node=spec.max_pods_per_node,
            version=spec.node_version,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.depends_on)),
        )
