"""The bridge to the controller's decision core: the simulated cluster as a
``tpu_platform.hotswap.core.Snapshot`` (what the adapter's informers would show), and the core's
actions applied as the API server would.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import replace

from tpu_platform.hotswap.core import (
    Action,
    AnnotateJobSet,
    EmitEvent,
    EvictionCause,
    EvictPod,
    ForceDeletePod,
    JobSet,
    Node,
    NodePool,
    PatchNode,
    Pod,
    ResetVm,
    Settings,
    Snapshot,
    suspect_since,
)
from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.apply import patch_node
from tpu_platform.hotswap.core.maintenance import request_at, window_start
from tpu_platform.hotswap.core.model import RUNNING
from tpu_platform.hotswap.core.pool_health import chips_withdrawn
from tpu_platform.sim.checkpoints import CAUSE_MOVE, answered_before
from tpu_platform.sim.cluster import Cluster
from tpu_platform.sim.compute import ComputeApi
from tpu_platform.sim.model import CAUSE_CONTROLLER, CAUSE_FAILURE, SimNode, SimPod, Workload
from tpu_platform.sim.params import Timings

CheckpointClock = Callable[[Workload, float], "float | None"]

# Controller state written on nodes while a pool is suspect, unhealthy or recovering. The flap history
# annotation stays after recovery and alone changes no decision.
_STATE_ANNOTATIONS = (
    k.SUSPECT_SINCE_ANNOTATION,
    k.UNHEALTHY_SINCE_ANNOTATION,
    k.CLEAN_SINCE_ANNOTATION,
    k.UNHEALTHY_REASON_ANNOTATION,
    k.TPU_ERRORS_ANNOTATION,
)


def core_pod(pod: SimPod) -> Pod:
    if pod.core is None:
        pod.core = Pod(
            namespace=pod.namespace,
            name=pod.name,
            uid=pod.uid,
            jobset=pod.workload,
            job=pod.job,
            node=pod.node,
            phase=pod.phase,
            priority=pod.priority,
            deletion_timestamp=pod.deletion,
            nominated_node=pod.nominated,
            unschedulable_since=pod.unschedulable_since,
            uses_accelerator=True,
            created=pod.created,
            started=pod.bound_at,
            terminations=() if pod.termination is None else (pod.termination,),
        )
    return pod.core


def annotates_checkpoints(w: Workload, t: Timings, seed: int) -> bool:
    """Whether the workload writes ``last-checkpoint-time`` and ``checkpoint-interval-seconds`` on its
    JobSet, the only way the adapter learns either (``adapter/convert.py``, ``_checkpoint``). A
    workload that does not implement the checkpoint protocol (``Timings.checkpoint_never_answers``,
    the same share) writes neither, so the controller estimates its lost work without them."""
    return random.Random(f"annotates:{seed}:{w.key}").random() >= t.checkpoint_never_answers


def core_jobset(w: Workload, now: float, last_checkpoint: float | None, *, annotates: bool = True) -> JobSet:
    labels = {k.OPT_IN_LABEL: k.OPT_IN_VALUE} if w.spec.managed else {}
    annotations = {k.EXCLUSIVE_TOPOLOGY_ANNOTATION: k.NODEPOOL_LABEL, **w.annotations}
    if not w.spec.preemptible:
        annotations[k.PREEMPTIBLE_ANNOTATION] = "false"
    running_since = None
    for p in w.pods.values():
        if p.phase == RUNNING and not p.terminating and p.bound_at is not None:
            running_since = p.bound_at if running_since is None else min(running_since, p.bound_at)
    return JobSet(
        namespace=w.spec.namespace,
        name=w.spec.name,
        uid=w.uid,
        priority=w.priority,
        topology=w.spec.topology,
        slices=w.spec.slices,
        labels=labels,
        annotations=annotations,
        restart_strategy=w.spec.restart_strategy,
        max_restarts=w.spec.max_restarts,
        restarts=w.restarts,
        disruption_ignores_max_restarts=w.spec.pod_failure_policy,
        suspended=w.state == "queued",
        finished=w.state in ("done", "failed"),
        created=w.created,
        running_since=running_since,
        last_checkpoint=last_checkpoint if annotates else None,
        checkpoint_interval=w.spec.checkpoint_s if annotates else None,
    )


class SnapshotBuilder:
    """Builds snapshots; pools are fixed for a run, so they are built once. With ``leases`` the nodes
    carry their Lease's renewTime (what the adapter's lease cache joins in when the signal is on); with
    ``compute`` (and ``settings`` with corroboration on) suspect nodes carry Compute Engine's answer
    about their VM, as the adapter's reader joins it in."""

    def __init__(
        self,
        cluster: Cluster,
        last_checkpoint: CheckpointClock,
        *,
        leases: bool = False,
        compute: ComputeApi | None = None,
        settings: Settings | None = None,
        seed: int = 0,
    ) -> None:
        self.c = cluster
        self.seed = seed
        self.last_checkpoint = last_checkpoint
        self.leases = leases
        self.compute = compute
        self.settings = settings if settings is not None else Settings()
        self.pools = tuple(NodePool(p.name, p.topology, p.size) for p in cluster.pools.values())
        self.lingering: dict[str, tuple[float, Pod]] = {}
        """Failed pods with a container termination already removed by the simulated JobSet, kept
        until their linger time (``Timings.failed_pod_linger_s``) as the controller's watch saw them."""
        cluster.pod_listeners.append(self._on_pod)

    def _on_pod(self, pod: SimPod, what: str) -> None:
        if what == "gone" and pod.termination is not None:
            self.lingering[pod.key] = (self.c.now + self.c.t.failed_pod_linger_s, core_pod(pod))

    def lingers(self, now: float) -> bool:
        """Some removed failed pod is still visible: the cluster is not quiescent for the controller."""
        for key, (until, _) in list(self.lingering.items()):
            if until <= now:
                del self.lingering[key]
        return bool(self.lingering)

    def _node(self, n: SimNode, now: float) -> Node:
        api = (
            replace(n.api, lease_renewed=n.lease_renewed(now, self.c.t.lease_renew_s))
            if self.leases
            else n.api
        )
        if self.compute is not None:
            since = suspect_since(api, self.settings, now)
            if since is None:
                self.compute.forget(n.name)
            else:
                api = replace(api, instance=self.compute.join(n, now, since))
        return api

    def build(self) -> Snapshot:
        c = self.c
        now = c.now
        return Snapshot(
            now=now,
            pools=self.pools,
            nodes=tuple(self._node(n, now) for n in c.nodes.values()),
            jobsets=tuple(
                core_jobset(
                    w, now, self.last_checkpoint(w, now), annotates=annotates_checkpoints(w, c.t, self.seed)
                )
                for w in c.workloads.values()
                if w.state in ("queued", "admitted")
            ),
            pods=(
                *(core_pod(p) for p in c.pods.values()),
                *(pod for key, (until, pod) in self.lingering.items() if until > now and key not in c.pods),
            ),
        )


def quiescent(c: Cluster, *, leases: bool = False, settings: Settings | None = None) -> bool:
    """Nothing the controller could act on: every slice complete, every node Ready with no taint but
    GKE's TPU taint and no controller state, no pod pending or terminating, and with ``leases`` (the
    Lease signal on) every kubelet alive, since a dead one's Lease goes stale before its Ready does.

    In this state ``decide`` returns no actions (fail-fast needs an unhealthy pool, clearing needs a
    terminating pod, preemption an unschedulable one, health patches a problem or stored state), so
    the simulated controller only reconciles on the next watch event. The hotswap policy's
    ``verify_idle`` mode checks this claim on every skipped reconcile.

    With ``settings`` (maintenance-aware moves on), a node whose scheduled maintenance has reached its
    checkpoint request time is not quiescent either: the protocol has something to do until the
    window (``core/maintenance.py``); earlier notices change nothing yet.
    """
    for pool in c.pools.values():
        if len(pool.nodes) != pool.size:
            return False
    for node in c.nodes.values():
        api = node.api
        if leases and not node.alive:
            return False
        if not node.ready or api.unschedulable or len(api.conditions) != 1:
            return False
        if chips_withdrawn(api):
            return False
        if any(t.key != k.TPU_RESOURCE for t in api.taints):
            return False
        if api.annotations and any(key in api.annotations for key in _STATE_ANNOTATIONS):
            return False
        if settings is not None and settings.maintenance_moves:
            w = window_start(api)
            if w is not None and c.now >= request_at(w, settings):
                return False
    return all(p.node is not None and not p.terminating and p.termination is None for p in c.pods.values())


def _move(c: Cluster, pod: SimPod) -> None:
    """A maintenance move evicts a pod on a healthy slice. A trainer that answered the checkpoint
    request has just saved and exits at once (``Timings.pod_termination_s``; the seconds since its
    answer are lost); one that did not gets SIGTERM like GKE's drain and saves before it exits
    (``Timings.sigterm_checkpoint_s``)."""
    w = c.workloads.get(pod.workload)
    if w is not None and answered_before(w, c.now):
        c.delete_pod(pod, CAUSE_MOVE, disruption="EvictionByEvictionAPI")
        return
    if w is not None and c.sigterm_checkpoint is not None and c.kubelet_alive(pod):
        c.sigterm_checkpoint(w)
    c.delete_pod(pod, CAUSE_MOVE, disruption="EvictionByEvictionAPI", exit_after=c.t.sigterm_checkpoint_s)


def apply(c: Cluster, actions: Iterable[Action], *, moving: frozenset[str] = frozenset()) -> Counter[str]:
    """Apply the core's actions to the simulated cluster; returns counts per action kind. Fail-fast
    evictions on ``moving`` pools (a maintenance move, ``core/maintenance.py``) stop their runs with
    cause :data:`~tpu_platform.sim.checkpoints.CAUSE_MOVE`."""
    counts: Counter[str] = Counter()
    for action in actions:
        match action:
            case PatchNode():
                node = c.nodes.get(action.node)
                if node is not None:
                    c.update_node(node, patch_node(node.api, action))
                    counts["patch"] += 1
            case AnnotateJobSet():
                w = c.workloads.get(action.key)
                if w is not None and w.uid == action.uid:
                    w.annotations.update(dict(action.annotations))
                    counts["annotate"] += 1
                    keys = tuple(key for key, _ in action.annotations)
                    for listener in c.annotation_listeners:
                        listener(w, keys)
            case EvictPod():
                pod = c.pods.get(action.key)
                if pod is not None and pod.uid == action.uid and not pod.terminating:
                    cause = CAUSE_FAILURE if action.cause is EvictionCause.FAIL_FAST else CAUSE_CONTROLLER
                    if action.cause is EvictionCause.FAIL_FAST and action.pool in moving:
                        _move(c, pod)
                        counts["evict-maintenance-move"] += 1
                        continue
                    c.delete_pod(pod, cause, disruption="EvictionByEvictionAPI")
                    counts[f"evict-{action.cause.value}"] += 1
            case ForceDeletePod():
                pod = c.pods.get(action.key)
                if pod is not None and pod.uid == action.uid:
                    c.note_force_delete(pod)
                    c.remove_pod(pod)
                    counts["force-delete"] += 1
            case ResetVm():
                if c.reset_vm is not None:
                    c.reset_vm(action.node)
                    counts["vm-reset"] += 1
            case EmitEvent():
                counts["event"] += 1
    return counts
