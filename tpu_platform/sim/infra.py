"""Hardware and the control plane's reaction to it: node failures, NotReady, taint-based eviction,
GKE auto-repair of the whole slice, and kubelets that come back by themselves.

None of this depends on the policy under test, so both policies see the same infrastructure timeline
for the same trace.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from tpu_platform.hotswap.core import Condition, Taint
from tpu_platform.hotswap.core import constants as k
from tpu_platform.sim.cluster import Cluster
from tpu_platform.sim.model import CAUSE_FAILURE, Pool, SimNode


@dataclass(frozen=True, slots=True)
class Failure:
    """One hardware event: the kubelet of ``node`` goes silent at ``at``."""

    at: float
    node: str
    """Node name; empty: decided when it fires (see ``Infra``'s ``target``)."""
    back_after: float | None = None
    """A reboot: the kubelet returns after this long. None: the node stays dead until auto-repair."""


def random_trace(
    pools: Sequence[Pool],
    *,
    seed: int,
    start: float,
    end: float,
    node_mtbf_s: float,
    transient_fraction: float = 0.0,
    reboot_s: tuple[float, float] = (60.0, 300.0),
) -> list[Failure]:
    """Failures as a Poisson process per node (rate 1/MTBF), in time order; same seed, same trace."""
    rng = random.Random(f"trace:{seed}")
    out: list[Failure] = []
    for pool in pools:
        for i in range(pool.size):
            t = start
            while True:
                t += rng.expovariate(1.0 / node_mtbf_s)
                if t >= end:
                    break
                back = rng.uniform(*reboot_s) if rng.random() < transient_fraction else None
                out.append(Failure(round(t, 3), f"{pool.name}-n{i}", back))
    out.sort(key=lambda f: (f.at, f.node))
    return out


@dataclass(slots=True)
class Observer:
    """What the infrastructure reports to metrics (all optional)."""

    failed: Callable[[float, SimNode], None] | None = None
    absorbed: Callable[[float, Failure], None] | None = None
    repair: Callable[[str, float, bool], None] | None = None
    """(pool, time, started): called when a repair starts and when its last node is back."""


class Infra:
    def __init__(
        self,
        cluster: Cluster,
        trace: Iterable[Failure],
        *,
        seed: int,
        node_died: Callable[[SimNode], None],
        observer: Observer | None = None,
        target: Callable[[], str | None] | None = None,
    ) -> None:
        self.c = cluster
        self.seed = seed
        self.node_died = node_died
        self.obs = observer or Observer()
        self.target = target
        """Picks the node of a failure that names none (e.g. "wherever the top-priority JobSet runs")."""
        for f in trace:
            if f.node and f.node not in cluster.nodes:
                raise ValueError(f"failure at {f.at}s names node {f.node!r}, which is not in the fleet")
            cluster.engine.at(f.at, "node-failure", self.fail, f)

    # --- a kubelet goes silent ----------------------------------------------------------------------
    def fail(self, f: Failure) -> None:
        name = f.node or (self.target() if self.target is not None else None) or ""
        node = self.c.nodes.get(name)
        if node is None or not node.alive:
            if self.obs.absorbed:
                self.obs.absorbed(self.c.now, f)
            return
        t = self.c.t
        node.lease_last = node.lease_renewed(self.c.now, t.lease_renew_s)
        node.alive = False
        node.incarnation += 1
        inc = node.incarnation
        if self.obs.failed:
            self.obs.failed(self.c.now, node)
        self.node_died(node)
        for listener in self.c.kubelet_listeners:
            listener()
        self.c.engine.after(t.node_monitor_grace_s, "node-not-ready", self._not_ready, node.name, inc)
        if f.back_after is not None:
            self.c.engine.after(f.back_after, "kubelet-back", self._back, node.name, inc)
        if t.peer_exit_s is not None:
            self.c.engine.after(t.peer_exit_s, "peers-exit", self._peers_exit, node.name, inc)

    def _current(self, name: str, inc: int) -> SimNode | None:
        node = self.c.nodes.get(name)
        return node if node is not None and node.incarnation == inc else None

    def _not_ready(self, name: str, inc: int) -> None:
        """The node lifecycle controller: Ready=Unknown and the unreachable taints."""
        node = self._current(name, inc)
        if node is None:
            return
        now = self.c.now
        api = node.api
        conditions = (*(c for c in api.conditions if c.type != "Ready"), Condition("Ready", "Unknown", now))
        taints = (
            *api.taints,
            Taint(k.UNREACHABLE_TAINT, "NoSchedule"),
            Taint(k.UNREACHABLE_TAINT, "NoExecute", time_added=now),
        )
        self.c.update_node(node, replace(api, conditions=conditions, taints=taints))
        t = self.c.t
        self.c.engine.after(t.toleration_s, "taint-eviction", self._taint_evict, name, inc)
        self.c.engine.after(t.auto_repair_after_s, "auto-repair", self._auto_repair, name, inc)

    def _taint_evict(self, name: str, inc: int) -> None:
        """tolerationSeconds are up: evict (the pods stay Terminating, the kubelet is dead)."""
        node = self._current(name, inc)
        if node is None:
            return
        for key in sorted(node.holders):
            self.c.delete_pod(self.c.pods[key], CAUSE_FAILURE, disruption="DeletionByTaintManager")

    def _peers_exit(self, name: str, inc: int) -> None:
        """The other hosts of the broken slice give up on their collectives and exit with an error."""
        node = self._current(name, inc)
        if node is None:
            return
        for key in sorted(node.holders):
            pod = self.c.pods[key]
            w = self.c.workloads.get(pod.workload)
            if w is None:
                continue
            for peer in sorted(w.current_pods(), key=lambda p: p.key):
                if peer.attempt == pod.attempt and peer.key != key and self.c.kubelet_alive(peer):
                    self.c.fail_pod(peer, CAUSE_FAILURE)

    def _back(self, name: str, inc: int) -> None:
        """A reboot: the kubelet returns; containers that were running are gone (restartPolicy Never)."""
        node = self._current(name, inc)
        if node is None:
            return
        node.alive = True
        node.incarnation += 1
        node.lease_from, node.lease_last = self.c.now, None
        for listener in self.c.kubelet_listeners:
            listener()
        if not node.ready:
            self.c.heal_node_api(node, self.c.now)
        for key in sorted(node.holders):
            pod = self.c.pods[key]
            if pod.terminating:
                self.c.finish_termination(pod)
            else:
                self.c.fail_pod(pod, CAUSE_FAILURE)

    # --- GKE auto-repair: the whole multi-host pool is recreated ------------------------------------
    def _auto_repair(self, name: str, inc: int) -> None:
        node = self._current(name, inc)
        if node is None:
            return
        pool = self.c.pools[node.pool]
        if pool.repairing:
            return
        pool.repairing = True
        pool.generation += 1
        if self.obs.repair:
            self.obs.repair(pool.name, self.c.now, True)
        for member in sorted(pool.nodes):
            self.c.delete_node(self.c.nodes[member])
        self.c.engine.after(self.c.t.repair_s, "repair-done", self._repaired, pool.name, pool.generation)

    def _repaired(self, pool_name: str, generation: int) -> None:
        pool = self.c.pools[pool_name]
        if pool.generation != generation:
            return
        rng = random.Random(f"register:{self.seed}:{pool_name}:{generation}")
        delays = sorted((rng.uniform(0.0, self.c.t.node_register_spread_s), i) for i in range(pool.size))
        for delay, i in delays:
            self.c.engine.after(delay, "node-registered", self._register, pool_name, generation, i)

    def _register(self, pool_name: str, generation: int, index: int) -> None:
        pool = self.c.pools[pool_name]
        if pool.generation != generation:
            return
        self.c.add_node(pool, index, ready_at=self.c.now)
        if len(pool.nodes) == pool.size:
            pool.repairing = False
            if self.obs.repair:
                self.obs.repair(pool.name, self.c.now, False)
