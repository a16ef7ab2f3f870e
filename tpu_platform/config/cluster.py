"""The ``cluster`` section: create a GKE Standard cluster for TPU work, or adopt one."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, field_validator

from .base import StackModel, check_gke_name
from .formats import check_gke_version, check_ipv4_cidr, check_machine_type, check_service_account_email
from .maintenance import MaintenanceConfig
from .network import ControlPlaneAccess, NatConfig


class SystemPoolConfig(StackModel):
    """A small CPU pool for Kueue, JobSet, the hotswap controller and GKE system pods."""

    machine_type: str = "e2-standard-8"
    node_count: int = Field(2, ge=1, le=50, description="Nodes per zone of the system pool.")
    disk_size_gb: int = Field(100, ge=20, le=4096)

    @field_validator("machine_type")
    @classmethod
    def _machine_type(cls, value: str) -> str:
        return check_machine_type(value)


LoggingComponent = Literal["SYSTEM_COMPONENTS", "APISERVER", "CONTROLLER_MANAGER", "SCHEDULER", "WORKLOADS"]
"""The provider's ``logging_config.enable_components`` values a GKE Standard user sets
(terraform-provider-google v7.44.0 ``resource_container_cluster.go``, ``StringInSlice``)."""


DEFAULT_LOGGING: tuple[LoggingComponent, ...] = ("SYSTEM_COMPONENTS", "WORKLOADS")
"""GKE's own default for Standard clusters: system and workload logs."""


class ClusterConfig(StackModel):
    """Which GKE cluster the platform runs on.

    ``mode: create`` builds a Standard cluster (release channel, Workload Identity,
    VPC-native networking, Dataplane V2, managed Prometheus, a system pool).
    ``mode: adopt`` uses an existing cluster by ``name`` and ``location``: only TPU pools
    and in-cluster objects are created, the cluster itself is never touched.
    ``mode: kubeconfig`` runs the platform's Kubernetes half on any existing cluster reached through
    a kubeconfig file and context (xpk, Cluster Toolkit, a cluster from Terraform, a local control
    plane): Kueue, JobSet, priorities, queues, the controller and its policies; no Google resource
    and no Google API call. ``slicePools`` then describe the cluster's existing TPU node pools.
    """

    mode: Literal["create", "adopt", "kubeconfig"] = "create"
    name: str
    location: str | None = Field(
        None, description="Region (regional control plane) or zone; defaults to gcp:region."
    )
    kubeconfig: str | None = Field(
        None,
        description="mode: kubeconfig only: the kubeconfig file (default: $KUBECONFIG, else "
        "~/.kube/config, as the Kubernetes provider reads it).",
    )
    context: str | None = Field(
        None, description="mode: kubeconfig only: the kubeconfig context (default: its current context)."
    )
    release_channel: Literal["RAPID", "REGULAR", "STABLE"] | None = None
    min_master_version: str | None = None
    network: str | None = None
    subnetwork: str | None = None
    private_nodes: bool | None = None
    master_authorized_cidrs: list[Annotated[str, AfterValidator(check_ipv4_cidr)]] | None = Field(
        None, max_length=50
    )
    deletion_protection: bool | None = None
    system_pool: SystemPoolConfig | None = None
    node_service_account: str | None = Field(
        None,
        description="Email of the service account for nodes; a least-privilege one is created if unset.",
    )
    control_plane_access: ControlPlaneAccess | None = Field(
        None, description="dns (IAM-authorized DNS endpoint; default when created) or ip (default adopted)."
    )
    ip_endpoint: Literal["off", "internal", "public"] | None = Field(
        None,
        description="The control plane's IP endpoint: off (DNS endpoint only), internal (private "
        "endpoint only, masterAuthorizedCidrs enforced on it) or public. Default with DNS access: "
        "internal with private nodes, else off; with IP access: public.",
    )
    master_ipv4_cidr_block: str | None = Field(
        None, description="A /28 for a VPC-peering control plane; unset: Private Service Connect."
    )
    webhook_source_ranges: list[Annotated[str, AfterValidator(check_ipv4_cidr)]] | None = Field(
        None,
        max_length=20,
        description="Where the control plane calls the Kueue and JobSet webhooks from, for the webhook "
        "firewall rule of private nodes. Default: masterIpv4CidrBlock, else (Private Service Connect) "
        "the private endpoint's /32; set it to the source ranges of GKE's own "
        "gke-<cluster>-<hash>-master rule where those differ.",
    )
    nat: NatConfig | None = Field(None, description="Cloud NAT for private nodes; default: create one.")
    maintenance: MaintenanceConfig | None = None
    upgrade_notifications: bool = Field(
        True,
        description="Publish GKE's upgrade events (available, started) to a Pub/Sub topic the stack "
        "creates: an upgrade recreates a whole TPU slice.",
    )
    logging_components: list[LoggingComponent] = Field(
        default_factory=lambda: list(DEFAULT_LOGGING),
        description="Cloud Logging components (loggingConfig.enableComponents); [] logs nothing.",
    )
    security_posture: Literal["DISABLED", "BASIC", "ENTERPRISE"] = Field(
        "BASIC",
        description="GKE security posture (securityPostureConfig.mode): BASIC audits workload "
        "configuration at no cost; ENTERPRISE needs GKE Enterprise.",
    )
    network_policies: bool = Field(
        True,
        description="Ingress NetworkPolicies in the platform's namespaces (Kueue, JobSet, the hotswap "
        "controller): default deny, webhooks open, metrics from Managed Prometheus only. Enforced by "
        "Dataplane V2 on created clusters; an adopted cluster enforces them only with a policy engine.",
    )
    enable_services: bool = Field(False, description="Enable the project services the stack needs.")

    @field_validator("name")
    @classmethod
    def _gke_name(cls, value: str) -> str:
        return check_gke_name(value, "cluster name")

    @field_validator("min_master_version")
    @classmethod
    def _version(cls, value: str | None) -> str | None:
        return None if value is None else check_gke_version(value)

    @field_validator("master_ipv4_cidr_block")
    @classmethod
    def _master_block(cls, value: str | None) -> str | None:
        """A /28 of internal addresses, as GKE requires for a peered control plane
        (https://cloud.google.com/kubernetes-engine/docs/how-to/legacy/network-isolation)."""
        if value is None:
            return None
        block = check_ipv4_cidr(value)
        if not block.endswith("/28"):
            raise ValueError(f"masterIpv4CidrBlock {value!r} must be a /28 such as '172.16.0.0/28'")
        return block

    @property
    def reached_by_kubeconfig(self) -> bool:
        """``mode: kubeconfig``: a cluster the stack neither creates nor adopts; no Google resource."""
        return self.mode == "kubeconfig"

    @property
    def access(self) -> ControlPlaneAccess:
        """How ``pulumi up`` reaches the control plane (see ``config.network``)."""
        if self.control_plane_access is not None:
            return self.control_plane_access
        return "dns" if self.mode == "create" else "ip"

    @property
    def ip_endpoint_mode(self) -> Literal["off", "internal", "public"]:
        """Who may reach the IP endpoint. With the DNS endpoint (IAM-authorized) nobody needs the
        external IP one: it is off, or internal only where private nodes need the private endpoint
        (the webhook firewall rule's source)."""
        if self.ip_endpoint is not None:
            return self.ip_endpoint
        if self.access == "ip":
            return "public"
        return "internal" if self.private_nodes else "off"

    def nat_mode(self) -> str:
        """``create``, ``existing`` or ``none``: created by default for private nodes only."""
        if self.nat is not None:
            return self.nat.mode
        return "create" if self.private_nodes else "none"

    @field_validator("node_service_account")
    @classmethod
    def _node_sa(cls, value: str | None) -> str | None:
        return None if value is None else check_service_account_email(value)

    def creation_only_fields_set(self) -> list[str]:
        """Keys that only mean something when the platform creates the cluster."""
        only_create = {
            "release_channel",
            "min_master_version",
            "network",
            "subnetwork",
            "private_nodes",
            "master_authorized_cidrs",
            "deletion_protection",
            "system_pool",
            "node_service_account",
            "master_ipv4_cidr_block",
            "webhook_source_ranges",
            "ip_endpoint",
            "upgrade_notifications",
            "security_posture",
            "logging_components",
            "nat",
            "maintenance",
            "enable_services",
        }
        fields = type(self).model_fields
        return sorted(fields[name].alias or name for name in self.model_fields_set if name in only_create)
