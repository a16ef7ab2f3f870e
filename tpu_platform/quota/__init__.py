"""One quota layout per stack: flavors with the pools' real capacity per shape, and the
cohort tree (ClusterQueues under Cohorts, hierarchical as Kueue models it) with nominal,
borrowing and lending quota per flavor, in slices and chips.

Layers: ``model`` (data) < ``tree`` (Kueue's arithmetic) < ``usage`` (charging usage) and
``layout`` (per-team views, nominal quota added up by ``tpu_platform.claims``) < ``build`` (from a
stack, in the slices ``config.capacity`` counts).

A simulator admits on the tree itself: ``layout.queue_of(team)`` is the ClusterQueue node
(``quotas`` per shape, ``parent``, ``local_queues``), ``layout.tree.parent``/``children``/
``ancestors`` walk the cohorts, and one ``TreeUsage(layout.tree)`` per run answers
``available(node, shape)`` and takes ``charge``/``release`` as workloads are admitted and
finish, so borrowing follows the hierarchy instead of a flattened root.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .build import flavor_quotas, pool_flavors, quota_layout
from .layout import QuotaLayout, TeamFlavor, TeamQuota
from .model import FlavorQuota, PoolFlavor, QuotaNode, Shape, catalog_order
from .tree import QuotaTree
from .usage import TreeUsage

if TYPE_CHECKING:
    from ..config.platform import PlatformConfig


def team_quotas(cfg: PlatformConfig) -> list[TeamQuota]:
    """Guaranteed (nominal) and borrowable slices of every team, in stack order."""
    return quota_layout(cfg).team_quotas()


def unassigned_slices(cfg: PlatformConfig) -> dict[Shape, int]:
    """Slices per shape that no nominal quota (team or cohort) covers."""
    return quota_layout(cfg).unassigned()


__all__ = [
    "FlavorQuota",
    "PoolFlavor",
    "QuotaLayout",
    "QuotaNode",
    "QuotaTree",
    "Shape",
    "TeamFlavor",
    "TeamQuota",
    "TreeUsage",
    "catalog_order",
    "flavor_quotas",
    "pool_flavors",
    "quota_layout",
    "team_quotas",
    "unassigned_slices",
]
