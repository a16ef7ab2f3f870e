"""How the control plane is reached and how private nodes reach the internet.

- ``controlPlaneAccess``: ``dns`` uses GKE's DNS-based endpoint (pulumi-gcp 10.2.0
  ``container.ClusterControlPlaneEndpointsConfigDnsEndpointConfigArgs``, ``allow_external_traffic``):
  every request is authorized by IAM, so ``pulumi up`` works from a laptop or CI runner without
  opening the IP endpoint. ``ip`` uses the cluster's IP endpoint, which ``masterAuthorizedCidrs``
  then must open to the runner.
- ``nat``: private nodes have no external IPs; Kueue's and JobSet's images come from
  registry.k8s.io, so they need Cloud NAT (a Cloud Router with a NAT, created or existing).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from .base import StackModel, check_gke_name

ControlPlaneAccess = Literal["dns", "ip"]


class NatConfig(StackModel):
    """Cloud NAT for private nodes: ``create`` a Cloud Router and NAT, or name an ``existing`` router."""

    mode: Literal["create", "existing", "none"] = "create"
    router: str | None = Field(None, description="The existing Cloud Router (mode: existing).")

    @field_validator("router")
    @classmethod
    def _router(cls, value: str | None) -> str | None:
        return None if value is None else check_gke_name(value, "router name", max_len=63)
