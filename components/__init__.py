"""Pulumi components of tpu-platform: one component per module, typed args, ``parent=self``."""

from .gke_cluster import GkeCluster, GkeClusterArgs
from .kube_object import KubeObject
from .kueue_install import KueueInstall, KueueInstallArgs
from .kueue_queues import KueueQueues, KueueQueuesArgs
from .monitoring import Monitoring, MonitoringArgs
from .platform import TpuPlatform, TpuPlatformArgs
from .priorities import Priorities, PrioritiesArgs
from .tpu_slice_pool import TpuSlicePool, TpuSlicePoolArgs

__all__ = [
    "GkeCluster",
    "GkeClusterArgs",
    "KubeObject",
    "KueueInstall",
    "KueueInstallArgs",
    "KueueQueues",
    "KueueQueuesArgs",
    "Monitoring",
    "MonitoringArgs",
    "Priorities",
    "PrioritiesArgs",
    "TpuPlatform",
    "TpuPlatformArgs",
    "TpuSlicePool",
    "TpuSlicePoolArgs",
]
