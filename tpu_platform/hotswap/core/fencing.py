"""Fence a silent node by resetting its VM: the one confirmation that does not wait on Compute Engine
noticing a failure.

Force-deleting a silent node's pods is safe only once no process of the guest that ran them is left
(``corroboration``). Compute Engine says so for a dead host only after its status lag, and never for
a hung guest on a VM it reads RUNNING, whose pods then wait for GKE's auto-repair. A hard reset
(``instances.reset``: "Performs a reset on the instance. This is a hard reset. The VM does not do a
graceful shutdown", https://cloud.google.com/compute/docs/reference/rest/v1/instances/reset) ends
every process of the guest; once its operation is ``DONE`` the node's pods may be force-deleted. This
is the fencing a cluster manager does before it fails a member's work over (Kubernetes' non-graceful
node shutdown asks the same of the operator before the ``out-of-service`` taint, KEP-2268).

Only where the controller has already given the slice up: the node's pool is declared unhealthy (a
multi-host slice is one unit: its JobSet is restarting elsewhere anyway), the node is still suspect,
fresh evidence reads it ``RUNNING`` with no host error or reset since the kubelet was last heard, it
holds a pod of a managed JobSet, and no reset is pending. The cost of a false positive (a kubelet
that would have come back on its own) is a reboot of a VM whose slice was already declared; its pods
were being evicted. A Ready node with a fresh Lease is never suspect, so never reset.
"""

from __future__ import annotations

from collections.abc import Mapping

from tpu_platform.hotswap.core.actions import EmitEvent, ResetVm
from tpu_platform.hotswap.core.corroboration import confirmed_down, fresh_evidence, suspect_since
from tpu_platform.hotswap.core.health import PoolState, PoolStatus
from tpu_platform.hotswap.core.index import ClusterIndex
from tpu_platform.hotswap.core.model import Node
from tpu_platform.hotswap.core.settings import Settings

RESETTABLE = frozenset({"RUNNING"})
"""Statuses a reset applies to: ``instances.reset`` resets a running VM; a VM stopping or starting
confirms (or runs a new boot) by itself."""


def vm_resets(
    idx: ClusterIndex, statuses: Mapping[str, PoolStatus], settings: Settings, now: float
) -> tuple[list[ResetVm], list[EmitEvent]]:
    """The resets due now, one per node, with an Event on each node."""
    resets: list[ResetVm] = []
    events: list[EmitEvent] = []
    if not (settings.compute_corroboration and settings.reset_silent_vms):
        return resets, events
    for pool, status in sorted(statuses.items()):
        if status.state is not PoolState.UNHEALTHY:
            continue
        holding = {p.node for p in idx.pods_by_pool.get(pool, ()) if p.jobset in idx.managed}
        for node in idx.nodes_by_pool.get(pool, ()):
            why = _due(node, settings, now)
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


def _due(node: Node, settings: Settings, now: float) -> str | None:
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
        return None  # reset during this suspicion: the kubelet is back or the reset failed to fence
    return f"silent since {since:.0f}, Compute Engine reads it RUNNING, its pool is declared unhealthy"
