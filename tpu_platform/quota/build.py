"""The quota layout of a parsed stack.

It may run on a stack the cross-field checks have not passed, so entries the checks reject
are left out instead of failing here: a pool or quota of a shape TPU v6e does not have, and
chips that are no whole number of slices. For a valid stack nothing is left out. The slices
are counted by ``config.capacity``, as the stack's capacity check counts them.
"""

from __future__ import annotations

from ..config.capacity import nominal_slices, pool_slices
from ..config.kueue import KueueConfig
from ..config.platform import PlatformConfig
from ..config.quota import QuotaConfig, as_slices
from .layout import QuotaLayout
from .model import FlavorQuota, PoolFlavor, QuotaNode
from .tree import QuotaTree


def flavor_quotas(entries: list[QuotaConfig], kueue: KueueConfig) -> tuple[FlavorQuota, ...]:
    """Quota entries in whole slices, in stack order; unknown shapes and partial slices left out."""
    quotas = []
    for entry in entries:
        counted = nominal_slices(entry)
        if counted is None:
            continue
        shape, nominal = counted
        quotas.append(
            FlavorQuota(
                shape=shape,
                flavor=kueue.flavor_name(shape),
                nominal=nominal,
                borrowing_limit=as_slices(entry.borrowing_limit_slices, entry.borrowing_limit_chips, shape),
                lending_limit=as_slices(entry.lending_limit_slices, entry.lending_limit_chips, shape),
            )
        )
    return tuple(quotas)


def pool_flavors(cfg: PlatformConfig) -> tuple[PoolFlavor, ...]:
    """One flavor per shape the slice pools provide, smallest shape first, with its slice count."""
    return tuple(
        PoolFlavor(cfg.kueue.flavor_name(shape), shape, slices) for shape, slices in pool_slices(cfg).items()
    )


def quota_layout(cfg: PlatformConfig) -> QuotaLayout:
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
    return QuotaLayout(pool_flavors(cfg), QuotaTree(cohorts, queues))
