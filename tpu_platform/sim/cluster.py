"""The API server and the kubelets: the objects of the simulated cluster, their changes, and who hears.

Controllers (JobSet, kube-scheduler, Kueue, the hotswap controller) never change an object behind
the others' backs: every change goes through a method here, which tells the JobSet controller about
pod lifecycle steps, kicks the scheduler, and wakes watchers (the hotswap controller's informers).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import replace

from tpu_platform.hotswap.core import Condition, Node
from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.constants import GKE_TPU_TAINT
from tpu_platform.sim.engine import Engine
from tpu_platform.sim.model import CAUSE_DONE, FAILED, RUNNING, SUCCEEDED, Pool, SimNode, SimPod, Workload
from tpu_platform.sim.params import Timings

PodListener = Callable[[SimPod, str], None]
"""Called with a pod and one of ``bound``, ``terminating``, ``failed``, ``gone``."""
OccupancyListener = Callable[[str, str, bool], None]
"""Called with pool, workload key and True when the workload starts holding the pool, False when it stops."""


class Cluster:
    def __init__(self, engine: Engine, timings: Timings, pools: Iterable[Pool]) -> None:
        self.engine = engine
        self.t = timings
        self.pools: dict[str, Pool] = {p.name: p for p in pools}
        self.nodes: dict[str, SimNode] = {}
        self.pods: dict[str, SimPod] = {}
        self.workloads: dict[str, Workload] = {}
        self.pod_listeners: list[PodListener] = []
        self.occupancy_listeners: list[OccupancyListener] = []
        self.kickers: list[Callable[[], None]] = []
        self.watchers: list[Callable[[], None]] = []
        self.annotation_listeners: list[Callable[[Workload, tuple[str, ...]], None]] = []
        """Told which keys a controller's JobSet annotation patch wrote (the workload may react)."""
        self.sigterm_checkpoint: Callable[[Workload], None] | None = None
        """How a trainer told to stop on a healthy slice saves its work (set by the simulation): GKE's
        drain and the controller's maintenance move both send SIGTERM with time to write it."""
        self.reset_vm: Callable[[str], None] | None = None
        """Compute Engine carrying out a controller's ``instances.reset`` of a node's VM
        (``tpu_platform.sim.vm_reset``)."""
        self.kubelet_listeners: list[Callable[[], None]] = []
        """Told when a kubelet stops or restarts: only its node Lease shows it (no watch event)."""
        self.force_deletes = 0
        """Pods removed with grace 0 by a controller (ours or Kueue's FailureRecoveryPolicy)."""
        self.unsafe_force_deletes = 0
        """Of those, pods whose VM was still running (a second copy of the worker could start)."""
        self._pool_holders: dict[str, dict[str, int]] = {name: {} for name in self.pools}
        self._uids = itertools.count(1)
        for pool in self.pools.values():
            for i in range(pool.size):
                self.add_node(pool, i, ready_at=engine.now)

    @property
    def now(self) -> float:
        return self.engine.now

    def uid(self, kind: str) -> str:
        return f"uid-{kind}-{next(self._uids)}"

    # --- notifications -------------------------------------------------------------------------------
    def changed(self) -> None:
        """Something the scheduler or a watcher may care about changed."""
        for kick in self.kickers:
            kick()
        for watch in self.watchers:
            watch()

    def _tell(self, pod: SimPod, what: str) -> None:
        pod.changed()
        for listener in self.pod_listeners:
            listener(pod, what)

    def _hold(self, pool: str, workload: str, delta: int) -> None:
        counts = self._pool_holders[pool]
        before = counts.get(workload, 0)
        after = before + delta
        if after:
            counts[workload] = after
        else:
            counts.pop(workload, None)
        if (before == 0) != (after == 0):
            for listener in self.occupancy_listeners:
                listener(pool, workload, after > 0)

    # --- nodes ---------------------------------------------------------------------------------------
    def add_node(self, pool: Pool, index: int, *, ready_at: float) -> SimNode:
        """A Ready node as GKE registers it for a TPU slice."""
        name = f"{pool.name}-n{index}"
        api = Node(
            name=name,
            pool=pool.name,
            conditions=(Condition("Ready", "True", ready_at),),
            taints=(GKE_TPU_TAINT,),
            labels={
                k.NODEPOOL_LABEL: pool.name,
                k.TPU_ACCELERATOR_LABEL: "tpu-v6e-slice",
                k.TPU_TOPOLOGY_LABEL: pool.topology,
            },
            created=ready_at,
            uid=self.uid("node"),
            provider_id=f"gce://sim-project/us-east5-b/gke-{name}",
        )
        node = SimNode(name=name, pool=pool.name, api=api, lease_from=ready_at)
        self.nodes[name] = node
        pool.nodes.append(name)
        self.changed()
        return node

    def update_node(self, node: SimNode, api: Node) -> None:
        node.api = api
        self.changed()

    def delete_node(self, node: SimNode) -> None:
        """The Node object goes away; PodGC fails and deletes its pods after the quarantine."""
        del self.nodes[node.name]
        self.pools[node.pool].nodes.remove(node.name)
        node.incarnation += 1
        for key in sorted(node.holders):
            pod = self.pods[key]
            self._release(pod)
            pod.changed()
            self.engine.after(self.t.orphan_gc_s, "podgc-orphan", self._gc_orphan, key, pod.uid)
        self.changed()

    def _gc_orphan(self, key: str, uid: str) -> None:
        pod = self.pods.get(key)
        if pod is None or pod.uid != uid:
            return
        if not pod.terminal:
            self.fail_pod(pod, pod.cause or "failure", disruption="DeletionByPodGC")
        self.remove_pod(pod)

    def usable(self, node: SimNode) -> bool:
        """Kube-scheduler's node filter apart from capacity: Ready, schedulable, no taint a TPU pod
        does not tolerate (it tolerates only ``google.com/tpu``), and chips the device plugin offers."""
        if not node.ready or node.api.unschedulable or not node.chips_ok:
            return False
        return all(t.key == k.TPU_RESOURCE or t.effect == "PreferNoSchedule" for t in node.api.taints)

    # --- pods ----------------------------------------------------------------------------------------
    def create_pod(
        self, w: Workload, *, slice_index: int, index: int, pool_selector: str | None = None
    ) -> SimPod:
        job = f"{w.spec.name}-slice-{slice_index}"
        name = f"{job}-{index}-a{w.attempt}"
        pod = SimPod(
            key=f"{w.spec.namespace}/{name}",
            namespace=w.spec.namespace,
            name=name,
            uid=self.uid("pod"),
            workload=w.key,
            job=job,
            slice_index=slice_index,
            index=index,
            attempt=w.attempt,
            priority=w.priority,
            created=self.now,
            pool_selector=pool_selector,
        )
        self.pods[pod.key] = pod
        w.pods[pod.key] = pod
        self.changed()
        return pod

    def bind(self, pod: SimPod, node: SimNode) -> None:
        pod.node = node.name
        pod.pool = node.pool
        pod.holding = True
        pod.bound_at = self.now
        pod.phase = RUNNING
        pod.nominated = None
        pod.unschedulable_since = None
        node.holders.add(pod.key)
        self._hold(node.pool, pod.workload, +1)
        self._tell(pod, "bound")
        self.changed()

    def _release(self, pod: SimPod) -> None:
        if not pod.holding:
            return
        pod.holding = False
        node = self.nodes.get(pod.node) if pod.node is not None else None
        if node is not None:
            node.holders.discard(pod.key)
        if pod.pool is not None:
            self._hold(pod.pool, pod.workload, -1)

    def kubelet_alive(self, pod: SimPod) -> bool:
        node = self.nodes.get(pod.node) if pod.node is not None else None
        return node is not None and node.alive

    def delete_pod(
        self, pod: SimPod, cause: str, *, disruption: str | None = None, exit_after: float | None = None
    ) -> None:
        """Graceful deletion: a live kubelet finishes it (after ``exit_after``, default the pod's own
        exit time), a dead one never does (it stays Terminating). A pod that is unbound or already
        terminal goes at once (the API server deletes those with grace period 0)."""
        if pod.terminating:
            return
        pod.deletion = self.now
        pod.cause = pod.cause or cause
        if disruption is not None and pod.disruption is None:
            pod.disruption = disruption
        if pod.node is None or pod.terminal:
            self._tell(pod, "terminating")
            self.remove_pod(pod)
            return
        self._tell(pod, "terminating")
        if self.kubelet_alive(pod):
            node = self.nodes[pod.node]
            self.engine.after(
                self.t.pod_termination_s if exit_after is None else exit_after,
                "kubelet-terminate",
                self._terminated,
                pod.key,
                pod.uid,
                node.incarnation,
            )
        self.changed()

    def _terminated(self, key: str, uid: str, incarnation: int) -> None:
        pod = self.pods.get(key)
        if pod is None or pod.uid != uid or pod.node is None:
            return
        node = self.nodes.get(pod.node)
        if node is None or not node.alive or node.incarnation != incarnation:
            return
        self.finish_termination(pod)

    def finish_termination(self, pod: SimPod) -> None:
        """A live kubelet has stopped the containers: the pod is terminal, then its object is removed."""
        if not pod.terminal:
            self.fail_pod(pod, pod.cause or "deleted", phase=SUCCEEDED if pod.cause == CAUSE_DONE else FAILED)
        self.remove_pod(pod)

    def fail_pod(
        self, pod: SimPod, cause: str, *, disruption: str | None = None, phase: str = FAILED
    ) -> None:
        """The pod reaches a terminal phase (its containers are gone); it frees its node."""
        if pod.terminal:
            return
        pod.phase = phase
        pod.cause = pod.cause or cause
        if disruption is not None and pod.disruption is None:
            pod.disruption = disruption
        self._release(pod)
        self._tell(pod, "failed")
        self.changed()

    def note_force_delete(self, pod: SimPod) -> None:
        """Count a grace-0 deletion about to happen, and whether it is unsafe: the pod is not finished
        and the VM it is bound to still runs its guest (the fencing rule)."""
        self.force_deletes += 1
        node = self.nodes.get(pod.node) if pod.node is not None else None
        if node is not None and node.vm_running and not pod.terminal:
            self.unsafe_force_deletes += 1

    def remove_pod(self, pod: SimPod) -> None:
        """The pod object is gone from the API (deleted to completion, force-deleted or GC'd)."""
        if self.pods.get(pod.key) is not pod:
            return
        self._release(pod)
        del self.pods[pod.key]
        w = self.workloads.get(pod.workload)
        if w is not None:
            w.pods.pop(pod.key, None)
        self._tell(pod, "gone")
        self.changed()

    def set_nominated(self, pod: SimPod, node: str | None) -> None:
        pod.nominated = node
        pod.changed()
        self.changed()

    def set_unschedulable(self, pod: SimPod) -> None:
        if pod.unschedulable_since is None:
            pod.unschedulable_since = self.now
            pod.changed()
            for watch in self.watchers:
                watch()

    def heal_node_api(self, node: SimNode, since: float) -> None:
        """Ready again, the not-ready/unreachable taints gone (as the node lifecycle controller leaves it)."""
        conditions = (
            *(c for c in node.api.conditions if c.type != "Ready"),
            Condition("Ready", "True", since),
        )
        taints = tuple(t for t in node.api.taints if t.key not in (k.UNREACHABLE_TAINT, k.NOT_READY_TAINT))
        self.update_node(node, replace(node.api, conditions=conditions, taints=taints))
