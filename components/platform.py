"""``TpuPlatform``: the whole platform for one environment, built from a ``PlatformConfig``."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby

import pulumi
import pulumi_kubernetes as k8s

from tpu_platform.config import ImageBuildConfig, PlatformConfig
from tpu_platform.slices import SliceSpec, expand_slices

from .gke_cluster import GkeCluster, GkeClusterArgs
from .hotswap_controller import HotswapController, HotswapControllerArgs
from .hotswap_image import HotswapImage, HotswapImageArgs
from .kueue_install import KueueInstall, KueueInstallArgs
from .kueue_queues import KueueQueues, KueueQueuesArgs
from .monitoring import Monitoring, MonitoringArgs
from .priorities import Priorities, PrioritiesArgs
from .tpu_slice_pool import TpuSlicePool, TpuSlicePoolArgs


@dataclass(frozen=True)
class TpuPlatformArgs:
    """A validated stack; build one with ``tpu_platform.config.parse_platform``."""

    config: PlatformConfig


class TpuPlatform(pulumi.ComponentResource):
    """Cluster, TPU slice pools and everything in-cluster, wired in dependency order."""

    cluster: GkeCluster
    slice_pools: list[TpuSlicePool]
    slices: list[SliceSpec]
    kueue: KueueInstall
    priorities: Priorities
    queues: KueueQueues

    def __init__(self, name: str, args: TpuPlatformArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("tpu-platform:index:Platform", name, None, opts)
        cfg = args.config
        child = pulumi.ResourceOptions(parent=self)
        self.cluster = GkeCluster(
            f"{name}-cluster",
            GkeClusterArgs(
                project=cfg.project,
                location=cfg.cluster_location,
                system_zone=cfg.zone,
                cluster=cfg.cluster,
            ),
            opts=child,
        )
        self.slices = expand_slices(cfg)
        self.slice_pools = [
            TpuSlicePool(
                f"{name}-{group}",
                TpuSlicePoolArgs(
                    project=cfg.project,
                    cluster_name=self.cluster.name,
                    cluster_location=self.cluster.location,
                    slices=list(specs),
                    node_service_account=self.cluster.node_service_account,
                ),
                opts=child,
            )
            for group, specs in groupby(self.slices, key=lambda spec: spec.group)
        ]
        # In-cluster: JobSet and Kueue (after the system pool exists to run them), then every
        # Kueue object once its CRDs and webhooks are ready (``self.kueue.ready``).
        provider = self.cluster.provider
        system_pool = [self.cluster.system_pool] if self.cluster.system_pool is not None else []
        self.kueue = KueueInstall(
            f"{name}-kueue",
            KueueInstallArgs(config=cfg, provider=provider, depends_on=system_pool),
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
        self.register_outputs(
            {
                "clusterName": self.cluster.name,
                "slicePools": [spec.pool_name for spec in self.slices],
            }
        )

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
                opts=child,
            ).ref
        return HotswapController(
            f"{name}-hotswap",
            HotswapControllerArgs(config=cfg.hotswap, image=image, provider=provider, depends_on=ready),
            opts=child,
        )
