"""Kueue admission by quota and priority, built from the stack's teams, cohorts and priorities.

What is modelled: one ClusterQueue per team with a nominal quota, borrowing and lending limits per
slice shape (flavor); cohorts share lendable quota (a cohort tree is flattened to its root, so every
queue under one root shares one pool); admission of workloads within their nominal quota before those
that would borrow, then by priority, then submission order, with StrictFIFO heads blocking their
queue; preemption within the ClusterQueue (LowerPriority, LowerOrNewerEqualPriority), reclaiming lent
quota (reclaimWithinCohort) and preempting while borrowing (borrowWithinCohort with
maxPriorityThreshold). Not modelled: fair-sharing weights, admission checks, and waitForPodsReady
(a JobSet not running again within its recovery timeout, 15-30 min, would be evicted and requeued;
the benchmarks report how many recoveries take that long).

Kueue knows nothing of node health: a broken slice's quota stays admitted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tpu_platform.config import PlatformConfig
from tpu_platform.sim.cluster import Cluster
from tpu_platform.sim.engine import Handle
from tpu_platform.sim.model import Workload, WorkloadSpec


@dataclass(frozen=True, slots=True)
class FlavorQuota:
    """Slices of one topology."""

    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None

    @property
    def lendable(self) -> int:
        return self.nominal if self.lending_limit is None else min(self.lending_limit, self.nominal)


@dataclass(frozen=True, slots=True)
class ClusterQueue:
    name: str
    cohort: str | None
    """Root of the queue's cohort tree (None: no cohort)."""
    quotas: dict[str, FlavorQuota]
    strict_fifo: bool = False
    within: str = "Never"
    reclaim: str = "Never"
    borrow_policy: str = "Never"
    borrow_threshold: int | None = None


@dataclass(frozen=True, slots=True)
class QueueSetup:
    queues: dict[str, ClusterQueue]
    local_queues: dict[tuple[str, str], str] = field(default_factory=dict)
    """(namespace, LocalQueue) -> ClusterQueue."""


def setup_from_stack(cfg: PlatformConfig) -> QueueSetup:
    """ClusterQueues and LocalQueues of the stack (quota in whole slices per topology)."""
    parents = {c.name: c.parent_name for c in cfg.cohorts}
    priorities = {p.name: p.value for p in cfg.priorities}

    def root(name: str | None) -> str | None:
        seen: set[str] = set()
        while name is not None and parents.get(name) is not None and name not in seen:
            seen.add(name)
            name = parents[name]
        return name

    queues: dict[str, ClusterQueue] = {}
    local: dict[tuple[str, str], str] = {}
    for team in cfg.teams:
        quotas = {
            q.shape.topology: FlavorQuota(q.nominal, q.borrowing_limit, q.lending_limit)
            for q in team.resolved_quota()
        }
        pre = team.preemption
        borrow = pre.borrow_within_cohort
        threshold = borrow.max_priority_threshold if borrow is not None else None
        if isinstance(threshold, str):
            threshold = priorities.get(threshold)
        queues[team.cluster_queue] = ClusterQueue(
            name=team.cluster_queue,
            cohort=root(team.cohort_name),
            quotas=quotas,
            strict_fifo=team.queueing_strategy == "StrictFIFO",
            within=pre.within_cluster_queue,
            reclaim=pre.reclaim_within_cohort,
            borrow_policy=borrow.policy if borrow is not None else "Never",
            borrow_threshold=threshold,
        )
        for namespace, name in team.local_queue_list():
            local[(namespace, name)] = team.cluster_queue
    return QueueSetup(queues, local)


class Kueue:
    def __init__(
        self,
        cluster: Cluster,
        setup: QueueSetup,
        *,
        start: Callable[[Workload], None],
        evict: Callable[[Workload], None],
        on_preempt: Callable[[Workload, list[Workload]], None] | None = None,
    ) -> None:
        self.c = cluster
        self.setup = setup
        self.start = start
        self.evict = evict
        self.on_preempt = on_preempt
        self.usage: dict[str, dict[str, int]] = {name: {} for name in setup.queues}
        self._members: dict[str, list[str]] = {}
        for cq in setup.queues.values():
            if cq.cohort is not None:
                self._members.setdefault(cq.cohort, []).append(cq.name)
        self._next: Handle | None = None

    # --- submission ----------------------------------------------------------------------------------
    def submit(self, spec: WorkloadSpec, *, shape_nodes: int, shape_chips: int) -> Workload:
        cq = self.setup.local_queues.get((spec.namespace, spec.queue))
        if cq is None:
            raise ValueError(
                f"workload {spec.key}: no LocalQueue {spec.queue!r} in namespace {spec.namespace!r}"
            )
        if spec.key in self.c.workloads:
            raise ValueError(f"workload {spec.key} submitted twice")
        w = Workload(
            spec=spec,
            uid=self.c.uid("jobset"),
            chips_per_slice=shape_chips,
            nodes_per_slice=shape_nodes,
            cluster_queue=cq,
            created=self.c.now,
        )
        self.c.workloads[w.key] = w
        self.kick()
        return w

    def kick(self) -> None:
        if self._next is not None and self._next.pending:
            return
        self._next = self.c.engine.after(0.0, "kueue-admit", self.admit_pass)

    def release(self, w: Workload) -> None:
        """The workload stopped holding quota (finished, failed, or evicted)."""
        used = self.usage[w.cluster_queue]
        used[w.spec.topology] = used.get(w.spec.topology, 0) - w.spec.slices
        self.kick()

    # --- admission -----------------------------------------------------------------------------------
    def admit_pass(self) -> None:
        """Admit what fits. Each ClusterQueue offers its head (priority, then age); among the heads, those
        within nominal quota go before those that would borrow, then priority, then age. A StrictFIFO
        head that does not fit blocks its queue; a BestEffortFIFO queue offers its next workload."""
        self._next = None
        waiting: dict[str, list[Workload]] = {}
        for w in self.c.workloads.values():
            if w.state == "queued":
                waiting.setdefault(w.cluster_queue, []).append(w)
        for items in waiting.values():
            items.sort(key=lambda w: (-w.priority, w.created, w.key), reverse=True)
        while waiting:
            heads = [items[-1] for items in waiting.values()]
            w = min(heads, key=lambda w: (self._borrows(w), -w.priority, w.created, w.key))
            cq = self.setup.queues[w.cluster_queue]
            items = waiting[cq.name]
            items.pop()
            admitted = self.fits(cq, w.spec.topology, w.spec.slices) or self._preempt_for(w, cq)
            if admitted:
                self._admit(w)
            if not items or (not admitted and cq.strict_fifo):
                del waiting[cq.name]

    def _borrows(self, w: Workload) -> bool:
        """Kueue considers workloads that fit their nominal quota before those that would borrow."""
        q = self.setup.queues[w.cluster_queue].quotas.get(w.spec.topology)
        used = self.usage[w.cluster_queue].get(w.spec.topology, 0)
        return q is None or used + w.spec.slices > q.nominal

    def _admit(self, w: Workload) -> None:
        used = self.usage[w.cluster_queue]
        used[w.spec.topology] = used.get(w.spec.topology, 0) + w.spec.slices
        w.state = "admitted"
        w.admitted_at = self.c.now
        self.start(w)

    def fits(
        self, cq: ClusterQueue, topology: str, slices: int, usage: dict[str, dict[str, int]] | None = None
    ) -> bool:
        """Kueue's quota check for ``slices`` more of ``topology`` in ``cq`` (flat cohort)."""
        usage = usage if usage is not None else self.usage
        q = cq.quotas.get(topology)
        if q is None:
            return False
        used = usage[cq.name].get(topology, 0) + slices
        if q.borrowing_limit is not None and used > q.nominal + q.borrowing_limit:
            return False
        if cq.cohort is None:
            return used <= q.nominal
        demand = 0
        capacity = 0
        for name in self._members[cq.cohort]:
            other = self.setup.queues[name].quotas.get(topology, FlavorQuota(0))
            mine = usage[name].get(topology, 0) + (slices if name == cq.name else 0)
            local = other.nominal - other.lendable
            demand += max(0, mine - local)
            capacity += other.lendable
        return demand <= capacity

    def _preempt_for(self, w: Workload, cq: ClusterQueue) -> bool:
        topology = w.spec.topology
        nominal = cq.quotas[topology].nominal if topology in cq.quotas else 0
        within_nominal = self.usage[cq.name].get(topology, 0) + w.spec.slices <= nominal
        candidates: list[tuple[tuple[int, int, float], Workload]] = []
        for v in self.c.workloads.values():
            if v.state != "admitted" or v.spec.topology != topology or v is w:
                continue
            if v.cluster_queue == cq.name:
                ok = (
                    cq.within in ("LowerPriority", "LowerOrNewerEqualPriority") and v.priority < w.priority
                ) or (
                    cq.within == "LowerOrNewerEqualPriority"
                    and v.priority == w.priority
                    and v.created > w.created
                )
                order = 1
            elif cq.cohort is not None and self.setup.queues[v.cluster_queue].cohort == cq.cohort:
                vq = self.setup.queues[v.cluster_queue]
                v_nominal = vq.quotas[topology].nominal if topology in vq.quotas else 0
                borrowing = self.usage[vq.name].get(topology, 0) > v_nominal
                if within_nominal:
                    ok = borrowing and (
                        cq.reclaim == "Any" or (cq.reclaim == "LowerPriority" and v.priority < w.priority)
                    )
                else:
                    ok = (
                        borrowing
                        and cq.borrow_policy == "LowerPriority"
                        and v.priority < w.priority
                        and (cq.borrow_threshold is None or v.priority <= cq.borrow_threshold)
                    )
                order = 0
            else:
                ok = False
                order = 2
            if ok:
                candidates.append(((order, v.priority, -(v.admitted_at or 0.0)), v))
        candidates.sort(key=lambda item: (item[0], item[1].key))
        usage = {name: dict(u) for name, u in self.usage.items()}
        chosen: list[Workload] = []
        for _, v in candidates:
            if self.fits(cq, topology, w.spec.slices, usage):
                break
            usage[v.cluster_queue][topology] -= v.spec.slices
            chosen.append(v)
        if not self.fits(cq, topology, w.spec.slices, usage):
            return False
        for v in reversed(list(chosen)):
            usage[v.cluster_queue][topology] += v.spec.slices
            if self.fits(cq, topology, w.spec.slices, usage):
                chosen.remove(v)
            else:
                usage[v.cluster_queue][topology] -= v.spec.slices
        if not chosen:
            return False
        for v in chosen:
            self.evict(v)
            self.release(v)
        if self.on_preempt is not None:
            self.on_preempt(w, chosen)
        return True
