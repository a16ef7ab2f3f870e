"""Is the VM behind a suspect node confirmed not running? The pure half of corroborated early
force-deletion: the adapter reads Compute Engine into ``Node.instance``, this decides.

A node is *suspect* when it is NotReady/unreachable, or (with ``lease_stale_seconds`` on) its Lease is
stale. Neither proves the VM is down: a slow but live host would run a second copy of a worker against
the same checkpoints if its pods were force-deleted. Compute Engine is the authority on the VM. Its
``Instance.status`` values (https://cloud.google.com/compute/docs/reference/rest/v1/instances, field
``status``; the enum's descriptions in the client library, ``google.cloud.compute_v1.types.Instance.
Status``):

- ``TERMINATED``: "The instance has stopped (either by explicit action or underlying failure)";
- ``STOPPED``: "The instance has stopped successfully";
- ``SUSPENDED``: "The instance has suspended" (the guest is frozen, nothing runs);
- ``REPAIRING``: "The instance is in repair" (Compute Engine took it off its failed host);
- ``DEPROVISIONING``: "The instance is halted and we are performing tear down tasks";
- deleted (``instances.get`` answers 404): ``GONE`` here.

These confirm. ``STOPPING``/``SUSPENDING`` ("currently stopping", "is suspending") do not: the guest
may still be running its shutdown, so its workers may still write. ``RUNNING``, ``PROVISIONING``,
``STAGING`` and anything unknown do not either.

A ``compute.instances.hostError`` operation (zoneOperations.list; "About host events",
https://cloud.google.com/compute/docs/instances/host-maintenance-overview) means the host failed and
the VM was restarted: the guest that ran the pods is gone. It confirms only if it began after the
kubelet's last Lease renewal, i.e. nothing of the node has been heard from since; without a known
renewal time (the Lease not read) a host error confirms nothing, since an old one would be followed by
a new boot whose pods may be running.

A ``reset`` operation ``DONE`` without an error (``instances.reset``, "a hard reset ... the VM does
not do a graceful shutdown", https://cloud.google.com/compute/docs/reference/rest/v1/instances/reset)
confirms if it began after the kubelet's last renewal (or, with the Lease not read, after the
suspicion began): it ended every process of the guest that ran the pods. The controller sends it
itself, on a declared pool (``core/fencing.py``).

A confirmation is not a transient signal, so it also declares the node's pool at once
(:func:`confirmation_problems`): T_bad (``unhealthy_after_seconds``) exists to let a NotReady blip or a
late Lease renewal clear, and a fresh not-running answer read after the suspicion is neither. Fail
fast and the force deletion of the evicted pods then happen in the same reconcile.

Evidence must have been read after the node became suspect and be at most
``instance_evidence_max_age_seconds`` old (:func:`fresh_evidence`). The two times come from different
clocks: the suspicion's start from the cluster's (a node condition's ``lastTransitionTime``, set by the
node lifecycle controller or the kubelet; a Lease's ``renewTime``, the kubelet's), the answer's
``observed`` from the controller's, which may run up to :data:`~tpu_platform.hotswap.core.timeutil.
CLOCK_SKEW_SECONDS` ahead. So an answer counts only if observed at least that skew after the suspicion
began (:func:`read_after_suspicion`): one read before it can then never pass for one read after (a
controller clock behind the cluster's only makes the wait longer). No evidence (an API error, a slow
answer) confirms nothing.
Fresh evidence that the VM runs also vetoes the NotReady timer (``known_running``): a kubelet silent for
longer than NotReady + ``dead_node_confirm_seconds`` on a live VM would otherwise lose its pods while
their containers still run. Without fresh evidence the timer applies as without corroboration.
"""

from __future__ import annotations

from collections.abc import Iterable

from tpu_platform.hotswap.core.health import Problem, node_dead_since
from tpu_platform.hotswap.core.model import Node
from tpu_platform.hotswap.core.settings import Settings
from tpu_platform.hotswap.core.timeutil import CLOCK_SKEW_SECONDS

GONE = "GONE"
"""``Instance.status`` stand-in for a VM that ``instances.get`` no longer finds (HTTP 404)."""

NOT_RUNNING = frozenset({"TERMINATED", "STOPPED", "SUSPENDED", "REPAIRING", "DEPROVISIONING", GONE})
"""Statuses under which no guest of the VM runs (see the module docstring for each source)."""


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
    NotReady + ``dead_node_confirm_seconds`` is the case this fences (measured by bench/mttr.py)."""
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
