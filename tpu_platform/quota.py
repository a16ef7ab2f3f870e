"""Quota math: what each team is guaranteed and what it could borrow, from the stack alone.

Kueue models quota as a tree: ClusterQueues are leaves, Cohorts are inner nodes (declared
ones may nest under ``parentName``; a cohort a team names without declaring it is an
implicit root). Per flavor, every node has a nominal quota and optional borrowing and
lending limits. This module follows Kueue's own accounting (``resource_node.go`` in
Kueue 0.19):

- a node's *subtree quota* is its nominal quota plus what its children make visible to it:
  each child's subtree quota minus the part the child keeps to itself;
- a node with a ``lendingLimit`` keeps ``max(0, subtree - lendingLimit)`` to itself (its
  *local quota*); without one it keeps nothing back;
- the most a node can ever use is its local quota plus what its parent can ever use,
  capped at ``subtree + borrowingLimit`` when a borrowing limit is set; a root can use its
  subtree quota.

So a team's guaranteed slices are its nominal quota, and its borrowable slices are that
maximum minus the nominal quota: what the cohort could lend it when everyone else is idle.
Everything is counted in whole slices per shape (one flavor per shape); chips follow.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import catalog
from .config import PlatformConfig, ResolvedQuota
from .config.checks.common import pool_slices_by_shape

Shape = catalog.SliceShape


@dataclass
class QuotaNode:
    """A ClusterQueue or Cohort in the quota tree."""

    kind: str  # "ClusterQueue" or "Cohort"
    name: str
    parent: str | None
    quotas: dict[Shape, ResolvedQuota] = field(default_factory=dict)


class QuotaTree:
    """The stack's ClusterQueues and Cohorts, with Kueue's capacity arithmetic per shape."""

    def __init__(self, cfg: PlatformConfig) -> None:
        self.cohorts: dict[str, QuotaNode] = {}
        self.queues: dict[str, QuotaNode] = {}
        for cohort in cfg.cohorts:
            self.cohorts[cohort.name] = QuotaNode(
                "Cohort", cohort.name, cohort.parent_name, {q.shape: q for q in _resolve(cohort.quota)}
            )
        for team in cfg.teams:
            if team.cohort_name is not None and team.cohort_name not in self.cohorts:
                self.cohorts[team.cohort_name] = QuotaNode("Cohort", team.cohort_name, None)
            self.queues[team.name] = QuotaNode(
                "ClusterQueue",
                team.cluster_queue,
                team.cohort_name,
                {q.shape: q for q in team.resolved_quota()},
            )
        self._children: dict[str, list[QuotaNode]] = {name: [] for name in self.cohorts}
        for node in [*self.cohorts.values(), *self.queues.values()]:
            if node.parent is not None and node.parent in self._children:
                self._children[node.parent].append(node)

    def parent(self, node: QuotaNode) -> QuotaNode | None:
        return self.cohorts.get(node.parent) if node.parent is not None else None

    def subtree(self, node: QuotaNode, shape: Shape, _seen: frozenset[str] = frozenset()) -> int:
        """Nominal quota plus what the children lend upward (Kueue's SubtreeQuota)."""
        own = node.quotas[shape].nominal if shape in node.quotas else 0
        if node.kind != "Cohort" or node.name in _seen:
            return own
        seen = _seen | {node.name}
        return own + sum(
            self.subtree(child, shape, seen) - self.local(child, shape, seen)
            for child in self._children.get(node.name, [])
        )

    def local(self, node: QuotaNode, shape: Shape, _seen: frozenset[str] = frozenset()) -> int:
        """What the node keeps from its parent because of its lending limit."""
        quota = node.quotas.get(shape)
        if quota is None or quota.lending_limit is None:
            return 0
        return max(0, self.subtree(node, shape, _seen) - quota.lending_limit)

    def lent(self, node: QuotaNode, shape: Shape) -> int:
        """What the node makes visible to its parent (0 at a root)."""
        if self.parent(node) is None:
            return 0
        return self.subtree(node, shape) - self.local(node, shape)

    def potential(self, node: QuotaNode, shape: Shape, _depth: int = 0) -> int:
        """The most the node could use with no other usage anywhere (Kueue's potentialAvailable)."""
        parent = self.parent(node)
        subtree = self.subtree(node, shape)
        if parent is None or _depth > len(self.cohorts):
            return subtree
        avail = self.local(node, shape) + self.potential(parent, shape, _depth + 1)
        quota = node.quotas.get(shape)
        if quota is not None and quota.borrowing_limit is not None:
            avail = min(avail, subtree + quota.borrowing_limit)
        return avail


def _resolve(entries: list[Any]) -> list[ResolvedQuota]:
    return [entry.resolve() for entry in entries]


@dataclass(frozen=True)
class FlavorQuota:
    """One team's quota in one flavor (slice shape), in slices."""

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
    flavors: list[FlavorQuota]

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


def team_quotas(cfg: PlatformConfig) -> list[TeamQuota]:
    """Guaranteed (nominal) and borrowable slices of every team, in stack order."""
    tree = QuotaTree(cfg)
    result: list[TeamQuota] = []
    for team in cfg.teams:
        node = tree.queues[team.name]
        flavors = []
        for quota in team.resolved_quota():
            shape = quota.shape
            potential = tree.potential(node, shape)
            flavors.append(
                FlavorQuota(
                    shape=shape,
                    flavor=cfg.kueue.flavor_name(shape),
                    guaranteed_slices=quota.nominal,
                    borrowable_slices=max(0, potential - quota.nominal),
                    lendable_slices=tree.lent(node, shape),
                    borrowing_limit_slices=quota.borrowing_limit,
                    lending_limit_slices=quota.lending_limit,
                )
            )
        result.append(TeamQuota(team.name, team.cluster_queue, team.cohort_name, flavors))
    return result


def unassigned_slices(cfg: PlatformConfig) -> dict[Shape, int]:
    """Slices per shape that no nominal quota (team or cohort) covers: idle unless used outside Kueue."""
    provided = pool_slices_by_shape(cfg)
    claimed: dict[Shape, int] = dict.fromkeys(provided, 0)
    for entries in [*(t.quota for t in cfg.teams), *(c.quota for c in cfg.cohorts)]:
        for quota in _resolve(entries):
            claimed[quota.shape] = claimed.get(quota.shape, 0) + quota.nominal
    return {
        shape: provided[shape] - claimed.get(shape, 0) for shape in catalog.all_shapes() if shape in provided
    }
