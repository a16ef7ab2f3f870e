"""``WebhookFirewall``: lets a private cluster's control plane call the admission webhooks.

On a private cluster the control plane reaches nodes only on 443 and 10250 unless a firewall rule
allows more (https://cloud.google.com/kubernetes-engine/docs/how-to/latest/network-isolation,
"Add firewall rules for specific use cases"). Kueue's webhook serves on 9443 (kueue v0.19.2
``charts/kueue/values.yaml``, webhook ``port: 9443``) and its visibility API server on 8082
(``charts/kueue/templates/visibility/service.yaml``, ``targetPort: 8082``); JobSet's webhook also
listens on 9443 (jobset v0.12.0 ``charts/jobset/templates/controller/deployment.yaml``). Without the
rule every JobSet and Kueue object times out in admission.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp

WEBHOOK_PORTS = ("9443", "8082")


@dataclass(frozen=True)
class WebhookFirewallArgs:
    """The VPC, the control plane's address range and the nodes' service account."""

    project: str
    network: str
    name: str
    source_ranges: pulumi.Input[Sequence[pulumi.Input[str]]]
    node_service_account: pulumi.Input[str]
    depends_on: Sequence[pulumi.Resource] = field(default_factory=tuple)


class WebhookFirewall(pulumi.ComponentResource):
    """One ingress rule: control plane -> the cluster's nodes on the webhook ports."""

    rule: gcp.compute.Firewall

    def __init__(
        self, name: str, args: WebhookFirewallArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("tpu-platform:network:WebhookFirewall", name, None, opts)
        self.rule = gcp.compute.Firewall(
            f"{name}-rule",
            name=f"{args.name}-webhooks",
            project=args.project,
            network=args.network,
            direction="INGRESS",
            description="GKE control plane to the Kueue and JobSet webhooks and Kueue's visibility API",
            source_ranges=args.source_ranges,
            target_service_accounts=[args.node_service_account],
            allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=list(WEBHOOK_PORTS))],
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.depends_on)),
        )
        self.register_outputs({"rule": self.rule.name})
