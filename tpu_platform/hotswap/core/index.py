"""One pass over the snapshot that groups everything the rules need, so each rule stays linear."""

from __future__ import annotations

from tpu_platform.hotswap.core.model import JobSet, Node, NodePool, Pod, Snapshot, is_managed
from tpu_platform.hotswap.core.settings import Settings


class ClusterIndex:
    """Snapshot grouped by pool and by JobSet. Only pools of managed accelerators are indexed."""

    __slots__ = (
        "jobsets",
        "managed",
        "node_pool",
        "nodes",
        "nodes_by_pool",
        "nominated_pools",
        "pods_by_jobset",
        "pods_by_pool",
        "pools",
        "terminating",
    )

    def __init__(self, snap: Snapshot, settings: Settings) -> None:
        accelerators = frozenset(settings.managed_accelerators)
        self.pools: dict[str, NodePool] = {p.name: p for p in snap.pools if p.accelerator in accelerators}
        self.nodes_by_pool: dict[str, list[Node]] = {name: [] for name in sorted(self.pools)}
        self.nodes: dict[str, Node] = {}
        self.node_pool: dict[str, str] = {}
        for n in snap.nodes:
            members = self.nodes_by_pool.get(n.pool)
            if members is not None:
                members.append(n)
                self.nodes[n.name] = n
                self.node_pool[n.name] = n.pool
        for members in self.nodes_by_pool.values():
            members.sort(key=lambda n: n.name)
        self.jobsets: dict[str, JobSet] = {js.key: js for js in snap.jobsets}
        self.managed: frozenset[str] = frozenset(key for key, js in self.jobsets.items() if is_managed(js))
        self.pods_by_jobset: dict[str, list[Pod]] = {}
        self.pods_by_pool: dict[str, list[Pod]] = {name: [] for name in self.pools}
        """Pods bound to the pool's nodes that have not finished (terminating ones included)."""
        self.terminating: list[Pod] = []
        """Pods with a deletion timestamp on managed-pool nodes, finished or not."""
        self.nominated_pools: set[str] = set()
        node_pool = self.node_pool
        for pod in snap.pods:
            pool = node_pool.get(pod.node) if pod.node is not None else None
            if pod.deletion_timestamp is not None and pool is not None:
                self.terminating.append(pod)
            if pod.finished:
                continue
            if pod.jobset is not None:
                self.pods_by_jobset.setdefault(pod.jobset, []).append(pod)
            if pool is not None:
                self.pods_by_pool[pool].append(pod)
            if pod.nominated_node is not None:
                nominated = node_pool.get(pod.nominated_node)
                if nominated is not None:
                    self.nominated_pools.add(nominated)

    def pods_of(self, jobset_key: str) -> list[Pod]:
        return self.pods_by_jobset.get(jobset_key, [])
