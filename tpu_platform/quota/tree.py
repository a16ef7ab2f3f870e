"""The cohort tree with Kueue's quota arithmetic, per slice shape.

Kueue 0.19.2 ``pkg/cache/scheduler/resource_node.go``:

- a node's *subtree quota* is its nominal quota plus what its children make visible to it:
  each child's subtree quota minus the part the child keeps to itself;
- a node with a ``lendingLimit`` keeps ``max(0, subtree - lendingLimit)`` to itself (its
  *local quota*, ``localQuota``); without one it keeps nothing back;
- ``potentialAvailable``: the most a node can ever use is its local quota plus what its
  parent can ever use, capped at ``subtree + borrowingLimit`` when a borrowing limit is
  set; a root can use its subtree quota;
- ``available`` does the same with usage, and ``addUsage``/``removeUsage`` charge a node and
  bubble what exceeds its local quota up to its parent (see ``usage.py``).

Parent links of an invalid stack may form a cycle (the checks reject it); every walk here
stops at a node it has already seen instead of looping.

The tree never changes once built, so the subtree and local quota of a node are computed once
per shape and kept: a simulator asks for them on every admission attempt.
"""

from __future__ import annotations

from collections.abc import Iterable

from .model import QuotaNode, Shape


class QuotaTree:
    """ClusterQueues (by team) and Cohorts (by name), linked by ``parent``.

    ``cohort_nodes`` and ``queue_nodes`` keep every node in stack order, even two with one
    name in a stack the checks will reject (each one's quota still counts against capacity);
    the lookups by name keep the first.
    """

    def __init__(self, cohorts: Iterable[QuotaNode], queues: Iterable[QuotaNode]) -> None:
        self.cohort_nodes: tuple[QuotaNode, ...] = tuple(cohorts)
        self.queue_nodes: tuple[QuotaNode, ...] = tuple(queues)
        self.cohorts: dict[str, QuotaNode] = {}
        for cohort in self.cohort_nodes:
            self.cohorts.setdefault(cohort.name, cohort)
        self.queues: dict[str, QuotaNode] = {}
        for queue in self.queue_nodes:
            self.queues.setdefault(queue.team or queue.name, queue)
        self._children: dict[str, list[QuotaNode]] = {name: [] for name in self.cohorts}
        for node in [*self.cohorts.values(), *self.queues.values()]:
            if node.parent is not None and node.parent in self._children:
                self._children[node.parent].append(node)
        self._subtree: dict[tuple[QuotaNode, Shape], int] = {}
        self._local: dict[tuple[QuotaNode, Shape], int] = {}

    def parent(self, node: QuotaNode) -> QuotaNode | None:
        return self.cohorts.get(node.parent) if node.parent is not None else None

    def children(self, cohort: str) -> list[QuotaNode]:
        """Cohorts and ClusterQueues directly under a cohort, cohorts first, in stack order."""
        return list(self._children.get(cohort, []))

    def ancestors(self, node: QuotaNode) -> list[QuotaNode]:
        """The cohorts above a node, nearest first, up to its root."""
        chain: list[QuotaNode] = []
        current = self.parent(node)
        while current is not None and current not in chain:
            chain.append(current)
            current = self.parent(current)
        return chain

    def root(self, node: QuotaNode) -> QuotaNode:
        """The top of a node's tree (the node itself when it has no parent)."""
        chain = self.ancestors(node)
        return chain[-1] if chain else node

    def subtree(self, node: QuotaNode, shape: Shape, _seen: frozenset[str] = frozenset()) -> int:
        """Nominal quota plus what the children lend upward (Kueue's SubtreeQuota)."""
        if _seen:
            return self._subtree_of(node, shape, _seen)
        key = (node, shape)
        if key not in self._subtree:
            self._subtree[key] = self._subtree_of(node, shape, _seen)
        return self._subtree[key]

    def _subtree_of(self, node: QuotaNode, shape: Shape, _seen: frozenset[str]) -> int:
        quota = node.quota(shape)
        own = quota.nominal if quota is not None else 0
        if node.kind != "Cohort" or node.name in _seen:
            return own
        seen = _seen | {node.name}
        return own + sum(
            self.subtree(child, shape, seen) - self.local(child, shape, seen)
            for child in self._children.get(node.name, [])
        )

    def local(self, node: QuotaNode, shape: Shape, _seen: frozenset[str] = frozenset()) -> int:
        """What the node keeps from its parent because of its lending limit (Kueue's localQuota)."""
        if _seen:
            return self._local_of(node, shape, _seen)
        key = (node, shape)
        if key not in self._local:
            self._local[key] = self._local_of(node, shape, _seen)
        return self._local[key]

    def _local_of(self, node: QuotaNode, shape: Shape, _seen: frozenset[str]) -> int:
        quota = node.quota(shape)
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
        quota = node.quota(shape)
        if quota is not None and quota.borrowing_limit is not None:
            avail = min(avail, subtree + quota.borrowing_limit)
        return avail
