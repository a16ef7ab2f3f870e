"""``TpuPlatform``: the whole platform for one environment, built from a ``PlatformConfig``."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby

import pulumi

from tpu_platform.config import PlatformConfig
from tpu_platform.slices import SliceSpec, expand_slices

from .gke_cluster import GkeCluster, GkeClusterArgs
from .kueue_install import KueueInstall, KueueInstallArgs
from .kueue_queues import KueueQueues, KueueQueuesArgs
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
        self.register_outputs(
            {
                "clusterName": self.cluster.name,
                "slicePools": [spec.pool_name for spec in self.slices],
            }
        )
