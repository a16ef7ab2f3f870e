"""Fail fast on unhealthy pools and clear pods stuck Terminating on dead nodes.

Without these, JobSet notices a broken slice only when the pods are evicted after the 300 s
not-ready/unreachable toleration, and BlockingRecreate then waits for pods that a dead kubelet will
never finish terminating (jobset #576) until GKE repairs the node (~10 min).

Why force-delete rather than the ``node.kubernetes.io/out-of-service`` taint: that taint makes
kube-controller-manager force-delete *every* pod on the node (and detach volumes), including workloads
the controller must not touch, and it has to be removed by hand once the node is back. Force-deleting
only the managed pods, only on nodes whose VM Compute Engine confirms down (or, opted in with
``force_delete_unconfirmed``, NotReady/unreachable for ``dead_node_confirm_seconds``), is the narrower
tool.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import chain

from tpu_platform.hotswap.core.actions import EmitEvent, EvictionCause, EvictPod, ForceDeletePod
from tpu_platform.hotswap.core.corroboration import confirmed_down, known_running
from tpu_platform.hotswap.core.health import PoolState, PoolStatus, node_dead_since
from tpu_platform.hotswap.core.index import ClusterIndex
from tpu_platform.hotswap.core.model import Node, Pod
from tpu_platform.hotswap.core.settings import Settings


def fail_fast(
    idx: ClusterIndex, statuses: Mapping[str, PoolStatus]
) -> tuple[list[EvictPod], list[EmitEvent], list[Pod]]:
    """Evict managed pods on pools that are declared unhealthy and still bad (a slice is one unit).

    Returns the evictions, their events and the evicted pods.
    """
    evictions: list[EvictPod] = []
    evicted: list[Pod] = []
    per_jobset: dict[tuple[str, str], int] = {}
    for pool, status in statuses.items():
        if status.state is not PoolState.UNHEALTHY:
            continue
        for pod in idx.pods_by_pool.get(pool, ()):
            if pod.terminating or pod.jobset not in idx.managed:
                continue
            evictions.append(
                EvictPod.of(
                    pod,
                    EvictionCause.FAIL_FAST,
                    pool,
                    f"node pool {pool} is unhealthy: {status.reason or 'declared unhealthy'}",
                )
            )
            evicted.append(pod)
            assert pod.jobset is not None
            per_jobset[(pod.jobset, pool)] = per_jobset.get((pod.jobset, pool), 0) + 1
    events = []
    for (key, pool), count in sorted(per_jobset.items()):
        js = idx.jobsets[key]
        events.append(
            EmitEvent.on_jobset(
                js,
                "Warning",
                "HotswapFailFast",
                f"Evicting {count} pod(s) on unhealthy node pool {pool} so the JobSet restarts now",
                "Evict",
            )
        )
    return evictions, events, evicted


def clear_stuck(
    idx: ClusterIndex, settings: Settings, now: float, evicting: Iterable[Pod] = ()
) -> tuple[list[ForceDeletePod], list[EmitEvent]]:
    """Force-delete managed pods stuck Terminating on nodes NotReady/unreachable past confirmation, or
    on suspect nodes whose VM Compute Engine confirms is not running (``corroboration``).

        ``evicting`` are pods evicted in this same reconcile: on a confirmed-dead node they would be stuck
        the moment the eviction lands, so they are force-deleted right after it. The eviction comes first
        because it records the DisruptionTarget condition that lets the failure policy spare maxRestarts.
    """
    deletes: list[ForceDeletePod] = []
    per_jobset: dict[str, int] = {}
    why_cache: dict[str, str | None] = {}
    for pod in chain(idx.terminating, evicting):
        if pod.jobset not in idx.managed or pod.node is None:
            continue
        if pod.node not in why_cache:
            why_cache[pod.node] = _confirmed(idx.nodes[pod.node], settings, now)
        why = why_cache[pod.node]
        if why is None:
            continue
        deletes.append(
            ForceDeletePod(
                namespace=pod.namespace,
                name=pod.name,
                uid=pod.uid,
                node=pod.node,
                jobset=pod.jobset,
                reason=f"stuck Terminating on node {pod.node}, {why}",
            )
        )
        assert pod.jobset is not None
        per_jobset[pod.jobset] = per_jobset.get(pod.jobset, 0) + 1
    events = []
    for key, count in sorted(per_jobset.items()):
        js = idx.jobsets[key]
        events.append(
            EmitEvent.on_jobset(
                js,
                "Warning",
                "HotswapForceDeleted",
                f"Force-deleted {count} pod(s) stuck Terminating on dead node(s) so the restart can proceed",
                "ForceDelete",
            )
        )
    return deletes, events


def _confirmed(node: Node, settings: Settings, now: float) -> str | None:
    """Why ``node`` counts as dead: its VM confirmed down by Compute Engine, or (opted in) NotReady long
    enough on a VM not known to run."""
    down = confirmed_down(node, settings, now)
    if down is not None:
        return down
    if not settings.force_delete_unconfirmed:
        return None
    dead_since = node_dead_since(node, now=now)
    if dead_since is None or now - dead_since < settings.dead_node_confirm_seconds:
        return None
    if known_running(node, settings, now):
        return None
    return f"not Ready for {now - dead_since:.0f}s"
