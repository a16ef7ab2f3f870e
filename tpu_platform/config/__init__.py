"""The typed stack model: every section of ``stacks/Pulumi.<stack>.yaml``."""

from .base import StackConfigError, StackModel
from .cluster import ClusterConfig, SystemPoolConfig
from .platform import PlatformConfig, parse_platform, read_stack
from .pools import CapacityConfig, SlicePoolConfig

__all__ = [
    "CapacityConfig",
    "ClusterConfig",
    "PlatformConfig",
    "SlicePoolConfig",
    "StackConfigError",
    "StackModel",
    "SystemPoolConfig",
    "parse_platform",
    "read_stack",
]
