"""One pass over the snapshot that groups everything the rules need, so each rule stays linear."""

from __future__ import annotations

from dataclasses import replace

from tpu_platform.hotswap.core.model import JobSet, Node, NodePool, Pod, Rejection, Snapshot, is_managed
from tpu_platform.hotswap.core.pool_health import ProblemDetector
from tpu_platform.hotswap.core.screening import (
    as_occupant,
    bounded_jobset,
    bounded_pod,
    jobset_rejection,
    node_rejections,
    pod_rejection,
    termination_rejections,
)
from tpu_platform.hotswap.core.settings import Settings


class ClusterIndex:
    """Snapshot grouped by pool and by JobSet. Only pools of managed accelerators are indexed.

    Refused objects (:mod:`tpu_platform.hotswap.core.screening`) are listed in ``rejected``: a refused
    JobSet is not indexed, and a refused pod, or one whose ``jobset_uid`` is not its JobSet's UID,
    belongs to no JobSet (it still occupies its node). Which JobSet a pod belongs to is the ownership
    chain's to say (:mod:`tpu_platform.hotswap.core.ownership`, applied by the controller). Times
    beyond now + clock skew are refused
    (:mod:`tpu_platform.hotswap.core.screening`): on pods and JobSets the indexed copies carry the
    bounded times; those on nodes are left out by the health rules; each is listed in ``rejected``.
    """

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
        "rejected",
        "reporting_by_pool",
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
        now = snap.now
        self.rejected: list[Rejection] = []
        for members in self.nodes_by_pool.values():
            members.sort(key=lambda n: n.name)
        detector = ProblemDetector(settings)
        self.rejected.extend(node_rejections(self.nodes_by_pool.values(), now, detector, settings))
        self.jobsets: dict[str, JobSet] = {}
        for raw_js in snap.jobsets:
            refused = jobset_rejection(raw_js)
            if refused is None:
                js, late = bounded_jobset(raw_js, now, settings)
                self.jobsets[js.key] = js
                self.rejected.extend(late)
            else:
                self.rejected.append(refused)
        self.managed: frozenset[str] = frozenset(key for key, js in self.jobsets.items() if is_managed(js))
        self.pods_by_jobset: dict[str, list[Pod]] = {}
        """A JobSet's unfinished pods that hold TPU chips: only they are placement (a pod without
        chips occupies no slice, wherever it is bound)."""
        self.pods_by_pool: dict[str, list[Pod]] = {name: [] for name in self.pools}
        """Pods bound to the pool's nodes that have not finished (terminating ones included)."""
        self.terminating: list[Pod] = []
        """Pods with a deletion timestamp on managed-pool nodes, finished or not."""
        self.nominated_pools: set[str] = set()
        self.reporting_by_pool: dict[str, list[Pod]] = {}
        """Pods bound to the pool's nodes with failed containers, finished or not, none refused: the
        candidates for workload reports (:mod:`tpu_platform.hotswap.core.workload_signals`)."""
        node_pool = self.node_pool
        signals = settings.workload_signals
        for pod in self._screened_pods(snap.pods, now):
            pool = node_pool.get(pod.node) if pod.node is not None else None
            if pod.deletion_timestamp is not None and pool is not None:
                self.terminating.append(pod)
            if pod.terminations and pool is not None and pod.rejection is None:
                self.reporting_by_pool.setdefault(pool, []).append(pod)
                if signals:
                    self.rejected.extend(termination_rejections(pod, now))
            if pod.finished:
                continue
            if pod.jobset is not None and pod.uses_accelerator:
                self.pods_by_jobset.setdefault(pod.jobset, []).append(pod)
            if pool is not None:
                self.pods_by_pool[pool].append(pod)
            if pod.nominated_node is not None:
                nominated = node_pool.get(pod.nominated_node)
                if nominated is not None:
                    self.nominated_pools.add(nominated)

    def _screened_pods(self, pods: tuple[Pod, ...], now: float) -> list[Pod]:
        out = []
        for raw in pods:
            refused = pod_rejection(raw)
            if refused is not None:
                self.rejected.append(refused)
                out.append(as_occupant(raw))
                continue
            pod, late = bounded_pod(raw, now)
            if late:
                self.rejected.extend(late)
            if pod.jobset is not None and pod.jobset_uid:
                owner = self.jobsets.get(pod.jobset)
                if owner is None or owner.uid != pod.jobset_uid:
                    pod = replace(pod, jobset=None)
            out.append(pod)
        return out

    def pods_of(self, jobset_key: str) -> list[Pod]:
        return self.pods_by_jobset.get(jobset_key, [])
