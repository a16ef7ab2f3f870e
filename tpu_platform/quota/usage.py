"""Usage on the cohort tree, charged and released the way Kueue does, for a simulator or a
what-if: a node's usage first fills its local quota, the rest counts against its parent.

Kueue 0.19.2 ``pkg/cache/scheduler/resource_node.go``: ``addUsage``, ``removeUsage``,
``LocalAvailable`` and ``available`` (which may go negative on over-admission: quota removed, a
queue moved to another cohort); what a ClusterQueue can admit is that clamped at 0
(``pkg/cache/scheduler/clusterqueue_snapshot.go``, ``ClusterQueueSnapshot.Available``:
``MaxAmount(NewAmount(0), available(c, fr))``), while the recursion up the tree stays unclamped.
"""

from __future__ import annotations

from collections import defaultdict

from .model import NodeKind, QuotaNode, Shape
from .tree import QuotaTree

UsageKey = tuple[NodeKind, str, Shape]


class TreeUsage:
    """Slices in use per node and shape, on one ``QuotaTree``."""

    def __init__(self, tree: QuotaTree) -> None:
        self.tree = tree
        self._usage: defaultdict[UsageKey, int] = defaultdict(int)

    def copy(self) -> TreeUsage:
        """An independent copy on the same tree: a what-if (which preemptions would make room)
        charges and releases the copy and leaves these books alone."""
        twin = TreeUsage(self.tree)
        twin._usage.update(self._usage)
        return twin

    def of(self, node: QuotaNode, shape: Shape) -> int:
        """The usage that counts against this node (for a cohort: its children's, past their local quota)."""
        return self._usage[(*node.key, shape)]

    def local_available(self, node: QuotaNode, shape: Shape) -> int:
        """Guaranteed quota of the node that its usage has not taken yet (not visible to its parent)."""
        return max(0, self.tree.local(node, shape) - self.of(node, shape))

    def available(self, node: QuotaNode, shape: Shape) -> int:
        """What the node could still admit now, within every borrowing limit on the way up: never
        below 0, as Kueue's ``ClusterQueueSnapshot.Available`` (:meth:`raw_available` is the signed
        value, which a parent's over-admission makes negative)."""
        return max(0, self._available(node, shape, set()))

    def raw_available(self, node: QuotaNode, shape: Shape) -> int:
        """Kueue's unclamped ``available`` (``resource_node.go``): negative on over-admission."""
        return self._available(node, shape, set())

    def _available(self, node: QuotaNode, shape: Shape, seen: set[str]) -> int:
        parent = self.tree.parent(node)
        if parent is None or parent.name in seen:
            return self.tree.subtree(node, shape) - self.of(node, shape)
        parent_available = self._available(parent, shape, seen | {parent.name})
        quota = node.quota(shape)
        if quota is not None and quota.borrowing_limit is not None:
            local = self.tree.local(node, shape)
            stored_in_parent = self.tree.subtree(node, shape) - local
            used_in_parent = max(0, self.of(node, shape) - local)
            parent_available = min(
                stored_in_parent - used_in_parent + quota.borrowing_limit, parent_available
            )
        return self.local_available(node, shape) + parent_available

    def charge(self, node: QuotaNode, shape: Shape, slices: int) -> None:
        """Admit ``slices`` on the node; what exceeds its local quota is charged to its parent too."""
        seen: set[str] = set()
        current: QuotaNode | None = node
        while current is not None and slices > 0:
            local_available = self.local_available(current, shape)
            self._usage[(*current.key, shape)] += slices
            parent = self.tree.parent(current)
            if parent is None or parent.name in seen or slices <= local_available:
                return
            seen.add(parent.name)
            slices -= local_available
            current = parent

    def release(self, node: QuotaNode, shape: Shape, slices: int) -> None:
        """Undo ``charge``: the part the node stored in its parent is released there too."""
        seen: set[str] = set()
        current: QuotaNode | None = node
        while current is not None and slices > 0:
            stored_in_parent = self.of(current, shape) - self.tree.local(current, shape)
            self._usage[(*current.key, shape)] -= slices
            parent = self.tree.parent(current)
            if stored_in_parent <= 0 or parent is None or parent.name in seen:
                return
            seen.add(parent.name)
            slices = min(slices, stored_in_parent)
            current = parent
