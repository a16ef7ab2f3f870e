"""Kueue admission by quota and priority, on the stack's one quota layout (``tpu_platform.quota``).

What is modelled, each from Kueue v0.19.2's source:
- the ClusterQueues and the *tree* of cohorts of ``quota_layout(cfg)``, with nominal quota, borrowing and
  lending limits per flavor. What a ClusterQueue can still admit is the plan's ``TreeUsage.available``
  and admitted workloads are charged and released on the same ``TreeUsage``, as Kueue's scheduler cache
  does (``pkg/cache/scheduler/resource_node.go``): usage fills a node's local quota, the rest counts
  against its parent, and every borrowing limit on the way up caps what the node may take;
- admission of workloads within their nominal quota before those that would borrow, then by priority,
  then submission order, with StrictFIFO heads blocking their queue;
- preemption within the ClusterQueue (LowerPriority, LowerOrNewerEqualPriority), reclaiming lent quota
  anywhere in the same cohort tree (reclaimWithinCohort) and preempting while borrowing
  (borrowWithinCohort with maxPriorityThreshold) (``pkg/scheduler/preemption/``);
- waitForPodsReady (``pkg/controller/core/workload_controller.go``, ``admittedNotReadyWorkload``): an
  admitted workload whose pods are not all ready within ``timeout`` of admission, or not ready again
  within ``recoveryTimeout`` of losing readiness, is evicted and requeued after ``backoffBaseSeconds *
  2^(n-1)`` (``pkg/workload/workload.go``, ``UpdateRequeueState``), and deactivated after
  ``backoffLimitCount`` requeues;
- with ``tas`` (TopologyAwareScheduling, the ``kueue_tas`` setup), admission also needs a topology
  assignment: one whole, healthy slice per Job. Kueue's TAS snapshot counts capacity only on Ready,
  schedulable nodes (``pkg/cache/scheduler/tas_nodes_cache.go``, ``schedulableAndReady``), so it never
  places a Job on a slice with a dead host; if quota fits but no slice does, it preempts like for quota.
  The pods are created with the assignment as their node selector (``pkg/controller/tas/
  topology_ungater.go``).

Workloads name their slice shape by topology, as the simulated pools do. Not modelled: fair-sharing
weights and admission checks. Without TAS, Kueue knows nothing of node health: a broken slice's quota
stays admitted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from tpu_platform.config import PlatformConfig
from tpu_platform.hotswap.formats.duration import DurationError, duration_seconds
from tpu_platform.quota import FlavorQuota, QuotaLayout, QuotaNode, Shape, TreeUsage, quota_layout
from tpu_platform.sim.cluster import Cluster
from tpu_platform.sim.engine import Handle
from tpu_platform.sim.model import Workload, WorkloadSpec


@dataclass(frozen=True, slots=True)
class WaitForPodsReady:
    timeout_s: float
    recovery_timeout_s: float | None
    backoff_base_s: float = 60.0
    backoff_max_s: float = 3600.0
    backoff_limit: int | None = None


@dataclass(frozen=True)
class ClusterQueue:
    """A ClusterQueue of the plan with the queueing and preemption settings admission needs.

    Quota, cohort and limits are the plan node's own; nothing here copies them.
    """

    node: QuotaNode
    strict_fifo: bool = False
    within: str = "Never"
    reclaim: str = "Never"
    borrow_policy: str = "Never"
    borrow_threshold: int | None = None

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def cohort(self) -> str | None:
        """The queue's own cohort (None: no cohort); its tree is the plan's."""
        return self.node.parent

    @cached_property
    def quotas(self) -> dict[str, FlavorQuota]:
        """The plan's quota per flavor by topology, the key simulated workloads and pools use (of the
        two 2x4 forms, the multi-host one, the later in catalog order)."""
        return {q.shape.topology: q for q in self.node.ordered()}

    def shape(self, topology: str) -> Shape | None:
        """The flavor a workload of ``topology`` is charged to here (None: the queue has no quota for it)."""
        quota = self.quotas.get(topology)
        return quota.shape if quota is not None else None


@dataclass(frozen=True)
class QueueSetup:
    plan: QuotaLayout
    queues: dict[str, ClusterQueue]
    """By ClusterQueue name, in stack order."""
    local_queues: dict[tuple[str, str], str] = field(default_factory=dict)
    """(namespace, LocalQueue) -> ClusterQueue."""
    wait_for_pods_ready: WaitForPodsReady | None = None

    def root(self, cohort: str | None) -> str | None:
        """The root of ``cohort``'s tree in the plan (a cohort named only by a queue is a root of its own)."""
        if cohort is None:
            return None
        node = self.plan.tree.cohorts.get(cohort)
        return cohort if node is None else self.plan.tree.root(node).name


def _duration_s(text: str | None) -> float | None:
    """Go durations as the stack writes them (``30m``, ``15m``, ``90s``, ``1h30m``), in seconds."""
    if text is None:
        return None
    try:
        return duration_seconds(text.strip())
    except DurationError as err:
        if err.problem == "missing unit":
            raise ValueError(f"kueue.waitForPodsReady: duration {text!r} needs a unit (s, m, h)") from err
        raise ValueError(f"kueue.waitForPodsReady: cannot read duration {text!r}") from err


def _wait_for_pods_ready(cfg: PlatformConfig) -> WaitForPodsReady | None:
    w = cfg.kueue.wait_for_pods_ready
    if not w.enabled:
        return None
    timeout = _duration_s(w.timeout) or 0.0
    recovery = _duration_s(w.recovery_timeout) if w.recovery_timeout is not None else timeout
    r = w.requeuing_strategy
    return WaitForPodsReady(
        timeout_s=timeout,
        recovery_timeout_s=recovery if recovery else None,
        backoff_base_s=float(r.backoff_base_seconds) if r else 60.0,
        backoff_max_s=float(r.backoff_max_seconds) if r else 3600.0,
        backoff_limit=r.backoff_limit_count if r else None,
    )


def setup_from_stack(cfg: PlatformConfig) -> QueueSetup:
    """The stack's quota layout, with each ClusterQueue's queueing strategy and preemption policy."""
    plan = quota_layout(cfg)
    priorities = {p.name: p.value for p in cfg.priorities}
    queues: dict[str, ClusterQueue] = {}
    local: dict[tuple[str, str], str] = {}
    for team in cfg.teams:
        node = plan.queue_of(team.name)
        pre = team.preemption
        borrow = pre.borrow_within_cohort
        threshold = borrow.max_priority_threshold if borrow is not None else None
        if isinstance(threshold, str):
            threshold = priorities.get(threshold)
        queues[node.name] = ClusterQueue(
            node=node,
            strict_fifo=team.queueing_strategy == "StrictFIFO",
            within=pre.within_cluster_queue,
            reclaim=pre.reclaim_within_cohort,
            borrow_policy=borrow.policy if borrow is not None else "Never",
            borrow_threshold=threshold,
        )
        for namespace, name in node.local_queues:
            local[(namespace, name)] = node.name
    return QueueSetup(plan, queues, local, _wait_for_pods_ready(cfg))


class Kueue:
    def __init__(
        self,
        cluster: Cluster,
        setup: QueueSetup,
        *,
        start: Callable[[Workload], None],
        evict: Callable[[Workload], None],
        on_preempt: Callable[[Workload, list[Workload]], None] | None = None,
        tas: bool = False,
    ) -> None:
        self.c = cluster
        self.setup = setup
        self.start = start
        self.evict = evict
        self.on_preempt = on_preempt
        self.tas = tas
        self.books = TreeUsage(setup.plan.tree)
        """Slices in use on the plan's cohort tree, charged on admission and released as Kueue does."""
        self._next: Handle | None = None
        self.assigned: dict[str, tuple[str, ...]] = {}
        """TAS: workload -> the slice (pool) of each of its Jobs."""
        self._generation: dict[str, int] = {}
        """Bumped on every admission and eviction, so waitForPodsReady timers of an older one do nothing."""
        self._ready: dict[str, bool] = {}
        self.requeue_at: dict[str, float] = {}
        self.requeues: dict[str, int] = {}
        self.evictions: dict[str, int] = {}
        """Kueue evictions by reason (PodsReadyTimeout, NodeFailures)."""

    @property
    def usage(self) -> dict[str, dict[str, int]]:
        """Slices each ClusterQueue holds, by topology (read from the books)."""
        return {
            name: {topology: self.books.of(cq.node, q.shape) for topology, q in cq.quotas.items()}
            for name, cq in self.setup.queues.items()
        }

    def _used(self, cq: ClusterQueue, topology: str) -> int:
        shape = cq.shape(topology)
        return 0 if shape is None else self.books.of(cq.node, shape)

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
        """The workload stopped holding quota (finished, failed, or evicted); its TAS assignment goes too."""
        cq = self.setup.queues[w.cluster_queue]
        shape = cq.shape(w.spec.topology)
        if shape is None:
            raise AssertionError(f"{w.key}: released from {cq.name}, which has no {w.spec.topology} quota")
        self.books.release(cq.node, shape, w.spec.slices)
        self.assigned.pop(w.key, None)
        w.assigned = None
        self._generation[w.key] = self._generation.get(w.key, 0) + 1
        self._ready.pop(w.key, None)
        self.kick()

    def evict_and_requeue(self, w: Workload, reason: str, *, backoff: bool) -> None:
        """Kueue evicts an admitted workload (its JobSet is suspended) and queues it again, after the
        requeuing backoff for a PodsReady timeout, at once for node failures."""
        if w.state != "admitted":
            return
        self.evictions[reason] = self.evictions.get(reason, 0) + 1
        self.evict(w)
        self.release(w)
        if backoff and self.setup.wait_for_pods_ready is not None:
            wfpr = self.setup.wait_for_pods_ready
            n = self.requeues.get(w.key, 0) + 1
            self.requeues[w.key] = n
            if wfpr.backoff_limit is not None and n > wfpr.backoff_limit:
                self.requeue_at[w.key] = float("inf")
                return
            delay = min(wfpr.backoff_base_s * 2 ** (n - 1), wfpr.backoff_max_s)
            self.requeue_at[w.key] = self.c.now + delay
            self.c.engine.after(delay, "kueue-requeue", self.kick)

    # --- waitForPodsReady ----------------------------------------------------------------------------
    def ready_changed(self, w: Workload, ready: bool) -> None:
        """The JobSet's pods became all ready, or one stopped being ready (PodsReady condition)."""
        wfpr = self.setup.wait_for_pods_ready
        if wfpr is None or w.state != "admitted":
            return
        was = self._ready.get(w.key, False)
        self._ready[w.key] = ready
        if ready or not was or wfpr.recovery_timeout_s is None:
            return
        gen = self._generation[w.key] = self._generation.get(w.key, 0) + 1
        self.c.engine.after(wfpr.recovery_timeout_s, "pods-ready-recovery", self._timeout, w.key, gen)

    def _timeout(self, key: str, generation: int) -> None:
        """``timeout`` from admission until PodsReady first holds (WaitForStart), ``recoveryTimeout`` from
        losing it (WaitForRecovery); a new admission or loss of readiness starts a new clock."""
        w = self.c.workloads.get(key)
        if w is None or w.state != "admitted" or self._generation.get(key, 0) != generation:
            return
        if not self._ready.get(key, False):
            self.evict_and_requeue(w, "PodsReadyTimeout", backoff=True)

    # --- TopologyAwareScheduling ---------------------------------------------------------------------
    def _healthy(self, pool: str) -> bool:
        """Every node of the slice exists and is Ready, schedulable, untainted (TAS counts no other)."""
        p = self.c.pools[pool]
        if len(p.nodes) != p.size:
            return False
        return all(self.c.usable(self.c.nodes[n]) for n in p.nodes)

    def _place(self, w: Workload, freed: frozenset[str] = frozenset()) -> tuple[str, ...] | None:
        taken = {pool for key, pools in self.assigned.items() for pool in pools} - freed
        free = sorted(
            name
            for name, pool in self.c.pools.items()
            if pool.topology == w.spec.topology and name not in taken and self._healthy(name)
        )
        return tuple(free[: w.spec.slices]) if len(free) >= w.spec.slices else None

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
            if self.requeue_at.get(w.key, 0.0) > self.c.now:
                admitted = False
            else:
                admitted = (
                    self.fits(cq, w.spec.topology, w.spec.slices)
                    and (not self.tas or self._place(w) is not None)
                ) or self._preempt_for(w, cq)
            if admitted:
                self._admit(w)
            if not items or (not admitted and cq.strict_fifo):
                del waiting[cq.name]

    def _borrows(self, w: Workload) -> bool:
        """Kueue considers workloads that fit their nominal quota before those that would borrow."""
        cq = self.setup.queues[w.cluster_queue]
        q = cq.quotas.get(w.spec.topology)
        return q is None or self.books.of(cq.node, q.shape) + w.spec.slices > q.nominal

    def _admit(self, w: Workload) -> None:
        if self.tas:
            pools = self._place(w)
            if pools is None:
                raise AssertionError(f"{w.key}: admitted without a topology assignment")
            self.assigned[w.key] = pools
            w.assigned = pools
        cq = self.setup.queues[w.cluster_queue]
        shape = cq.shape(w.spec.topology)
        if shape is None:
            raise AssertionError(f"{w.key}: admitted to {cq.name}, which has no {w.spec.topology} quota")
        self.books.charge(cq.node, shape, w.spec.slices)
        w.state = "admitted"
        w.admitted_at = self.c.now
        gen = self._generation[w.key] = self._generation.get(w.key, 0) + 1
        self._ready[w.key] = False
        wfpr = self.setup.wait_for_pods_ready
        if wfpr is not None and wfpr.timeout_s > 0:
            self.c.engine.after(wfpr.timeout_s, "pods-ready-timeout", self._timeout, w.key, gen)
        self.start(w)

    def fits(self, cq: ClusterQueue, topology: str, slices: int, books: TreeUsage | None = None) -> bool:
        """Kueue's quota check for ``slices`` more of ``topology`` in ``cq`` (hierarchical cohorts), on
        these books or on a what-if copy of them."""
        shape = cq.shape(topology)
        if shape is None:
            return False
        return (books or self.books).available(cq.node, shape) >= slices

    def _preempt_for(self, w: Workload, cq: ClusterQueue) -> bool:
        topology = w.spec.topology
        nominal = cq.quotas[topology].nominal if topology in cq.quotas else 0
        within_nominal = self._used(cq, topology) + w.spec.slices <= nominal
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
            elif cq.cohort is not None and self.setup.root(
                self.setup.queues[v.cluster_queue].cohort
            ) == self.setup.root(cq.cohort):
                vq = self.setup.queues[v.cluster_queue]
                v_nominal = vq.quotas[topology].nominal if topology in vq.quotas else 0
                borrowing = self._used(vq, topology) > v_nominal
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
        trial = self.books.copy()

        def held(v: Workload) -> tuple[QuotaNode, Shape]:
            vq = self.setup.queues[v.cluster_queue]
            shape = vq.shape(topology)
            if shape is None:
                raise AssertionError(f"{v.key}: admitted to {vq.name}, which has no {topology} quota")
            return vq.node, shape

        def enough(victims: list[Workload]) -> bool:
            if not self.fits(cq, topology, w.spec.slices, trial):
                return False
            if not self.tas:
                return True
            freed = frozenset(p for v in victims for p in self.assigned.get(v.key, ()))
            return self._place(w, freed) is not None

        chosen: list[Workload] = []
        for _, v in candidates:
            if enough(chosen):
                break
            trial.release(*held(v), v.spec.slices)
            chosen.append(v)
        if not enough(chosen):
            return False
        for v in reversed(list(chosen)):
            trial.charge(*held(v), v.spec.slices)
            rest = [x for x in chosen if x is not v]
            if enough(rest):
                chosen.remove(v)
            else:
                trial.release(*held(v), v.spec.slices)
        if not chosen:
            return False
        for v in chosen:
            self.evict(v)
            self.release(v)
        if self.on_preempt is not None:
            self.on_preempt(w, chosen)
        return True
