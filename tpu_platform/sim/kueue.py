"""Kueue admission by quota and priority, built from the stack's teams, cohorts and priorities.

What is modelled, each from Kueue v0.19.2's source:
- one ClusterQueue per team with a nominal quota, borrowing and lending limits per slice shape
  (flavor), under a *tree* of cohorts that may carry quota of their own. Quota is computed as Kueue's
  scheduler cache does (``pkg/cache/scheduler/resource_node.go``): a node's ``SubtreeQuota`` is its own
  nominal plus what its children lend (their subtree quota above their lending limit), its usage is what
  its children use beyond the part they keep to themselves (``localQuota``), and what a ClusterQueue can
  still admit is ``available``: its local headroom plus what its parent has, capped at every level by
  the borrowing limit;
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

Not modelled: fair-sharing weights and admission checks. Without TAS, Kueue knows nothing of node
health: a broken slice's quota stays admitted.
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
class Cohort:
    """A node of the cohort tree: optional quota of its own per topology, and its parent."""

    name: str
    parent: str | None = None
    quotas: dict[str, FlavorQuota] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class WaitForPodsReady:
    timeout_s: float
    recovery_timeout_s: float | None
    backoff_base_s: float = 60.0
    backoff_max_s: float = 3600.0
    backoff_limit: int | None = None


@dataclass(frozen=True, slots=True)
class ClusterQueue:
    name: str
    cohort: str | None
    """The queue's own cohort (None: no cohort); its tree is ``QueueSetup.cohorts``."""
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
    cohorts: dict[str, Cohort] = field(default_factory=dict)
    wait_for_pods_ready: WaitForPodsReady | None = None

    def root(self, cohort: str | None) -> str | None:
        """The root of ``cohort``'s tree (a cohort named only by a queue is a root of its own)."""
        seen: set[str] = set()
        while cohort is not None and cohort not in seen:
            seen.add(cohort)
            node = self.cohorts.get(cohort)
            if node is None or node.parent is None:
                return cohort
            cohort = node.parent
        return cohort


def _duration_s(text: str | None) -> float | None:
    """Go durations as the stack writes them (``30m``, ``15m``, ``90s``, ``1h30m``)."""
    if text is None:
        return None
    total, number = 0.0, ""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0}
    for ch in text.strip():
        if ch.isdigit() or ch == ".":
            number += ch
        elif ch in units and number:
            total += float(number) * units[ch]
            number = ""
        else:
            raise ValueError(f"kueue.waitForPodsReady: cannot read duration {text!r}")
    if number:
        raise ValueError(f"kueue.waitForPodsReady: duration {text!r} needs a unit (s, m, h)")
    return total


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
    """ClusterQueues, LocalQueues and the cohort tree of the stack (quota in whole slices per topology)."""
    priorities = {p.name: p.value for p in cfg.priorities}
    cohorts = {
        c.name: Cohort(
            c.name,
            c.parent_name,
            {
                q.shape.topology: FlavorQuota(q.nominal, q.borrowing_limit, q.lending_limit)
                for q in (quota.resolve() for quota in c.quota)
            },
        )
        for c in cfg.cohorts
    }
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
        if team.cohort_name is not None and team.cohort_name not in cohorts:
            cohorts[team.cohort_name] = Cohort(team.cohort_name)
        queues[team.cluster_queue] = ClusterQueue(
            name=team.cluster_queue,
            cohort=team.cohort_name,
            quotas=quotas,
            strict_fifo=team.queueing_strategy == "StrictFIFO",
            within=pre.within_cluster_queue,
            reclaim=pre.reclaim_within_cohort,
            borrow_policy=borrow.policy if borrow is not None else "Never",
            borrow_threshold=threshold,
        )
        for namespace, name in team.local_queue_list():
            local[(namespace, name)] = team.cluster_queue
    for c in list(cohorts.values()):
        if c.parent is not None and c.parent not in cohorts:
            cohorts[c.parent] = Cohort(c.parent)
    return QueueSetup(queues, local, cohorts, _wait_for_pods_ready(cfg))


class QuotaTree:
    """Kueue's hierarchical quota arithmetic for one topology (``pkg/cache/scheduler/resource_node.go``)."""

    def __init__(self, setup: QueueSetup, topology: str) -> None:
        self.setup = setup
        self.topology = topology
        self.children: dict[str, list[str]] = {}
        """Cohort -> child cohorts and queues (queue names prefixed ``cq:``)."""
        for c in setup.cohorts.values():
            if c.parent is not None:
                self.children.setdefault(c.parent, []).append(c.name)
        for q in setup.queues.values():
            if q.cohort is not None:
                self.children.setdefault(q.cohort, []).append("cq:" + q.name)
        self._subtree: dict[str, int] = {}
        for root in {setup.root(c) for c in setup.cohorts} - {None}:
            self._fill(root)  # type: ignore[arg-type]

    def _quota(self, node: str) -> FlavorQuota:
        if node.startswith("cq:"):
            return self.setup.queues[node[3:]].quotas.get(self.topology, FlavorQuota(0))
        cohort = self.setup.cohorts.get(node)
        return cohort.quotas.get(self.topology, FlavorQuota(0)) if cohort is not None else FlavorQuota(0)

    def _fill(self, node: str) -> int:
        total = self._quota(node).nominal
        for child in self.children.get(node, ()):
            total += self._fill(child) - self._local(child)
        self._subtree[node] = total
        return total

    def subtree(self, node: str) -> int:
        if node not in self._subtree:
            self._subtree[node] = self._quota(node).nominal
        return self._subtree[node]

    def _local(self, node: str) -> int:
        """``localQuota``: capacity kept for the subtree, never lent to the parent."""
        limit = self._quota(node).lending_limit
        if limit is None:
            return 0
        return max(0, self.subtree(node) - limit)

    def usage(self, node: str, used: dict[str, dict[str, int]]) -> int:
        if node.startswith("cq:"):
            return used.get(node[3:], {}).get(self.topology, 0)
        return sum(
            max(0, self.usage(child, used) - self._local(child)) for child in self.children.get(node, ())
        )

    def _parent(self, node: str) -> str | None:
        if node.startswith("cq:"):
            return self.setup.queues[node[3:]].cohort
        cohort = self.setup.cohorts.get(node)
        return cohort.parent if cohort is not None else None

    def available(self, node: str, used: dict[str, dict[str, int]]) -> int:
        parent = self._parent(node)
        usage = self.usage(node, used)
        if parent is None:
            return self.subtree(node) - usage
        from_parent = self.available(parent, used)
        limit = self._quota(node).borrowing_limit
        lq = self._local(node)
        if limit is not None:
            stored = self.subtree(node) - lq
            used_in_parent = max(0, usage - lq)
            from_parent = min(stored - used_in_parent + limit, from_parent)
        return max(0, lq - usage) + from_parent


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
        self.usage: dict[str, dict[str, int]] = {name: {} for name in setup.queues}
        self._trees: dict[str, QuotaTree] = {}
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
        used = self.usage[w.cluster_queue]
        used[w.spec.topology] = used.get(w.spec.topology, 0) - w.spec.slices
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
        q = self.setup.queues[w.cluster_queue].quotas.get(w.spec.topology)
        used = self.usage[w.cluster_queue].get(w.spec.topology, 0)
        return q is None or used + w.spec.slices > q.nominal

    def _admit(self, w: Workload) -> None:
        if self.tas:
            pools = self._place(w)
            if pools is None:
                raise AssertionError(f"{w.key}: admitted without a topology assignment")
            self.assigned[w.key] = pools
            w.assigned = pools
        used = self.usage[w.cluster_queue]
        used[w.spec.topology] = used.get(w.spec.topology, 0) + w.spec.slices
        w.state = "admitted"
        w.admitted_at = self.c.now
        gen = self._generation[w.key] = self._generation.get(w.key, 0) + 1
        self._ready[w.key] = False
        wfpr = self.setup.wait_for_pods_ready
        if wfpr is not None and wfpr.timeout_s > 0:
            self.c.engine.after(wfpr.timeout_s, "pods-ready-timeout", self._timeout, w.key, gen)
        self.start(w)

    def tree(self, topology: str) -> QuotaTree:
        if topology not in self._trees:
            self._trees[topology] = QuotaTree(self.setup, topology)
        return self._trees[topology]

    def fits(
        self, cq: ClusterQueue, topology: str, slices: int, usage: dict[str, dict[str, int]] | None = None
    ) -> bool:
        """Kueue's quota check for ``slices`` more of ``topology`` in ``cq`` (hierarchical cohorts)."""
        usage = usage if usage is not None else self.usage
        if topology not in cq.quotas:
            return False
        return self.tree(topology).available("cq:" + cq.name, usage) >= slices

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
            elif cq.cohort is not None and self.setup.root(
                self.setup.queues[v.cluster_queue].cohort
            ) == self.setup.root(cq.cohort):
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

        def enough(victims: list[Workload]) -> bool:
            if not self.fits(cq, topology, w.spec.slices, usage):
                return False
            if not self.tas:
                return True
            freed = frozenset(p for v in victims for p in self.assigned.get(v.key, ()))
            return self._place(w, freed) is not None

        chosen: list[Workload] = []
        for _, v in candidates:
            if enough(chosen):
                break
            usage[v.cluster_queue][topology] -= v.spec.slices
            chosen.append(v)
        if not enough(chosen):
            return False
        for v in reversed(list(chosen)):
            usage[v.cluster_queue][topology] += v.spec.slices
            rest = [x for x in chosen if x is not v]
            if enough(rest):
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
