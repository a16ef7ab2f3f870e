"""``NetworkPolicies``: the platform namespaces accept only what their controllers serve.

The objects come from :mod:`tpu_platform.network_policies`; this component only registers them,
after the namespaces exist (the Kueue and JobSet installs, the hotswap controller).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from tpu_platform.network_policies import Served, policies


@dataclass(frozen=True)
class NetworkPoliciesArgs:
    served: Sequence[Served]
    provider: k8s.Provider
    depends_on: Sequence[pulumi.Resource] = field(default_factory=tuple)


class NetworkPolicies(pulumi.ComponentResource):
    """A default-deny ingress policy and its allows in each platform namespace."""

    def __init__(
        self, name: str, args: NetworkPoliciesArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("tpu-platform:network:NetworkPolicies", name, None, opts)
        k8s_opts = pulumi.ResourceOptions(
            parent=self, provider=args.provider, depends_on=list(args.depends_on)
        )
        for served in args.served:
            for obj in policies(served):
                meta = obj["metadata"]
                k8s.networking.v1.NetworkPolicy(
                    f"{name}-{meta['namespace']}-{meta['name']}",
                    metadata=meta,
                    spec=obj["spec"],
                    opts=k8s_opts,
                )
        self.register_outputs({})
