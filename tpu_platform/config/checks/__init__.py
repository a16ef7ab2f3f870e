"""Cross-field checks of a parsed stack, one small validator per section.

Each validator takes the whole ``PlatformConfig`` (quotas need the pools, the controller's
namespace needs the teams) and returns its ``Problems`` with config paths, the way Kueue's
``pkg/config/validation.go`` returns a ``field.ErrorList`` per part of its Configuration.
The order below is the order problems are reported in.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable

from ..platform import PlatformConfig
from ..problems import Problems
from .capacity import check_quota_capacity
from .cluster import check_cluster, check_maintenance, check_network
from .cohorts import check_cohorts
from .fleet import check_fleet_access, check_fleet_collisions, check_fleet_names, check_workers
from .hotswap import check_hotswap
from .kubeconfig_mode import check_kubeconfig_mode
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
    check_kubeconfig_mode,
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


# The stack keys each check reads (through helpers and properties too): with a section that failed
# its structure, only the checks that do not read it run, so no problem stems from a stand-in.
# tests/config/test_partial_checks.py holds every check to its list.
READS: dict[Check, frozenset[str]] = {
    check_locations: frozenset({"region", "zone", "cluster", "slicePools"}),
    check_cluster: frozenset({"cluster"}),
    check_kubeconfig_mode: frozenset({"fleet", "cluster", "hotswap", "monitoring"}),
    check_network: frozenset({"cluster"}),
    check_maintenance: frozenset({"cluster", "slicePools"}),
    check_pools: frozenset({"slicePools", "cluster", "zone"}),
    check_priorities: frozenset({"priorities", "teams"}),
    check_kueue: frozenset({"kueue", "slicePools"}),
    check_cohorts: frozenset({"cohorts", "kueue", "slicePools"}),
    check_teams: frozenset({"teams", "cohorts", "priorities", "kueue", "slicePools"}),
    check_quota_capacity: frozenset({"teams", "cohorts", "kueue", "slicePools"}),
    check_hotswap: frozenset({"hotswap", "teams"}),
    check_monitoring: frozenset({"monitoring", "hotswap", "cluster"}),
}

# A fleet's manager: its cluster and the queues of the whole fleet (pools and locations are
# each worker's, checked with the worker).
MANAGER_CHECKS: tuple[Check, ...] = (
    check_cluster,
    check_kubeconfig_mode,
    check_network,
    check_maintenance,
    check_priorities,
    check_kueue,
    check_cohorts,
    check_teams,
    check_quota_capacity,
)


def _run(checks: Iterable[Check], cfg: PlatformConfig, broken: Collection[str] = ()) -> Problems:
    """The problems of the checks that read none of the ``broken`` sections, in report order."""
    problems = Problems()
    for check in checks:
        if READS[check].isdisjoint(broken):
            problems.extend(check(cfg))
    return problems


def check_platform(cfg: PlatformConfig) -> Problems:
    """Every problem of one cluster's platform, in report order."""
    return _run(CHECKS, cfg)


def check_stack(cfg: PlatformConfig, broken: Collection[str] = ()) -> Problems:
    """Every problem of a stack, in report order; a fleet's manager first, then each worker.

    ``broken`` names the stack keys whose structure failed (``partial.parsed_sections``): the checks
    reading them are left out, and a fleet's workers, built from every section, wait for all."""
    if cfg.fleet is None and "fleet" not in broken:
        return _run(CHECKS, cfg, broken)
    problems = _run(MANAGER_CHECKS, cfg, broken)
    if broken or cfg.fleet is None:
        return problems
    problems.extend(check_fleet_names(cfg.fleet, cfg))
    problems.extend(check_fleet_access(cfg.fleet, cfg))
    problems.extend(check_fleet_collisions(cfg.fleet, cfg))
    problems.extend(check_workers(cfg, cfg.fleet, check_platform))
    return problems


__all__ = ["CHECKS", "MANAGER_CHECKS", "READS", "Check", "check_platform", "check_stack", "stack_warnings"]
