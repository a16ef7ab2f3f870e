"""A toy cluster for end-to-end scenarios: just enough kubelet, JobSet and kube-scheduler behaviour to
watch the decision core drive recovery over time. Not a simulator: one-second ticks, no latencies
beyond an optional graceful-termination delay. It has no Compute Engine, so its default settings opt in
to the NotReady timer (``force_delete_unconfirmed``) where a stack would confirm a dead VM.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from tpu_platform.hotswap.core import (
    Decision,
    JobSet,
    Node,
    NodePool,
    Pod,
    Preemption,
    Settings,
    Snapshot,
    apply_actions,
    constants,
    decide,
)
from tpu_platform.hotswap.core.model import RUNNING
from tpu_platform.testing.hotswap_builders import fail_node, heal_node, make_nodes, pending_pods

TOLERATED = {constants.TPU_RESOURCE}


class World:
    def __init__(
        self,
        pools: Sequence[NodePool],
        *,
        now: float = 10_000.0,
        settings: Settings | None = None,
        termination_seconds: float = 0.0,
        check_idempotent: bool = True,
    ) -> None:
        self.pools = {p.name: p for p in pools}
        self.now = now
        self.settings = settings or Settings(force_delete_unconfirmed=True)
        self.nodes: dict[str, Node] = {
            n.name: n for p in pools for n in make_nodes(p, ready_since=now - 3600)
        }
        self.jobsets: dict[str, JobSet] = {}
        self.pods: dict[str, Pod] = {}
        self.attempt: dict[str, int] = {}
        self.expected: dict[str, set[str]] = {}
        self.restarting: set[str] = set()
        self.termination_seconds = termination_seconds
        self.check_idempotent = check_idempotent
        self.decisions: list[Decision] = []

    # --- setup -------------------------------------------------------------------------------------
    def add(self, js: JobSet, pools: Sequence[str] = ()) -> None:
        """Add a JobSet running on ``pools`` (one slice each), or pending if none are given."""
        self.jobsets[js.key] = js
        self.attempt[js.key] = 1
        self.expected[js.key] = set()
        if pools:
            for i, pool in enumerate(pools):
                self._place(js, f"{js.name}-slice-{i}", pool, started=self.now - 600)
        else:
            self._create_pending(js)

    def fail(self, node: str, *, status: str = "Unknown") -> None:
        self.nodes[node] = fail_node(self.nodes[node], self.now, status=status)

    def heal(self, node: str) -> None:
        self.nodes[node] = heal_node(self.nodes[node], self.now)

    # --- observation ---------------------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        running: dict[str, float] = {}
        for p in self.pods.values():
            if p.jobset and p.phase == RUNNING and p.started is not None and not p.terminating:
                running[p.jobset] = min(running.get(p.jobset, p.started), p.started)
        jobsets = tuple(replace(js, running_since=running.get(key)) for key, js in self.jobsets.items())
        return Snapshot(
            now=self.now,
            pools=tuple(self.pools.values()),
            nodes=tuple(self.nodes.values()),
            jobsets=jobsets,
            pods=tuple(self.pods.values()),
        )

    def placement(self, key: str) -> set[str]:
        """Pools where the JobSet has running, non-terminating pods."""
        return {
            self.nodes[p.node].pool
            for p in self.pods.values()
            if p.jobset == key and p.node is not None and p.phase == RUNNING and not p.terminating
        }

    def tainted_pools(self) -> set[str]:
        return {
            n.pool
            for n in self.nodes.values()
            if any(t.key == constants.UNHEALTHY_TAINT_KEY for t in n.taints)
        }

    @property
    def preemptions(self) -> list[Preemption]:
        return [p for d in self.decisions for p in d.preemptions]

    # --- time -----------------------------------------------------------------------------------------
    def control(self) -> Decision:
        """One controller reconcile: decide, apply, and (optionally) check idempotency."""
        snap = self.snapshot()
        decision = decide(snap, self.settings)
        self.decisions.append(decision)
        after = apply_actions(snap, decision.actions)
        self.nodes = {n.name: n for n in after.nodes}
        self.pods = {p.key: p for p in after.pods}
        for js in after.jobsets:
            self.jobsets[js.key] = replace(self.jobsets[js.key], annotations=js.annotations)
        if self.check_idempotent:
            again = decide(self.snapshot(), self.settings)
            assert again.actions == (), f"not idempotent at t={self.now}: {again.actions}"
        return decision

    def tick(self, dt: float = 1.0) -> Decision:
        self.now += dt
        self._kubelet()
        self._jobset_controller()
        self._scheduler()
        return self.control()

    def run(self, seconds: float, dt: float = 1.0) -> None:
        end = self.now + seconds
        while self.now < end:
            self.tick(dt)

    # --- stand-ins for the real controllers -----------------------------------------------------------
    def _ready(self, node: str) -> bool:
        c = self.nodes[node].condition("Ready")
        return c is not None and c.status == "True"

    def _kubelet(self) -> None:
        """Live kubelets finish terminating pods; dead ones never do."""
        for key, p in list(self.pods.items()):
            if p.deletion_timestamp is None:
                continue
            if p.node is None or (
                self._ready(p.node) and self.now - p.deletion_timestamp >= self.termination_seconds
            ):
                del self.pods[key]

    def _jobset_controller(self) -> None:
        """A pod gone or terminating restarts the whole JobSet; like BlockingRecreate, new pods are
        created only once every old pod is gone."""
        by_js: dict[str, list[Pod]] = {key: [] for key in self.jobsets}
        for p in self.pods.values():
            if p.jobset in by_js:
                by_js[p.jobset].append(p)
        for key, pods in by_js.items():
            js = self.jobsets[key]
            if key in self.restarting:
                if not pods:
                    self.restarting.discard(key)
                    self.attempt[key] += 1
                    self.expected[key] = set()
                    self._create_pending(js)
                continue
            gone = self.expected[key] - set(self.pods)
            if gone or any(p.terminating for p in pods):
                self.restarting.add(key)
                if not js.disruption_ignores_max_restarts:
                    self.jobsets[key] = replace(js, restarts=js.restarts + 1)
                for p in pods:
                    if not p.terminating:
                        self.pods[p.key] = replace(p, deletion_timestamp=self.now)

    def _create_pending(self, js: JobSet) -> None:
        for p in pending_pods(js, unschedulable_since=self.now, attempt=self.attempt[js.key]):
            self.pods[p.key] = replace(p, unschedulable_since=None)

    def _pool_free(self, pool: str) -> bool:
        nodes = [n for n in self.nodes.values() if n.pool == pool]
        if len(nodes) < self.pools[pool].expected_nodes:
            return False
        for n in nodes:
            if not self._ready(n.name) or n.unschedulable:
                return False
            if any(t.key not in TOLERATED and t.effect in ("NoSchedule", "NoExecute") for t in n.taints):
                return False
        return not any(p.node is not None and self.nodes[p.node].pool == pool for p in self.pods.values())

    def _scheduler(self) -> None:
        """Place pending slices, highest priority first, on free pools of the right shape."""
        pending = sorted(
            (p for p in self.pods.values() if p.node is None and not p.terminating),
            key=lambda p: (-p.priority, p.created, p.key),
        )
        for p in pending:
            if p.key not in self.pods:
                continue
            assert p.jobset is not None
            js = self.jobsets[p.jobset]
            pool = next(
                (
                    name
                    for name in sorted(self.pools)
                    if self.pools[name].topology == js.topology and self._pool_free(name)
                ),
                None,
            )
            if pool is None:
                if p.unschedulable_since is None:
                    self.pods[p.key] = replace(p, unschedulable_since=self.now)
                continue
            for q in [q for q in self.pods.values() if q.job == p.job and q.node is None]:
                del self.pods[q.key]
            self._place(js, p.job, pool, started=self.now)

    def _place(self, js: JobSet, job: str, pool: str, *, started: float) -> None:
        attempt = self.attempt[js.key]
        nodes = sorted(n.name for n in self.nodes.values() if n.pool == pool)
        for j, node in enumerate(nodes):
            name = f"{job}-{j}-a{attempt}"
            self.expected[js.key].add(f"{js.namespace}/{name}")
            self.pods[f"{js.namespace}/{name}"] = Pod(
                namespace=js.namespace,
                name=name,
                uid=f"uid-{name}",
                jobset=js.key,
                job=job,
                node=node,
                phase=RUNNING,
                priority=js.priority,
                created=started,
                started=started,
            )
