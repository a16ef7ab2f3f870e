"""The VM behind a silent node: Compute Engine's evidence that it is down, and the reset that ends it.

A suspect node's pods are force-deleted early only when Compute Engine confirms its VM not running
(or reset since the kubelet was last heard); on a declared pool, a suspect node whose VM still reads
RUNNING has it reset. The adapter reads Compute Engine into ``Node.instance`` and sends the resets;
this decides. Reasoning and sources: docs/hotswap-core.md, "vm_evidence.py".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tpu_platform.hotswap.core.actions import EmitEvent, ResetVm
from tpu_platform.hotswap.core.index import ClusterIndex
from tpu_platform.hotswap.core.model import Node
from tpu_platform.hotswap.core.pool_health import PoolState, PoolStatus, Problem, node_dead_since
from tpu_platform.hotswap.core.settings import Settings
from tpu_platform.hotswap.core.times import CLOCK_SKEW_SECONDS

# --- evidence: is the VM confirmed not running? ---------------------------------------------------

GONE = "GONE"
"""``Instance.status`` stand-in for a VM that ``instances.get`` no longer finds (HTTP 404)."""

NOT_RUNNING = frozenset({"TERMINATED", "STOPPED", "SUSPENDED", "REPAIRING", "DEPROVISIONING", GONE})
"""Statuses under which no guest of the VM runs (sources: docs/hotswap-core.md, "vm_evidence.py")."""


def suspect_since(node: Node, settings: Settings, now: float) -> float | None:
    """When the node became suspect: NotReady/unreachable, or its Lease stale past
    ``lease_stale_seconds`` (if on); None while neither."""
    since = node_dead_since(node)
    stale = settings.lease_stale_seconds
    renewed = node.lease_renewed
    if stale > 0 and renewed is not None and now - renewed >= stale:
        lease_since = renewed + stale
        since = lease_since if since is None else min(since, lease_since)
    return since


def suspects(nodes: Iterable[Node], settings: Settings, now: float) -> tuple[Node, ...]:
    """The nodes whose VM the adapter should read now (none with corroboration off)."""
    if not settings.compute_corroboration:
        return ()
    return tuple(n for n in nodes if suspect_since(n, settings, now) is not None)


def read_after_suspicion(observed: float, since: float) -> bool:
    """An answer the controller's clock dates ``observed`` was read after a suspicion the cluster's
    clock dates ``since``, whichever clock is ahead (within the skew)."""
    return since + CLOCK_SKEW_SECONDS <= observed


def fresh_evidence(node: Node, settings: Settings, now: float) -> bool:
    """The node's Compute Engine answer was read during its current suspicion (by the skew rule of
    :func:`read_after_suspicion`), by now, and is at most ``instance_evidence_max_age_seconds`` old."""
    ev = node.instance
    since = suspect_since(node, settings, now)
    if ev is None or since is None or not read_after_suspicion(ev.observed, since):
        return False
    return ev.observed <= now and now - ev.observed <= settings.instance_evidence_max_age_seconds


def known_running(node: Node, settings: Settings, now: float) -> bool:
    """Fresh evidence says the VM's guest runs (RUNNING, STOPPING, SUSPENDING, STAGING ...): its pods
    may still be running, so no timer may force-delete them. A kubelet restart that outlasts
    NotReady + ``dead_node_confirm_seconds`` is the case this guards against (measured by bench/mttr.py)."""
    if not settings.compute_corroboration or not fresh_evidence(node, settings, now):
        return False
    return confirmed_down(node, settings, now) is None


HOST_ERROR = "HOST_ERROR"
RESET = "RESET"
WHY = {
    HOST_ERROR: "Compute Engine recorded a host error for the VM since the kubelet was last heard",
    RESET: "the VM was reset (operation done) since the kubelet was last heard",
}


def confirmed_by(node: Node, settings: Settings, now: float) -> str | None:
    """What confirms the VM behind ``node`` not running: its status (one of :data:`NOT_RUNNING`),
    :data:`HOST_ERROR` or :data:`RESET`; None if nothing does (or nothing is known)."""
    if not settings.compute_corroboration:
        return None
    ev = node.instance
    if ev is None or not fresh_evidence(node, settings, now):
        return None
    if ev.status in NOT_RUNNING:
        return ev.status
    renewed = node.lease_renewed
    if renewed is not None and ev.host_error_at is not None and renewed <= ev.host_error_at <= ev.observed:
        return HOST_ERROR
    # A reset kills what ran before it; its pods are Terminating (evicted) by then, so a kubelet that
    # boots again stops them rather than starting them. It needs to fall in this suspicion only.
    heard = renewed if renewed is not None else suspect_since(node, settings, now)
    if ev.reset_at is not None and heard is not None and heard <= ev.reset_at <= ev.observed:
        return RESET
    return None


def confirmed_down(node: Node, settings: Settings, now: float) -> str | None:
    """Why the VM behind ``node`` is confirmed not running, or None if it is not (or not known)."""
    by = confirmed_by(node, settings, now)
    if by is None:
        return None
    return WHY.get(by, f"Compute Engine reports the VM {by}")


def confirmation_problems(nodes: Iterable[Node], settings: Settings, now: float) -> dict[str, list[Problem]]:
    """A confirmed problem per suspect node whose VM is confirmed down: its pool is declared without
    waiting out T_bad. Empty with corroboration off, and for a node without fresh not-running evidence
    (such a node keeps its NotReady/Lease problems and their T_bad)."""
    out: dict[str, list[Problem]] = {}
    if not settings.compute_corroboration:
        return out
    for node in nodes:
        why = confirmed_down(node, settings, now)
        if why is not None:
            out[node.name] = [Problem(node.name, why, suspect_since(node, settings, now), confirmed=True)]
    return out


# --- the VM reset: a suspect node whose VM still reads RUNNING, on a declared pool -------------------

RESETTABLE = frozenset({"RUNNING"})
"""Statuses a reset applies to: ``instances.reset`` resets a running VM; a VM stopping or starting
confirms (or runs a new boot) by itself."""


def vm_resets(
    idx: ClusterIndex, statuses: Mapping[str, PoolStatus], settings: Settings, now: float
) -> tuple[list[ResetVm], list[EmitEvent]]:
    """The VM resets due now, one per node, with an Event on each node: on a declared unhealthy pool,
    a suspect node holding a managed pod whose fresh evidence reads its VM ``RUNNING`` with no host
    error or reset since the kubelet was last heard, and no reset pending."""
    resets: list[ResetVm] = []
    events: list[EmitEvent] = []
    if not (settings.compute_corroboration and settings.reset_silent_vms):
        return resets, events
    for pool, status in sorted(statuses.items()):
        if status.state is not PoolState.UNHEALTHY:
            continue
        holding = {p.node for p in idx.pods_by_pool.get(pool, ()) if p.jobset in idx.managed}
        for node in idx.nodes_by_pool.get(pool, ()):
            why = _reset_due(node, settings, now)
            since = suspect_since(node, settings, now)
            if why is None or since is None or node.name not in holding:
                continue
            resets.append(ResetVm(node.name, pool, node.provider_id, since, why))
            events.append(
                EmitEvent.on_node(
                    (node.name, node.uid),
                    "Warning",
                    "HotswapVmReset",
                    f"Resetting the VM behind this node so its pods can be cleared: {why}",
                    "ResetVm",
                )
            )
    return resets, events


def _reset_due(node: Node, settings: Settings, now: float) -> str | None:
    """Why ``node``'s VM should be reset now, or None."""
    ev = node.instance
    since = suspect_since(node, settings, now)
    if ev is None or since is None or not node.provider_id or ev.reset_pending:
        return None
    if not fresh_evidence(node, settings, now) or ev.status not in RESETTABLE:
        return None
    if confirmed_down(node, settings, now) is not None:
        return None
    if ev.reset_at is not None and ev.reset_at >= since:
        return None  # reset during this suspicion: the kubelet is back, or the reset did not end the guest
    return f"silent since {since:.0f}, Compute Engine reads it RUNNING, its pool is declared unhealthy"
