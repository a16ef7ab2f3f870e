"""The plan of a parsed stack.

It runs on stacks the cross-field checks have not passed yet (the capacity check reads it),
so entries the checks reject are left out instead of failing here: a pool or quota of a
shape TPU v6e does not have, and chips that are no whole number of slices. For a valid stack
nothing is left out.

Only ``catalog`` is imported at run time: the config layer's checks import this package,
so the stack model is named for type checking only.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from .. import catalog
from .model import FlavorQuota, PoolFlavor, QuotaNode, Shape, catalog_order
from .plan import QueuePlan
from .tree import QuotaTree

if TYPE_CHECKING:
    from ..config.kueue import KueueConfig
    from ..config.platform import PlatformConfig
    from ..config.quota import QuotaConfig


def _shape(topology: str, multi_host: bool | None) -> Shape | None:
    try:
        return catalog.lookup(topology, multi_host)
    except catalog.UnsupportedSliceError:
        return None


def _slices(amount: int | None, chips: int | None, shape: Shape) -> int | None:
    if amount is not None:
        return amount
    return None if chips is None else chips // shape.chips


def flavor_quotas(entries: list[QuotaConfig], kueue: KueueConfig) -> tuple[FlavorQuota, ...]:
    """Quota entries in whole slices, in stack order; unknown shapes and partial slices left out."""
    quotas = []
    for entry in entries:
        shape = _shape(entry.topology, entry.multi_host)
        if shape is None or (entry.chips is not None and entry.chips % shape.chips):
            continue
        quotas.append(
            FlavorQuota(
                shape=shape,
                flavor=kueue.flavor_name(shape),
                nominal=_slices(entry.slices, entry.chips, shape) or 0,
                borrowing_limit=_slices(entry.borrowing_limit_slices, entry.borrowing_limit_chips, shape),
                lending_limit=_slices(entry.lending_limit_slices, entry.lending_limit_chips, shape),
            )
        )
    return tuple(quotas)


def pool_flavors(cfg: PlatformConfig) -> tuple[PoolFlavor, ...]:
    """One flavor per shape the slice pools provide, smallest shape first, with its slice count."""
    counts: Counter[Shape] = Counter()
    for pool in cfg.slice_pools:
        shape = _shape(pool.topology, pool.multi_host)
        if shape is not None:
            counts[shape] += pool.count
    return tuple(
        PoolFlavor(cfg.kueue.flavor_name(shape), shape, counts[shape])
        for shape in sorted(counts, key=catalog_order)
    )


def queue_plan(cfg: PlatformConfig) -> QueuePlan:
    """Flavors, Cohorts (declared, then implicit roots) and one ClusterQueue per team."""
    cohorts = [
        QuotaNode("Cohort", c.name, c.parent_name, flavor_quotas(c.quota, cfg.kueue)) for c in cfg.cohorts
    ]
    declared = {c.name for c in cohorts}
    queues: list[QuotaNode] = []
    for team in cfg.teams:
        if team.cohort_name is not None and team.cohort_name not in declared:
            declared.add(team.cohort_name)
            cohorts.append(QuotaNode("Cohort", team.cohort_name, None, declared=False))
        queues.append(
            QuotaNode(
                "ClusterQueue",
                team.cluster_queue,
                team.cohort_name,
                flavor_quotas(team.quota, cfg.kueue),
                team=team.name,
                local_queues=tuple(team.local_queue_list()),
            )
        )
    return QueuePlan(pool_flavors(cfg), QuotaTree(cohorts, queues))
