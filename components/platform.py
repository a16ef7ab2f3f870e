"""``TpuPlatform``: the whole platform for one environment, built from a ``PlatformConfig``."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from tpu_platform.config import ImageBuildConfig, PlatformConfig
from tpu_platform.config.google_identity import named_google_access
from tpu_platform.hotswap import iam_commands
from tpu_platform.hotswap.deploy import METRICS_PORT
from tpu_platform.kueue.existing import decide_all
from tpu_platform.kueue.found import FoundInstalls
from tpu_platform.network_policies import platform_namespaces
from tpu_platform.slices import SliceSpec, expand_slices

from .cloud_nat import CloudNat, CloudNatArgs
from .cluster_installs import existing_installs
from .existing_cluster import ExistingCluster
from .gke_cluster import GkeCluster, GkeClusterArgs
from .hotswap_controller import HotswapController, HotswapControllerArgs
from .hotswap_image import HotswapImage, HotswapImageArgs
from .kueue_install import KueueInstall, KueueInstallArgs
from .kueue_queues import KueueQueues, KueueQueuesArgs
from .monitoring import Monitoring, MonitoringArgs
from .network_policies import NetworkPolicies, NetworkPoliciesArgs
from .priorities import Priorities, PrioritiesArgs
from .project_services import ProjectServices, ProjectServicesArgs, needed_services
from .tpu_slice_pool import TpuSlicePool, TpuSlicePoolArgs
from .vm_scope import HotswapVmScope, HotswapVmScopeArgs
from .webhook_firewall import WebhookFirewall, WebhookFirewallArgs


@dataclass(frozen=True)
class TpuPlatformArgs:
    """A validated stack; build one with ``tpu_platform.config.parse_platform``."""

    config: PlatformConfig
    # A fleet worker: its DNS endpoint also accepts the manager's service-account token.
    fleet_worker: bool = False
    # The Kueue and JobSet the cluster runs; unset: read from a kubeconfig-mode cluster.
    existing: FoundInstalls | None = None


class TpuPlatform(pulumi.ComponentResource):
    """Cluster, TPU slice pools and everything in-cluster, wired in dependency order."""

    cluster: GkeCluster | ExistingCluster
    slice_pools: list[TpuSlicePool]
    slices: list[SliceSpec]
    kueue: KueueInstall
    priorities: Priorities
    queues: KueueQueues

    def __init__(self, name: str, args: TpuPlatformArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("tpu-platform:index:Platform", name, None, opts)
        cfg = args.config
        child = pulumi.ResourceOptions(parent=self)
        services: list[pulumi.Resource] = []
        if cfg.cluster.mode == "create" and cfg.cluster.enable_services:
            builds = cfg.hotswap.enabled and cfg.hotswap.image is None
            services = ProjectServices(
                f"{name}-services",
                ProjectServicesArgs(project=cfg.project, services=needed_services(builds)),
                opts=child,
            ).ready
        self.services = services
        if cfg.cluster.reached_by_kubeconfig:
            # The Kubernetes half alone: the slices are the cluster's existing node pools.
            self.cluster = ExistingCluster(f"{name}-cluster", cfg.cluster, opts=child)
        else:
            self.cluster = GkeCluster(
                f"{name}-cluster",
                GkeClusterArgs(
                    project=cfg.project,
                    location=cfg.cluster_location,
                    system_zone=cfg.zone,
                    cluster=cfg.cluster,
                    depends_on=services,
                    k8s_tokens_via_dns=args.fleet_worker,
                ),
                opts=child,
            )
        network_ready = self._private_network(name, cfg, services, child)
        self.vm_scope = self._vm_scope(name, cfg, services, child)
        self.slices = expand_slices(cfg)
        self.slice_pools = self._slice_pools(name, cfg, child)
        # In-cluster: JobSet and Kueue (after the system pool exists to run them), then every
        # Kueue object once its CRDs and webhooks are ready (``self.kueue.ready``).
        provider = self.cluster.provider
        system_pool = [self.cluster.system_pool] if self.cluster.system_pool is not None else []
        found = args.existing if args.existing is not None else existing_installs(cfg)
        self.kueue = KueueInstall(
            f"{name}-kueue",
            KueueInstallArgs(
                config=cfg,
                provider=provider,
                depends_on=[*system_pool, *network_ready],
                decisions=decide_all(found, cfg),
            ),
            opts=child,
        )
        self.priorities = Priorities(
            f"{name}-priorities",
            PrioritiesArgs(config=cfg, provider=provider, kueue_ready=self.kueue.ready),
            opts=child,
        )
        self.queues = KueueQueues(
            f"{name}-queues",
            KueueQueuesArgs(config=cfg, provider=provider, kueue_ready=self.kueue.ready),
            opts=child,
        )
        self.hotswap: HotswapController | None = None
        if cfg.hotswap.enabled:
            self.hotswap = self._hotswap(name, cfg, provider, [*system_pool, *self.kueue.ready], child)
        self.google_identity_steps = self._google_identity_steps(cfg)
        self.monitoring = Monitoring(
            f"{name}-monitoring",
            MonitoringArgs(
                config=cfg,
                provider=provider,
                kueue_ready=self.kueue.ready,
                hotswap=[self.hotswap] if self.hotswap is not None else [],
            ),
            opts=child,
        )
        if cfg.cluster.network_policies:
            hotswap_ns = cfg.hotswap.namespace if self.hotswap is not None else None
            # An install the platform uses is left as it is: no policy goes into its namespace.
            used = {d.addon.namespace for d in self.kueue.decisions if not d.registers_chart}
            NetworkPolicies(
                f"{name}-network-policies",
                NetworkPoliciesArgs(
                    served=[
                        s for s in platform_namespaces(hotswap_ns, METRICS_PORT) if s.namespace not in used
                    ],
                    provider=provider,
                    depends_on=[
                        *self.kueue.ready,
                        *([self.hotswap.namespace_object] if self.hotswap is not None else []),
                    ],
                ),
                opts=child,
            )
        self.register_outputs(
            {
                "clusterName": self.cluster.name,
                "slicePools": [spec.pool_name for spec in self.slices],
            }
        )

    def _slice_pools(
        self, name: str, cfg: PlatformConfig, child: pulumi.ResourceOptions
    ) -> list[TpuSlicePool]:
        """One node pool per slice group on a GKE cluster; none on a kubeconfig cluster, whose
        ``slicePools`` describe the node pools it already has."""
        cluster = self.cluster
        if not isinstance(cluster, GkeCluster):
            return []
        scope = self.vm_scope
        return [
            TpuSlicePool(
                f"{name}-{group}",
                TpuSlicePoolArgs(
                    project=cfg.project,
                    cluster_name=cluster.name,
                    cluster_location=cluster.location,
                    slices=list(specs),
                    node_service_account=cluster.node_service_account,
                    resource_manager_tags=scope.node_pool_tags if scope is not None else None,
                    depends_on=scope.ready if scope is not None else (),
                ),
                opts=child,
            )
            for group, specs in groupby(self.slices, key=lambda spec: spec.group)
        ]

    def _vm_scope(
        self, name: str, cfg: PlatformConfig, services: list[pulumi.Resource], child: pulumi.ResourceOptions
    ) -> HotswapVmScope | None:
        """The tag that marks this cluster's TPU VMs, when the stack registers the controller's Google
        access: its calls on one VM are granted only on VMs carrying it (``tpu_platform.hotswap.iam``).
        A kubeconfig-mode cluster's network is the one its ``googleIdentity`` names."""
        cluster = self.cluster
        hotswap = cfg.hotswap
        if not (hotswap.enabled and hotswap.compute_corroboration):
            return None
        network: pulumi.Input[str]
        if isinstance(cluster, GkeCluster):
            network = cluster.network
        elif hotswap.google_identity is not None and hotswap.google_identity.manage:
            network = hotswap.google_identity.network or "default"
        else:
            return None
        return HotswapVmScope(
            f"{name}-hotswap-scope",
            HotswapVmScopeArgs(
                project=cfg.project,
                cluster_name=cfg.cluster.name,
                network=network,
                depends_on=services,
            ),
            opts=child,
        )

    def _google_identity_steps(self, cfg: PlatformConfig) -> pulumi.Output[dict[str, Any]] | None:
        """A named Google identity's access as the stack exports it: the account, the roles and the
        ``gcloud`` commands of what the stack does not register (everything with ``manage: false``;
        with ``manage: true`` the tag on the cluster's own TPU node pools, with the tag's IDs)."""
        access = named_google_access(cfg)
        if access is None:
            return None
        doc: dict[str, Any] = {
            "serviceAccount": access.service_account,
            "roles": {role: list(permissions) for role, permissions in access.roles().items()},
            "workloadIdentityMember": access.workload_identity_member,
        }
        scope = self.vm_scope
        if scope is None:
            return pulumi.Output.from_input({**doc, "commands": iam_commands.setup_commands(access)})
        return pulumi.Output.all(scope.tag_key_id, scope.tag_value_id).apply(
            lambda ids: {**doc, "commands": iam_commands.node_pool_commands(access, ids[0], ids[1])}
        )

    def _private_network(
        self, name: str, cfg: PlatformConfig, services: list[pulumi.Resource], child: pulumi.ResourceOptions
    ) -> list[pulumi.Resource]:
        """Cloud NAT and the webhook firewall rule of a private cluster; what the installs wait for."""
        self.nat: CloudNat | None = None
        self.webhook_firewall: WebhookFirewall | None = None
        cluster = cfg.cluster
        if cluster.mode != "create" or not cluster.private_nodes:
            return []
        network = cluster.network or "default"
        if cluster.nat_mode() == "create":
            self.nat = CloudNat(
                f"{name}-nat",
                CloudNatArgs(
                    project=cfg.project,
                    region=cfg.region,
                    network=network,
                    name=cluster.name,
                    depends_on=services,
                ),
                opts=child,
            )
        source: pulumi.Input[list[pulumi.Input[str]]]
        # Google's own terraform-google-kubernetes-engine module takes the peered control plane's
        # block (modules/private-cluster: cluster_endpoint_for_nodes = var.master_ipv4_cidr_block)
        # and, where there is none, the endpoint's /32 (its autopilot modules); the stack may name
        # the ranges itself (webhookSourceRanges).
        if cluster.webhook_source_ranges is not None:
            source = list(cluster.webhook_source_ranges)
        elif cluster.master_ipv4_cidr_block is not None:
            source = [cluster.master_ipv4_cidr_block]
        else:
            endpoint = self.cluster.private_endpoint or pulumi.Output.from_input("")
            source = endpoint.apply(lambda ip: [f"{ip}/32"])
        self.webhook_firewall = WebhookFirewall(
            f"{name}-webhooks",
            WebhookFirewallArgs(
                project=cfg.project,
                network=network,
                name=cluster.name,
                source_ranges=source,
                node_service_account=self.cluster.node_service_account or "",
                depends_on=services,
            ),
            opts=child,
        )
        ready: list[pulumi.Resource] = [self.webhook_firewall]
        if self.nat is not None:
            ready.append(self.nat)
        return ready

    def _hotswap(
        self,
        name: str,
        cfg: PlatformConfig,
        provider: k8s.Provider,
        ready: list[pulumi.Resource],
        child: pulumi.ResourceOptions,
    ) -> HotswapController:
        """The controller, with the stack's image or one built from this repository."""
        image: pulumi.Input[str]
        if cfg.hotswap.image is not None:
            image = cfg.hotswap.image
        else:
            image = HotswapImage(
                f"{name}-hotswap",
                HotswapImageArgs(
                    project=cfg.project, region=cfg.region, build=cfg.hotswap.build or ImageBuildConfig()
                ),
                opts=pulumi.ResourceOptions(parent=self, depends_on=self.services),
            ).ref
        return HotswapController(
            f"{name}-hotswap",
            HotswapControllerArgs(
                config=cfg.hotswap,
                image=image,
                provider=provider,
                depends_on=ready,
                project=cfg.project,
                cluster_name=cfg.cluster.name,
                teams=cfg.team_namespaces(),
                managed_prometheus=cfg.managed_prometheus,
                vm_scope=self.vm_scope,
                tagged_node_pools=[pool for group in self.slice_pools for pool in group.node_pools],
            ),
            opts=child,
        )
