"""One quota layout of a stack: flavors and their capacity, the cohort tree, and what
each team is guaranteed, could borrow and lends.

Kueue rendering, the linter's context, the summary and the simulator read quotas from here;
nothing else models them. The stack's capacity check, below this layout, counts the same slices
with ``config.capacity``, which the layout is built with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..claims import Claims
from .model import PoolFlavor, QuotaNode, Shape
from .tree import QuotaTree


@dataclass(frozen=True)
class TeamFlavor:
    """One team's quota in one flavor (slice shape), in slices: guaranteed, borrowable, lendable."""

    shape: Shape
    flavor: str
    guaranteed_slices: int
    borrowable_slices: int
    lendable_slices: int
    borrowing_limit_slices: int | None
    lending_limit_slices: int | None

    @property
    def guaranteed_chips(self) -> int:
        return self.guaranteed_slices * self.shape.chips

    @property
    def borrowable_chips(self) -> int:
        return self.borrowable_slices * self.shape.chips

    @property
    def lendable_chips(self) -> int:
        return self.lendable_slices * self.shape.chips

    def as_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "topology": self.shape.topology,
            "flavor": self.flavor,
            "guaranteedSlices": self.guaranteed_slices,
            "guaranteedChips": self.guaranteed_chips,
            "borrowableSlices": self.borrowable_slices,
            "borrowableChips": self.borrowable_chips,
            "lendableSlices": self.lendable_slices,
        }
        if self.shape.topology == "2x4":
            doc["multiHost"] = self.shape.multi_host
        return doc


@dataclass(frozen=True)
class TeamQuota:
    """What one team is guaranteed and could borrow, per flavor and in total."""

    team: str
    cluster_queue: str
    cohort: str | None
    flavors: list[TeamFlavor]

    @property
    def guaranteed_chips(self) -> int:
        return sum(f.guaranteed_chips for f in self.flavors)

    @property
    def borrowable_chips(self) -> int:
        return sum(f.borrowable_chips for f in self.flavors)

    def as_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"team": self.team, "clusterQueue": self.cluster_queue}
        if self.cohort:
            doc["cohort"] = self.cohort
        doc.update(
            {
                "guaranteedChips": self.guaranteed_chips,
                "borrowableChips": self.borrowable_chips,
                "byFlavor": [f.as_dict() for f in self.flavors],
            }
        )
        return doc


@dataclass(frozen=True)
class QuotaLayout:
    """Flavors smallest shape first; the tree's ClusterQueues by team, in stack order."""

    flavors: tuple[PoolFlavor, ...]
    tree: QuotaTree

    def flavor(self, shape: Shape) -> PoolFlavor | None:
        return next((f for f in self.flavors if f.shape == shape), None)

    def capacity(self) -> dict[Shape, int]:
        """Slices per shape the pools have."""
        return {f.shape: f.slices for f in self.flavors}

    @property
    def cluster_queues(self) -> list[QuotaNode]:
        """One per team, in stack order."""
        return list(self.tree.queue_nodes)

    @property
    def cohorts(self) -> list[QuotaNode]:
        """Every cohort: declared ones in stack order, then the implicit roots teams name."""
        return list(self.tree.cohort_nodes)

    def queue_of(self, team: str) -> QuotaNode:
        return self.tree.queues[team]

    def team_quota(self, node: QuotaNode) -> TeamQuota:
        """Guaranteed (nominal), borrowable (potential minus nominal) and lendable slices of a team."""
        flavors = [
            TeamFlavor(
                shape=quota.shape,
                flavor=quota.flavor,
                guaranteed_slices=quota.nominal,
                borrowable_slices=max(0, self.tree.potential(node, quota.shape) - quota.nominal),
                lendable_slices=self.tree.lent(node, quota.shape),
                borrowing_limit_slices=quota.borrowing_limit,
                lending_limit_slices=quota.lending_limit,
            )
            for quota in node.ordered()
        ]
        return TeamQuota(node.team or node.name, node.name, node.parent, flavors)

    def team_quotas(self) -> list[TeamQuota]:
        return [self.team_quota(node) for node in self.cluster_queues]

    def nominal_claims(self) -> Claims[Shape, str]:
        """Nominal slices per shape the pools have, by ``team x`` then ``cohort y``, in stack order."""
        capacity = self.capacity()
        claims: Claims[Shape, str] = Claims()
        owners = [
            *((f"team {n.team}", n) for n in self.cluster_queues),
            *((f"cohort {n.name}", n) for n in self.cohorts if n.declared),
        ]
        for owner, node in owners:
            for quota in node.quotas:
                if quota.shape in capacity and quota.nominal:
                    claims.add(quota.shape, owner, quota.nominal)
        return claims

    def unassigned(self) -> dict[Shape, int]:
        """Slices per shape no nominal quota covers: idle unless used outside Kueue."""
        claims = self.nominal_claims()
        return {f.shape: f.slices - int(claims.total(f.shape)) for f in self.flavors}
