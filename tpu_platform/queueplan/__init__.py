"""One quota/queue plan per stack: flavors with the pools' real capacity per shape, and the
cohort tree (ClusterQueues under Cohorts, hierarchical as Kueue models it) with nominal,
borrowing and lending quota per flavor, in slices and chips.

Layers: ``model`` (data) < ``tree`` (Kueue's arithmetic) < ``usage`` (charging usage) and
``plan`` (per-team views, nominal quota added up by ``tpu_platform.claims``) < ``build`` (from a
stack, in the slices ``config.capacity`` counts).

A simulator admits on the tree itself: ``plan.queue_of(team)`` is the ClusterQueue node
(``quotas`` per shape, ``parent``, ``local_queues``), ``plan.tree.parent``/``children``/
``ancestors`` walk the cohorts, and one ``TreeUsage(plan.tree)`` per run answers
``available(node, shape)`` and takes ``charge``/``release`` as workloads are admitted and
finish, so borrowing follows the hierarchy instead of a flattened root.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .build import flavor_quotas, pool_flavors, queue_plan
from .model import FlavorQuota, PoolFlavor, QuotaNode, Shape, catalog_order
from .plan import QueuePlan, TeamFlavor, TeamQuota
from .tree import QuotaTree
from .usage import TreeUsage

if TYPE_CHECKING:
    from ..config.platform import PlatformConfig


def team_quotas(cfg: PlatformConfig) -> list[TeamQuota]:
    """Guaranteed (nominal) and borrowable slices of every team, in stack order."""
    return queue_plan(cfg).team_quotas()


def unassigned_slices(cfg: PlatformConfig) -> dict[Shape, int]:
    """Slices per shape that no nominal quota (team or cohort) covers."""
    return queue_plan(cfg).unassigned()


__all__ = [
    "FlavorQuota",
    "PoolFlavor",
    "QueuePlan",
    "QuotaNode",
    "QuotaTree",
    "Shape",
    "TeamFlavor",
    "TeamQuota",
    "TreeUsage",
    "catalog_order",
    "flavor_quotas",
    "pool_flavors",
    "queue_plan",
    "team_quotas",
    "unassigned_slices",
]
