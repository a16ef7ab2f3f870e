"""kube-scheduler with JobSet exclusive placement (topology key: the node pool).

Sources: kubernetes-sigs/jobset v0.12.0 ``pkg/webhooks/pod_webhook.go`` (``setExclusiveAffinities``:
anti-affinity to pods of other Jobs of the same priority; ``setNodeSelector``: followers pinned to the
leader's topology; ``ValidateCreate``/``leaderPodScheduled``: followers only after the leader is
scheduled); kubernetes/kubernetes ``pkg/scheduler/framework/plugins/defaultpreemption/
default_preemption.go`` (``SelectVictimsOnNode``) and ``pkg/scheduler/framework/preemption/
preemption.go`` (``pickOneNodeForPreemption``, the nominated node). Terminating pods still count for
inter-pod anti-affinity and hold their node's chips until they are gone.

- A leader (pod index 0) may go to any free, usable node of a pool of its topology that holds no pod of
  another Job *of the same priority* (JobSet's priority-scoped anti-affinity). It does not check that
  the rest of the pool is healthy: on a broken multi-host pool it can land on a healthy-looking node
  and its followers then wait for a node that never comes (the multi-host hazard).
- Followers are pinned to their leader's pool.
- Preemption is per node (PostFilter): a pod that fits nowhere evicts the lower-priority pod of one
  node, chosen as kube-scheduler does (lowest highest-victim priority, then fewest and latest-started
  victims), and is nominated there. It tries the nominated node first on its next attempt, but binds
  anywhere that fits sooner. Nominations reserve a node against pods of lower or equal priority.
- Ties between equally good nodes are broken by the seeded generator, like kube-scheduler's random
  pick among top scores.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from tpu_platform.sim.cluster import Cluster
from tpu_platform.sim.engine import Handle
from tpu_platform.sim.model import CAUSE_SCHEDULER, SimNode, SimPod


@dataclass(slots=True)
class _View:
    """One pass's picture: free usable nodes per pool, Jobs present per pool and priority, reservations."""

    free: dict[str, list[str]] = field(default_factory=dict)
    jobs: dict[str, dict[int, set[tuple[str, str]]]] = field(default_factory=dict)
    reserved: dict[str, tuple[str, int]] = field(default_factory=dict)


class Scheduler:
    def __init__(
        self,
        cluster: Cluster,
        rng: random.Random,
        *,
        on_preempt: Callable[[SimPod, list[SimPod]], None] | None = None,
        on_hazard: Callable[[SimPod, str], None] | None = None,
    ) -> None:
        self.c = cluster
        self.rng = rng
        self.on_preempt = on_preempt
        self.on_hazard = on_hazard
        self._next: Handle | None = None
        cluster.kickers.append(self.kick)

    def kick(self) -> None:
        if self._next is not None and self._next.pending:
            return
        self._next = self.c.engine.after(self.c.t.schedule_s, "schedule", self.run_pass)

    def run_pass(self) -> None:
        self._next = None
        pending = [p for p in self.c.pods.values() if p.node is None and not p.terminating]
        if not pending:
            return
        pending.sort(key=lambda p: (-p.priority, p.created, p.key))
        view = self._view()
        for pod in pending:
            if self.c.pods.get(pod.key) is pod and pod.node is None and not pod.terminating:
                self._schedule(pod, view)

    # --- the pass's picture --------------------------------------------------------------------------
    def _view(self) -> _View:
        v = _View()
        c = self.c
        for name, pool in c.pools.items():
            v.free[name] = [n for n in pool.nodes if not c.nodes[n].holders and c.usable(c.nodes[n])]
            v.jobs[name] = {}
        for p in c.pods.values():
            if p.holding and p.pool is not None:
                v.jobs[p.pool].setdefault(p.priority, set()).add((p.workload, p.job))
            if p.node is None and p.nominated is not None and not p.terminating:
                v.reserved[p.nominated] = (p.key, p.priority)
        return v

    def _anti_affinity_ok(self, pod: SimPod, pool: str, v: _View) -> bool:
        same = v.jobs[pool].get(pod.priority, ())
        return all(job == (pod.workload, pod.job) for job in same)

    def _pools_for(self, pod: SimPod) -> list[str]:
        if pod.pool_selector is not None:
            return [pod.pool_selector] if pod.pool_selector in self.c.pools else []
        topology = self.c.workloads[pod.workload].spec.topology
        return [name for name, pool in self.c.pools.items() if pool.topology == topology]

    def _allowed(self, pod: SimPod, node: str, v: _View) -> bool:
        held = v.reserved.get(node)
        return held is None or held[0] == pod.key or held[1] < pod.priority

    # --- one pod -------------------------------------------------------------------------------------
    def _schedule(self, pod: SimPod, v: _View) -> None:
        c = self.c
        pools = [
            p
            for p in self._pools_for(pod)
            if pod.pool_selector is not None or self._anti_affinity_ok(pod, p, v)
        ]
        if pod.nominated is not None:
            pool = c.nodes[pod.nominated].pool if pod.nominated in c.nodes else None
            if pool in pools and pod.nominated in v.free.get(pool, ()):
                self._bind(pod, c.nodes[pod.nominated], v)
                return
        choices = [n for pool in pools for n in v.free[pool] if self._allowed(pod, n, v)]
        if choices:
            self._bind(pod, c.nodes[self.rng.choice(sorted(choices))], v)
            return
        if pod.nominated is not None:
            node = c.nodes.get(pod.nominated)
            if (
                node is not None
                and node.pool in pools
                and c.usable(node)
                and node.holders
                and all(c.pods[h].terminating for h in node.holders)
            ):
                c.set_unschedulable(pod)
                return
            c.set_nominated(pod, None)
        if not c.workloads[pod.workload].spec.can_preempt or not self._preempt(pod, pools, v):
            c.set_unschedulable(pod)

    def _bind(self, pod: SimPod, node: SimNode, v: _View) -> None:
        v.free[node.pool].remove(node.name)
        v.reserved.pop(node.name, None)
        v.jobs[node.pool].setdefault(pod.priority, set()).add((pod.workload, pod.job))
        if pod.leader and self.on_hazard is not None and self._broken(node.pool):
            self.on_hazard(pod, node.pool)
        self.c.bind(pod, node)

    def _broken(self, pool_name: str) -> bool:
        """A node of the pool is dead, NotReady or without its chips (a pool merely still registering is
        not broken)."""
        return any(
            not self.c.nodes[n].alive
            or not self.c.nodes[n].ready
            or not self.c.nodes[n].chips_ok
            or self.c.nodes[n].chip_broken
            for n in self.c.pools[pool_name].nodes
        )

    def _preempt(self, pod: SimPod, pools: list[str], v: _View) -> bool:
        c = self.c
        best: list[tuple[tuple[int, int, int, float], str, list[SimPod]]] = []
        for pool in pools:
            for name in c.pools[pool].nodes:
                node = c.nodes[name]
                if not node.holders or not c.usable(node) or not self._allowed(pod, name, v):
                    continue
                victims = [c.pods[h] for h in sorted(node.holders)]
                if any(x.priority >= pod.priority or x.terminating for x in victims):
                    continue
                latest = max((x.bound_at or 0.0) for x in victims)
                key = (
                    max(x.priority for x in victims),
                    sum(x.priority for x in victims),
                    len(victims),
                    -latest,
                )
                if not best or key < best[0][0]:
                    best = [(key, name, victims)]
                elif key == best[0][0]:
                    best.append((key, name, victims))
        if not best:
            return False
        _, name, victims = best[0] if len(best) == 1 else self.rng.choice(sorted(best, key=lambda b: b[1]))
        for x in victims:
            c.delete_pod(x, CAUSE_SCHEDULER, disruption="PreemptionByScheduler")
        c.set_nominated(pod, name)
        c.set_unschedulable(pod)
        v.reserved[name] = (pod.key, pod.priority)
        if self.on_preempt is not None:
            self.on_preempt(pod, victims)
        return True
