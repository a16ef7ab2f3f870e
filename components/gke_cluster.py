"""``GkeCluster``: a GKE Standard cluster suited to TPU work, or an adopted existing one.

Either way it exposes the cluster's name and location (for node pools) and one explicit
Kubernetes provider that every in-cluster resource must use, built for the endpoint ``pulumi up``
can actually reach: GKE's DNS-based endpoint (IAM-authorized, reachable from anywhere Google
credentials are) or the IP endpoint (then opened by ``masterAuthorizedCidrs``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from tpu_platform.config import ClusterConfig, SystemPoolConfig
from tpu_platform.config.maintenance import MaintenanceConfig

from .kubeconfig import render_kubeconfig

NODE_SA_ROLES = (
    "roles/logging.logWriter",
    "roles/monitoring.metricWriter",
    "roles/monitoring.viewer",
    "roles/stackdriver.resourceMetadata.writer",
    "roles/artifactregistry.reader",
)
OAUTH_SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]


@dataclass(frozen=True)
class GkeClusterArgs:
    """Inputs of ``GkeCluster``: the ``cluster`` stack section plus where it lives."""

    project: str
    location: str
    system_zone: str
    cluster: ClusterConfig
    depends_on: Sequence[pulumi.Resource] = field(default_factory=tuple)
    # A fleet worker: its DNS endpoint also accepts Kubernetes service-account tokens (GKE API
    # ``DNSEndpointConfig.enable_k8s_tokens_via_dns``), which the manager's MultiKueue uses.
    k8s_tokens_via_dns: bool = False


class GkeCluster(pulumi.ComponentResource):
    """The cluster the platform runs on, and a Kubernetes provider bound to it."""

    name: pulumi.Output[str]
    location: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    server: pulumi.Output[str]
    private_endpoint: pulumi.Output[str] | None
    node_service_account: pulumi.Output[str] | None
    system_pool: gcp.container.NodePool | None
    network: pulumi.Output[str]
    """The cluster's VPC network: the stack's ``cluster.network`` (``default`` when unset) for a created
    cluster, GKE's ``projects/P/global/networks/N`` for an adopted one."""
    kubeconfig: pulumi.Output[str]
    provider: k8s.Provider

    def __init__(self, name: str, args: GkeClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("tpu-platform:gke:Cluster", name, None, opts)
        cfg = args.cluster
        self.node_service_account = None
        self.system_pool = None
        self.private_endpoint = None
        ca: pulumi.Output[str | None]
        if cfg.mode == "adopt":
            found = gcp.container.get_cluster_output(
                name=cfg.name,
                location=args.location,
                project=args.project,
                opts=pulumi.InvokeOutputOptions(parent=self),
            )
            self.name = found.name
            self.location = pulumi.Output.from_input(args.location)
            self.endpoint = found.endpoint
            dns = found.control_plane_endpoints_configs.apply(
                lambda configs: configs[0].dns_endpoint_configs[0].endpoint
            )
            ca = found.master_auths.apply(lambda auths: auths[0].cluster_ca_certificate)
            self.network = found.network
        else:
            cluster = self._create(name, args)
            self.network = pulumi.Output.from_input(cfg.network or "default")
            self.name = cluster.name
            self.location = cluster.location
            self.endpoint = cluster.endpoint
            dns = cluster.control_plane_endpoints_config.apply(
                lambda config: (
                    config.dns_endpoint_config.endpoint if config and config.dns_endpoint_config else ""
                )
            )
            ca = cluster.master_auth.cluster_ca_certificate
            if cfg.private_nodes:
                self.private_endpoint = cluster.private_cluster_config.apply(
                    lambda private: (private.private_endpoint or "") if private else ""
                )
        if cfg.access == "dns":
            self.server = dns.apply(str)
            ca = pulumi.Output.from_input(None)
        else:
            self.server = self.endpoint
        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(self.name, self.server, ca).apply(
                lambda parts: render_kubeconfig(str(parts[0]), str(parts[1]), parts[2])
            )
        )
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.kubeconfig,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs(
            {"name": self.name, "location": self.location, "endpoint": self.endpoint, "server": self.server}
        )

    def _upgrade_notifications(
        self, name: str, cfg: ClusterConfig, args: GkeClusterArgs, child: pulumi.ResourceOptions
    ) -> gcp.container.ClusterNotificationConfigArgs | None:
        """A Pub/Sub topic for GKE's upgrade events: an upgrade recreates a whole TPU slice, so the
        team wants to hear of it before it starts (GKE "Receive cluster notifications"; the event
        types are the provider's enum, terraform-provider-google v7.44.0
        ``notification_config.pubsub.filter.event_type``)."""
        if not cfg.upgrade_notifications:
            return None
        topic = gcp.pubsub.Topic(
            f"{name}-upgrades", name=_upgrade_topic_name(cfg.name), project=args.project, opts=child
        )
        return gcp.container.ClusterNotificationConfigArgs(
            pubsub=gcp.container.ClusterNotificationConfigPubsubArgs(
                enabled=True,
                topic=topic.id,
                filter=gcp.container.ClusterNotificationConfigPubsubFilterArgs(
                    event_types=["UPGRADE_AVAILABLE_EVENT", "UPGRADE_EVENT"]
                ),
            )
        )

    def _create(self, name: str, args: GkeClusterArgs) -> gcp.container.Cluster:
        cfg = args.cluster
        child = pulumi.ResourceOptions(parent=self, depends_on=list(args.depends_on))
        sa_email: pulumi.Input[str]
        if cfg.node_service_account:
            sa_email = cfg.node_service_account
        else:
            account = gcp.serviceaccount.Account(
                f"{name}-nodes",
                account_id=f"{cfg.name[:24]}-nodes",
                display_name=f"GKE nodes of {cfg.name}",
                project=args.project,
                opts=child,
            )
            for role in NODE_SA_ROLES:
                gcp.projects.IAMMember(
                    f"{name}-nodes-{role.split('/')[1].replace('.', '-').lower()}",
                    project=args.project,
                    role=role,
                    member=account.email.apply(lambda email: f"serviceAccount:{email}"),
                    opts=child,
                )
            sa_email = account.email
        self.node_service_account = pulumi.Output.from_input(sa_email)

        # terraform-provider-google v7.44.0 resource_container_cluster.go: enable_private_endpoint
        # "access through the public endpoint is disabled"; private_endpoint_enforcement_enabled
        # "Whether authorized networks is enforced on the private endpoint" (default false);
        # ip_endpoints_config.enabled "Controls whether to allow direct IP access".
        ip_mode = cfg.ip_endpoint_mode
        private = (
            gcp.container.ClusterPrivateClusterConfigArgs(
                enable_private_nodes=True,
                enable_private_endpoint=ip_mode == "internal",
                master_ipv4_cidr_block=cfg.master_ipv4_cidr_block,
            )
            if cfg.private_nodes
            else None
        )
        authorized = (
            gcp.container.ClusterMasterAuthorizedNetworksConfigArgs(
                cidr_blocks=[
                    gcp.container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs(
                        cidr_block=cidr, display_name=f"authorized-{i}"
                    )
                    for i, cidr in enumerate(cfg.master_authorized_cidrs)
                ],
                private_endpoint_enforcement_enabled=True if ip_mode == "internal" else None,
            )
            if cfg.master_authorized_cidrs and ip_mode != "off"
            else None
        )
        cluster = gcp.container.Cluster(
            name,
            name=cfg.name,
            project=args.project,
            location=args.location,
            release_channel=gcp.container.ClusterReleaseChannelArgs(channel=cfg.release_channel or "REGULAR"),
            min_master_version=cfg.min_master_version,
            remove_default_node_pool=True,
            initial_node_count=1,
            network=cfg.network,
            subnetwork=cfg.subnetwork,
            networking_mode="VPC_NATIVE",
            ip_allocation_policy=gcp.container.ClusterIpAllocationPolicyArgs(),
            datapath_provider="ADVANCED_DATAPATH",
            workload_identity_config=gcp.container.ClusterWorkloadIdentityConfigArgs(
                workload_pool=f"{args.project}.svc.id.goog"
            ),
            monitoring_config=gcp.container.ClusterMonitoringConfigArgs(
                enable_components=["SYSTEM_COMPONENTS"],
                managed_prometheus=gcp.container.ClusterMonitoringConfigManagedPrometheusArgs(enabled=True),
            ),
            private_cluster_config=private,
            master_authorized_networks_config=authorized,
            control_plane_endpoints_config=gcp.container.ClusterControlPlaneEndpointsConfigArgs(
                dns_endpoint_config=gcp.container.ClusterControlPlaneEndpointsConfigDnsEndpointConfigArgs(
                    allow_external_traffic=True,
                    enable_k8s_tokens_via_dns=True if args.k8s_tokens_via_dns else None,
                ),
                ip_endpoints_config=gcp.container.ClusterControlPlaneEndpointsConfigIpEndpointsConfigArgs(
                    enabled=False
                )
                if ip_mode == "off"
                else None,
            )
            if cfg.access == "dns"
            else None,
            maintenance_policy=maintenance_policy(cfg.maintenance),
            logging_config=gcp.container.ClusterLoggingConfigArgs(
                enable_components=list(cfg.logging_components)
            ),
            notification_config=self._upgrade_notifications(name, cfg, args, child),
            # The provider's enum (terraform-provider-google v7.44.0 security_posture_config.mode).
            security_posture_config=gcp.container.ClusterSecurityPostureConfigArgs(mode=cfg.security_posture),
            deletion_protection=True if cfg.deletion_protection is None else cfg.deletion_protection,
            opts=child,
        )
        system = cfg.system_pool or SystemPoolConfig()
        self.system_pool = gcp.container.NodePool(
            f"{name}-system",
            name="system",
            project=args.project,
            cluster=cluster.name,
            location=cluster.location,
            node_locations=[args.system_zone],
            node_count=system.node_count,
            node_config=gcp.container.NodePoolNodeConfigArgs(
                machine_type=system.machine_type,
                disk_size_gb=system.disk_size_gb,
                service_account=sa_email,
                oauth_scopes=OAUTH_SCOPES,
                workload_metadata_config=gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(
                    mode="GKE_METADATA"
                ),
                shielded_instance_config=gcp.container.NodePoolNodeConfigShieldedInstanceConfigArgs(
                    enable_secure_boot=True, enable_integrity_monitoring=True
                ),
            ),
            management=gcp.container.NodePoolManagementArgs(auto_repair=True, auto_upgrade=True),
            opts=child,
        )
        return cluster


def _upgrade_topic_name(cluster: str) -> str:
    return f"{cluster}-gke-upgrades"


def maintenance_policy(config: MaintenanceConfig | None) -> gcp.container.ClusterMaintenancePolicyArgs | None:
    """The stack's recurring window and exclusions as the provider's ``maintenance_policy``."""
    if config is None:
        return None
    window = config.window
    return gcp.container.ClusterMaintenancePolicyArgs(
        recurring_window=gcp.container.ClusterMaintenancePolicyRecurringWindowArgs(
            start_time=window.start, end_time=window.end, recurrence=window.recurrence
        )
        if window is not None
        else None,
        maintenance_exclusions=[
            gcp.container.ClusterMaintenancePolicyMaintenanceExclusionArgs(
                exclusion_name=exclusion.name,
                start_time=exclusion.start,
                end_time=exclusion.end,
                exclusion_options=gcp.container.ClusterMaintenancePolicyMaintenanceExclusionExclusionOptionsArgs(
                    scope=exclusion.scope
                ),
            )
            for exclusion in config.exclusions
        ]
        or None,
    )
