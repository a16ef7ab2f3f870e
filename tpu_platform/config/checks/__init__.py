"""Cross-field checks of a parsed stack, one small validator per section.

Each validator takes the whole ``PlatformConfig`` (quotas need the pools, the controller's
namespace needs the teams) and returns its ``Problems`` with config paths, the way Kueue's
``pkg/config/validation.go`` returns a ``field.ErrorList`` per part of its Configuration.
The order below is the order problems are reported in.
"""

from __future__ import annotations

from collections.abc import Callable

from ..platform import PlatformConfig
from ..problems import Problems
from .capacity import check_quota_capacity
from .cluster import check_cluster, check_maintenance, check_network
from .cohorts import check_cohorts
from .hotswap import check_hotswap
from .kueue import check_kueue
from .locations import check_locations
from .monitoring import check_monitoring
from .pools import check_pools
from .priorities import check_priorities
from .teams import check_teams
from .warnings import stack_warnings

Check = Callable[[PlatformConfig], Problems]

CHECKS: tuple[Check, ...] = (
    check_locations,
    check_cluster,
    check_network,
    check_maintenance,
    check_pools,
    check_priorities,
    check_kueue,
    check_cohorts,
    check_teams,
    check_quota_capacity,
    check_hotswap,
    check_monitoring,
)


def check_stack(cfg: PlatformConfig) -> Problems:
    """Every problem of a structurally valid stack, in report order."""
    problems = Problems()
    for check in CHECKS:
        problems.extend(check(cfg))
    return problems


__all__ = ["CHECKS", "Check", "check_stack", "stack_warnings"]
