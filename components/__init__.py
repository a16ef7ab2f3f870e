"""Pulumi components of tpu-platform: one component per module, typed args, ``parent=self``."""

from .cloud_nat import CloudNat, CloudNatArgs
from .fleet import TpuFleet, TpuFleetArgs, WorkerAccess
from .gke_cluster import GkeCluster, GkeClusterArgs
from .kube_object import KubeObject
from .kueue_install import KueueInstall, KueueInstallArgs
from .kueue_queues import KueueQueues, KueueQueuesArgs
from .monitoring import Monitoring, MonitoringArgs
from .platform import TpuPlatform, TpuPlatformArgs
from .priorities import Priorities, PrioritiesArgs
from .project_services import ProjectServices, ProjectServicesArgs
from .tpu_slice_pool import TpuSlicePool, TpuSlicePoolArgs
from .webhook_firewall import WebhookFirewall, WebhookFirewallArgs

__all__ = [
    "CloudNat",
    "CloudNatArgs",
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
    "ProjectServices",
    "ProjectServicesArgs",
    "TpuFleet",
    "TpuFleetArgs",
    "TpuPlatform",
    "TpuPlatformArgs",
    "TpuSlicePool",
    "TpuSlicePoolArgs",
    "WebhookFirewall",
    "WebhookFirewallArgs",
    "WorkerAccess",
]
