"""The pieces of a quota layout: flavors with their real capacity, and the nodes of the
cohort tree (ClusterQueues are leaves, Cohorts inner nodes) with their quota per flavor.

Everything is counted in whole slices of one shape (one ResourceFlavor per shape); chips
follow from the shape. Kueue's own types are ``FlavorQuotas``/``ResourceQuota`` in
``apis/kueue/v1beta2/clusterqueue_types.go`` (Kueue 0.19.2): nominalQuota, borrowingLimit,
lendingLimit per flavor and resource.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .. import catalog

Shape = catalog.SliceShape
NodeKind = Literal["ClusterQueue", "Cohort"]


def catalog_order(shape: Shape) -> int:
    """Smallest slice first, the order flavors are listed in everywhere."""
    return catalog.all_shapes().index(shape)


@dataclass(frozen=True, slots=True)
class PoolFlavor:
    """A ResourceFlavor: one slice shape and how many slices of it the pools really have."""

    name: str
    shape: Shape
    slices: int

    @property
    def chips(self) -> int:
        return self.slices * self.shape.chips


@dataclass(frozen=True, slots=True)
class FlavorQuota:
    """One node's quota in one flavor, in whole slices; a ``None`` limit means no limit."""

    shape: Shape
    flavor: str
    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None

    @property
    def nominal_chips(self) -> int:
        return self.nominal * self.shape.chips

    @property
    def lendable(self) -> int:
        """The part of the node's own nominal quota its parent may lend on: all of it, or at most
        the lending limit (for a ClusterQueue this is ``QuotaTree.lent`` under a cohort)."""
        return self.nominal if self.lending_limit is None else min(self.lending_limit, self.nominal)

    @property
    def borrowing_limit_chips(self) -> int | None:
        return None if self.borrowing_limit is None else self.borrowing_limit * self.shape.chips

    @property
    def lending_limit_chips(self) -> int | None:
        return None if self.lending_limit is None else self.lending_limit * self.shape.chips


@dataclass(frozen=True)
class QuotaNode:
    """A ClusterQueue or Cohort of the tree; ``parent`` is the cohort above it (None: a root).

    ``quotas`` keep the stack's order; ``ordered()`` gives them smallest shape first, the
    order the rendered ``resourceGroups`` list them in. A cohort a team names without
    declaring it is an implicit root with no quota (``declared`` is False).
    """

    kind: NodeKind
    name: str
    parent: str | None
    quotas: tuple[FlavorQuota, ...] = ()
    team: str | None = None
    declared: bool = True
    local_queues: tuple[tuple[str, str], ...] = field(default=())  # (namespace, name), ClusterQueues only

    def quota(self, shape: Shape) -> FlavorQuota | None:
        return next((q for q in self.quotas if q.shape == shape), None)

    def ordered(self) -> list[FlavorQuota]:
        return sorted(self.quotas, key=lambda q: catalog_order(q.shape))

    @property
    def key(self) -> tuple[NodeKind, str]:
        """Kueue names ClusterQueues and Cohorts separately: the kind is part of a node's identity."""
        return (self.kind, self.name)
