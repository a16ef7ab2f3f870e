"""Pulumi components of tpu-platform: one component per module, typed args, ``parent=self``."""

from .gke_cluster import GkeCluster, GkeClusterArgs
from .platform import TpuPlatform, TpuPlatformArgs
from .tpu_slice_pool import TpuSlicePool, TpuSlicePoolArgs

__all__ = [
    "GkeCluster",
    "GkeClusterArgs",
    "TpuPlatform",
    "TpuPlatformArgs",
    "TpuSlicePool",
    "TpuSlicePoolArgs",
]
