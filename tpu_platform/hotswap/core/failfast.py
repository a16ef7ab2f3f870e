"""Fail fast on unhealthy pools and clear pods stuck Terminating on dead nodes.

Managed pods on a declared pool are evicted at once, so JobSet restarts without waiting for the 300 s
toleration; managed pods stuck Terminating are force-deleted only on nodes whose VM is confirmed down
(or, opted in, NotReady long enough). Why not the out-of-service taint: docs/hotswap-core.md,
"failfast.py".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import chain

from tpu_platform.hotswap.core.actions import EmitEvent, EvictionCause, EvictPod, ForceDeletePod
from tpu_platform.hotswap.core.index import ClusterIndex
from tpu_platform.hotswap.core.model import Node, Pod
from tpu_platform.hotswap.core.pool_health import PoolState, PoolStatus, node_dead_since
from tpu_platform.hotswap.core.settings import Settings
from tpu_platform.hotswap.core.vm_evidence import confirmed_down, known_running


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
    on suspect nodes whose VM Compute Engine confirms is not running (:mod:`.vm_evidence`).

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
