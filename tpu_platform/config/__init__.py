"""The typed stack model: every section of ``stacks/Pulumi.<stack>.yaml``."""

from .base import StackConfigError, StackModel
from .cluster import ClusterConfig, SystemPoolConfig
from .hotswap import HotswapConfig, ImageBuildConfig
from .platform import PlatformConfig, parse_platform, read_stack
from .pools import CapacityConfig, SlicePoolConfig
from .queues import CohortConfig, KueueConfig, PriorityConfig, QuotaConfig, TeamConfig

__all__ = [
    "CapacityConfig",
    "ClusterConfig",
    "CohortConfig",
    "HotswapConfig",
    "ImageBuildConfig",
    "KueueConfig",
    "PlatformConfig",
    "PriorityConfig",
    "QuotaConfig",
    "SlicePoolConfig",
    "StackConfigError",
    "StackModel",
    "SystemPoolConfig",
    "TeamConfig",
    "parse_platform",
    "read_stack",
]
