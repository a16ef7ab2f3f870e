"""The typed stack model: every section of ``stacks/Pulumi.<stack>.yaml``.

Layers, each importing only the ones above it in this list: ``problems`` (paths, errors),
``base``/``shapes`` (formats), one model module per section (``cluster``, ``pools``,
``priorities``, ``kueue``, ``quota``, ``cohorts``, ``teams``, ``hotswap``), ``platform`` (the
whole stack), ``checks`` (one validator per section) and ``loader`` (``parse_platform``,
``read_stack``).
"""

from .base import StackModel
from .cluster import ClusterConfig, SystemPoolConfig
from .cohorts import CohortConfig
from .hotswap import HotswapConfig, ImageBuildConfig
from .kueue import ControllerConfig, KueueConfig
from .loader import parse_platform, read_stack
from .platform import PlatformConfig
from .pools import CapacityConfig, SlicePoolConfig
from .priorities import PriorityConfig
from .problems import Loc, Problem, Problems, StackConfigError, format_path
from .quota import QuotaConfig, ResolvedQuota
from .teams import NamespaceConfig, TeamConfig

__all__ = [
    "CapacityConfig",
    "ClusterConfig",
    "CohortConfig",
    "ControllerConfig",
    "HotswapConfig",
    "ImageBuildConfig",
    "KueueConfig",
    "Loc",
    "NamespaceConfig",
    "PlatformConfig",
    "PriorityConfig",
    "Problem",
    "Problems",
    "QuotaConfig",
    "ResolvedQuota",
    "SlicePoolConfig",
    "StackConfigError",
    "StackModel",
    "SystemPoolConfig",
    "TeamConfig",
    "format_path",
    "parse_platform",
    "read_stack",
]
