"""``CloudNat``: a Cloud Router with a NAT, so private nodes can pull images from outside Google.

Private GKE nodes have internal IPs only. Kueue's and JobSet's images come from registry.k8s.io,
which is not a Google API that Private Google Access covers, so without NAT their pods never start
and the chart installs time out. The NAT covers every subnetwork range of the cluster's region
(pulumi-gcp 10.2.0 ``compute.RouterNat``: ``source_subnetwork_ip_ranges_to_nat``
``ALL_SUBNETWORKS_ALL_IP_RANGES``, ``nat_ip_allocate_option`` ``AUTO_ONLY``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp


@dataclass(frozen=True)
class CloudNatArgs:
    """Where the NAT serves: the cluster's project, region and VPC network."""

    project: str
    region: str
    network: str
    name: str
    depends_on: Sequence[pulumi.Resource] = field(default_factory=tuple)


class CloudNat(pulumi.ComponentResource):
    """One Cloud Router and one NAT on it for the whole region."""

    router: gcp.compute.Router
    nat: gcp.compute.RouterNat

    def __init__(self, name: str, args: CloudNatArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("tpu-platform:network:CloudNat", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, depends_on=list(args.depends_on))
        self.router = gcp.compute.Router(
            f"{name}-router",
            name=f"{args.name}-router",
            project=args.project,
            region=args.region,
            network=args.network,
            opts=child,
        )
        self.nat = gcp.compute.RouterNat(
            f"{name}-nat",
            name=f"{args.name}-nat",
            project=args.project,
            region=args.region,
            router=self.router.name,
            nat_ip_allocate_option="AUTO_ONLY",
            source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES",
            log_config=gcp.compute.RouterNatLogConfigArgs(enable=True, filter="ERRORS_ONLY"),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({"router": self.router.name, "nat": self.nat.name})
