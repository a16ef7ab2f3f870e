"""Typed wrappers that make tpu-platform's components usable from any Pulumi language.

Pulumi infers a component package's schema from the type annotations of each component's
``args`` (TypedDicts of plain types here) and of its outputs. The wrappers validate their
arguments with the same stack model as ``pulumi up`` (``tpu_platform.config``) and build the
Python components underneath, so a TypeScript or YAML program gets the same node pools, the
same checks and the same error messages.
"""

from itertools import groupby
from typing import Any, NotRequired, TypedDict

import pulumi
from tpu_platform.components import GkeCluster, TpuPlatform, TpuPlatformArgs, TpuSlicePool, TpuSlicePoolArgs

from tpu_platform.config import PlatformConfig, parse_platform
from tpu_platform.slices import expand_slices

PACKAGE = "tpu-platform"


def whole_numbers(value: Any) -> Any:
    """Numbers as a stack file has them. The engine sends every number as a double (a protobuf
    ``Struct``), so ``count: 2`` arrives as ``2.0``, which the stack model's whole-number fields
    refuse; the SDK's own conversion of ``int`` inputs (pulumi 3.272.0
    ``provider/experimental/component.py``) is overwritten by the raw value right after it, and
    the free-form sections are never converted. A float field takes an int as it is."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: whole_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [whole_numbers(v) for v in value]
    return value


class CapacityArgs(TypedDict):
    """Where a slice pool's TPU VMs come from."""

    type: str
    """onDemand (default), reservation, spot, flexStart or queuedProvisioning."""
    reservation: NotRequired[str]
    """Name of a specific reservation (type reservation only)."""
    reservation_project: NotRequired[str]
    """Project of a shared reservation."""
    max_run_duration: NotRequired[str]
    """Flex-start only: how long the VMs may run, e.g. 86400s."""


class SlicePoolArgs(TypedDict):
    """A group of identical TPU v6e slices; count slices become count node pools."""

    name: str
    """Base node pool name (at most 36 characters)."""
    topology: str
    """1x1, 2x2, 2x4, 4x4, 4x8, 8x8, 8x16 or 16x16."""
    count: NotRequired[int]
    """Slices (node pools) in the group; default 1."""
    multi_host: NotRequired[bool]
    """Only for 2x4: two ct6e-standard-4t VMs instead of one -8t VM."""
    zone: NotRequired[str]
    """Zone of these slices; defaults to the platform's zone."""
    capacity: NotRequired[CapacityArgs]
    """Capacity source; default on-demand."""
    team: NotRequired[str]
    """Label the pools as dedicated to this team."""
    labels: NotRequired[dict[str, str]]
    """Extra node labels."""


class SlicePoolsArgs(TypedDict):
    """Slice pools to add to a GKE cluster that already exists."""

    project: str
    """Project of the cluster and its node pools."""
    region: str
    """Region of the cluster."""
    zone: str
    """Default zone of the slices (a zone in the region)."""
    cluster_name: str
    """Name of the existing GKE cluster."""
    cluster_location: NotRequired[str]
    """Location of the cluster: the region (default) or a zone of a zonal cluster."""
    node_service_account: NotRequired[pulumi.Input[str]]
    """Service account email of the TPU nodes; the project default when unset."""
    slice_pools: list[SlicePoolArgs]
    """The slice groups."""


class SlicePools(pulumi.ComponentResource):
    """TPU v6e slices, one GKE node pool each, added to an existing GKE cluster."""

    pool_names: pulumi.Output[list[str]]
    """Names of the node pools, one per slice."""
    chips: pulumi.Output[int]
    """TPU chips the pools provide."""

    def __init__(self, name: str, args: SlicePoolsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"{PACKAGE}:index:SlicePools", name, {}, opts)
        cluster: dict[str, Any] = {"mode": "adopt", "name": args["cluster_name"]}
        if "cluster_location" in args:
            cluster["location"] = args["cluster_location"]
        cfg = parse_platform(
            {
                "project": args["project"],
                "region": args["region"],
                "zone": args["zone"],
                "cluster": cluster,
                "slicePools": [whole_numbers(dict(pool)) for pool in args["slice_pools"]],
            }
        )
        specs = expand_slices(cfg)
        groups = [
            TpuSlicePool(
                f"{name}-{group}",
                TpuSlicePoolArgs(
                    project=cfg.project,
                    cluster_name=cfg.cluster.name,
                    cluster_location=cfg.cluster_location,
                    slices=list(members),
                    node_service_account=args.get("node_service_account"),
                ),
                opts=pulumi.ResourceOptions(parent=self),
            )
            for group, members in groupby(specs, key=lambda spec: spec.group)
        ]
        self.pool_names = pulumi.Output.all(*[g.pool_names for g in groups]).apply(
            lambda names: [n for group_names in names for n in group_names]
        )
        self.chips = pulumi.Output.from_input(sum(spec.chips for spec in specs))
        self.register_outputs({"poolNames": self.pool_names, "chips": self.chips})


class StackPlatformArgs(TypedDict):
    """The platform's stack sections (``tpu-platform:*`` keys of a stack file), as objects."""

    project: str
    """GCP project."""
    region: str
    """GCP region of the cluster."""
    zone: str
    """Default zone of the TPU slices."""
    cluster: dict[str, Any]
    """The cluster section: name, mode (create or adopt), location, releaseChannel, ..."""
    slice_pools: list[dict[str, Any]]
    """The slicePools section: name, topology, count, capacity, ..."""
    priorities: NotRequired[list[dict[str, Any]]]
    """The priorities section."""
    kueue: NotRequired[dict[str, Any]]
    """The kueue section."""
    cohorts: NotRequired[list[dict[str, Any]]]
    """The cohorts section."""
    teams: NotRequired[list[dict[str, Any]]]
    """The teams section: quotas and queues per team."""
    hotswap: NotRequired[dict[str, Any]]
    """The hotswap section: the controller (enabled, image, replicas, ...)."""
    monitoring: NotRequired[dict[str, Any]]
    """The monitoring section: dashboards and alerts."""


def stack_config(args: StackPlatformArgs) -> PlatformConfig:
    """Validate the sections exactly as a stack file is validated: under the stack file's names
    (``slicePools``, not the argument's ``slice_pools``), so the messages name what the program
    wrote."""
    sections = {SECTIONS.get(key, key): value for key, value in args.items()}
    return parse_platform(whole_numbers(sections))


SECTIONS = {"slice_pools": "slicePools"}  # argument -> stack file name, where they differ


class StackPlatform(pulumi.ComponentResource):
    """The whole platform from stack-shaped sections: cluster, slices, Kueue, JobSet and queues."""

    cluster_name: pulumi.Output[str]
    """Name of the GKE cluster."""
    cluster_location: pulumi.Output[str]
    """Location of the GKE cluster."""
    kubeconfig: pulumi.Output[str]
    """Kubeconfig for the cluster (secret): gke-gcloud-auth-plugin's for a GKE cluster, the one
    given (a file or its contents; empty for $KUBECONFIG) in cluster.mode kubeconfig."""
    pool_names: pulumi.Output[list[str]]
    """Names of the TPU node pools, one per slice."""

    def __init__(
        self, name: str, args: StackPlatformArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(f"{PACKAGE}:index:StackPlatform", name, {}, opts)
        cfg = stack_config(args)
        platform = TpuPlatform(name, TpuPlatformArgs(config=cfg), opts=pulumi.ResourceOptions(parent=self))
        cluster = platform.cluster
        self.cluster_name = cluster.name
        if isinstance(cluster, GkeCluster):
            self.cluster_location = cluster.location
            self.kubeconfig = cluster.kubeconfig
        else:  # cluster.mode kubeconfig: a cluster of a kubeconfig context, no Google resource
            self.cluster_location = pulumi.Output.from_input(cfg.cluster_location)
            self.kubeconfig = pulumi.Output.secret(cfg.cluster.kubeconfig or "")
        self.pool_names = pulumi.Output.from_input([spec.pool_name for spec in platform.slices])
        self.register_outputs(
            {
                "clusterName": self.cluster_name,
                "clusterLocation": self.cluster_location,
                "kubeconfig": self.kubeconfig,
                "poolNames": self.pool_names,
            }
        )
