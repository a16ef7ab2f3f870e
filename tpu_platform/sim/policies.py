"""The three policies compared on the same trace.

``Baseline`` (``recipe``) is the guide's scheduler-only recipe: Kueue, JobSet and kube-scheduler as
modelled, nothing else. ``KueueTas`` (``kueue_tas``) is the strongest setup of Kueue 0.19.2 and JobSet
0.12.0 without our controller (``tpu_platform.sim.kueue_tas``). ``Hotswap`` adds our controller: its
real decision core (``tpu_platform.hotswap.core.decide``) reconciles on watch events (after the
adapter's debounce) and at least every reconcile interval, on a snapshot of the simulated cluster, and
its actions are applied to it.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from tpu_platform.hotswap.core import Decision, PoolMemory, Preemption, ResetVm, Settings, Snapshot, decide
from tpu_platform.hotswap.core.maintenance import moving_pools, next_wake
from tpu_platform.sim.cluster import Cluster
from tpu_platform.sim.compute import ComputeApi
from tpu_platform.sim.engine import Handle
from tpu_platform.sim.kueue import Kueue
from tpu_platform.sim.params import Timings
from tpu_platform.sim.snapshot import CheckpointClock, SnapshotBuilder, apply, quiescent


class Policy(Protocol):
    name: str
    tas: bool
    """Kueue admits with TopologyAwareScheduling (a slice per Job, healthy slices only)."""

    def toleration_s(self, t: Timings) -> float:
        """The pods' tolerationSeconds for the not-ready/unreachable NoExecute taints."""
        ...

    def attach(self, cluster: Cluster, last_checkpoint: CheckpointClock, kueue: Kueue) -> None: ...


class Baseline:
    """The scheduler-only recipe: no controller, default tolerations, no TAS."""

    name = "recipe"
    tas = False

    def toleration_s(self, t: Timings) -> float:
        return t.toleration_s

    def attach(self, cluster: Cluster, last_checkpoint: CheckpointClock, kueue: Kueue) -> None:
        return None


@dataclass(slots=True)
class ControllerStats:
    reconciles: int = 0
    skipped_idle: int = 0
    decide_seconds: float = 0.0
    max_decide_seconds: float = 0.0
    actions: Counter[str] = field(default_factory=Counter)
    preemptions: list[Preemption] = field(default_factory=list)
    held: int = 0
    tainted: list[tuple[str, float, float | None]] = field(default_factory=list)
    """(pool, from, to) while the controller held the pool declared unhealthy (tainted)."""
    _open: dict[str, int] = field(default_factory=dict)

    def track(self, now: float, declared: dict[str, bool]) -> None:
        for pool, bad in declared.items():
            if bad and pool not in self._open:
                self._open[pool] = len(self.tainted)
                self.tainted.append((pool, now, None))
            elif not bad and pool in self._open:
                i = self._open.pop(pool)
                self.tainted[i] = (pool, self.tainted[i][1], now)


class Hotswap:
    """The controller's decision core driving the simulated cluster."""

    name = "hotswap"
    tas = False

    def toleration_s(self, t: Timings) -> float:
        return t.toleration_s

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        verify_idle: bool = False,
        on_decision: Callable[[Snapshot, Decision], None] | None = None,
    ) -> None:
        self.settings = settings if settings is not None else Settings()
        self.verify_idle = verify_idle
        self.on_decision = on_decision
        """Sees every snapshot and the decision on it (``tpu_platform.sim.episode_log`` logs episodes)."""
        self.stats = ControllerStats()
        self.leases = self.settings.lease_stale_seconds > 0
        """The Lease signal is on: snapshots carry renew times and a silent kubelet keeps it busy."""
        self._next: Handle | None = None
        self.memory: PoolMemory | None = None
        """Carried from one decision to the next, as the adapter does while it leads."""

    def attach(self, cluster: Cluster, last_checkpoint: CheckpointClock, kueue: Kueue) -> None:
        self.c = cluster
        self.compute = ComputeApi(cluster.t, seed=0) if self.settings.compute_corroboration else None
        self.snapshots = SnapshotBuilder(
            cluster, last_checkpoint, leases=self.leases, compute=self.compute, settings=self.settings
        )
        cluster.watchers.append(self._on_watch)
        if self.leases:
            cluster.kubelet_listeners.append(self._on_kubelet)
        self._arm(0.0)

    def _arm(self, delay: float) -> None:
        """Make sure a reconcile happens within ``delay``."""
        due = self.c.now + delay
        if self._next is not None and self._next.pending and self._next.at <= due:
            return
        if self._next is not None:
            self._next.cancel()
        self._next = self.c.engine.at(due, "reconcile", self._reconcile)

    def _on_watch(self) -> None:
        self._arm(self.c.t.reconcile_debounce_s)

    def _on_kubelet(self) -> None:
        """No event marks a Lease that stops being renewed: the periodic reconcile finds it."""
        self._arm(self.c.t.reconcile_interval_s)

    def _wake(self) -> None:
        """A maintenance notice's next request time or deadline comes without a watch event: the
        adapter's periodic reconcile finds it; here a timer stands in for that."""
        due = next_wake((n.api for n in self.c.nodes.values()), self.settings, self.c.now)
        if due is not None:
            self._arm(due - self.c.now)

    def _idle(self) -> bool:
        return quiescent(self.c, leases=self.leases, settings=self.settings) and not self.snapshots.lingers(
            self.c.now
        )

    def _reconcile(self) -> None:
        self._next = None
        idle = self._idle()
        if idle and not self.verify_idle:
            self.stats.skipped_idle += 1
            self._wake()
            return
        snap = self.snapshots.build()
        t0 = time.perf_counter()
        decision = decide(snap, self.settings, memory=self.memory)
        spent = time.perf_counter() - t0
        if self.on_decision is not None:
            self.on_decision(snap, decision)
        if idle and decision.actions:
            raise AssertionError(f"t={snap.now}: quiescent cluster but decide acted: {decision.actions[:3]}")
        stats = self.stats
        stats.reconciles += 1
        stats.decide_seconds += spent
        stats.max_decide_seconds = max(stats.max_decide_seconds, spent)
        stats.held += int(decision.held)
        stats.preemptions.extend(decision.preemptions)
        self.memory = decision.memory
        stats.actions.update(apply(self.c, decision.actions, moving=moving_pools(decision.pools)))
        if self.compute is not None:
            for a in decision.actions:
                if isinstance(a, ResetVm):
                    self.compute.expire(a.node)
        stats.track(snap.now, {p.name: p.declared for p in decision.pools})
        if not self._idle():
            self._arm(self.c.t.reconcile_interval_s)
        else:
            self._wake()
