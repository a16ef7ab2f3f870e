"""The typed stack model: every section of ``stacks/Pulumi.<stack>.yaml``.

Layers, each importing only the ones before it in this list: ``problems`` (paths, errors),
``base``/``shapes``/``explain`` (formats, pydantic's errors as lines), one model module per
section (``cluster``, ``pools``, ``priorities``, ``kueue``, ``quota``, ``cohorts``, ``teams``,
``hotswap``), ``platform`` (the whole stack), ``capacity`` and ``sizing`` (counted from the whole
stack, for the checks and the layers above), ``checks`` (one validator per section), ``partial``
(the sections of a stack that validated, for the checks when others did not) and ``loader``
(``parse_platform``, ``read_stack``). tests/test_import_graph.py holds them to it; nothing here
imports a package built on the stack model (tests/test_layers.py).
"""

from .base import StackModel
from .cluster import ClusterConfig, SystemPoolConfig
from .cohorts import CohortConfig
from .hotswap import HotswapConfig, ImageBuildConfig
from .kueue import ControllerConfig, KueueConfig
from .loader import parse_platform, read_stack
from .monitoring import AlertBoundsConfig, MonitoringConfig, NotificationChannelConfig
from .platform import PlatformConfig
from .pools import CapacityConfig, SlicePoolConfig
from .priorities import PriorityConfig
from .problems import Loc, Problem, Problems, StackConfigError, format_path
from .quota import QuotaConfig
from .teams import NamespaceConfig, TeamConfig

__all__ = [
    "AlertBoundsConfig",
    "CapacityConfig",
    "ClusterConfig",
    "CohortConfig",
    "ControllerConfig",
    "HotswapConfig",
    "ImageBuildConfig",
    "KueueConfig",
    "Loc",
    "MonitoringConfig",
    "NamespaceConfig",
    "NotificationChannelConfig",
    "PlatformConfig",
    "PriorityConfig",
    "Problem",
    "Problems",
    "QuotaConfig",
    "SlicePoolConfig",
    "StackConfigError",
    "StackModel",
    "SystemPoolConfig",
    "TeamConfig",
    "format_path",
    "parse_platform",
    "read_stack",
]
