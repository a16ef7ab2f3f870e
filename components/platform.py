"""``TpuPlatform``: the whole platform for one environment, built from a ``PlatformConfig``."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby

import pulumi

from tpu_platform.config import PlatformConfig
from tpu_platform.slices import SliceSpec, expand_slices

from .gke_cluster import GkeCluster, GkeClusterArgs
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
        self.register_outputs(
            {
                "clusterName": self.cluster.name,
                "slicePools": [spec.pool_name for spec in self.slices],
            }
        )
