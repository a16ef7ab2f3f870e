"""Pool health with hysteresis, rebuilt every reconcile from the nodes (and optional pool memory).

A multi-host slice is one unit: one bad node makes the whole pool bad. State that the cluster does not
timestamp by itself (when an untimed problem was first seen, when an unhealthy pool first looked clean,
past declarations for flap damping) lives in annotations the controller writes on every node of the
pool, so a restarted controller or a new leader reaches the same conclusions.

GKE repairs a multi-host pool by recreating it, and fresh Node objects carry none of that state. The
caller may therefore pass a :class:`PoolMemory` (returned by the previous decision): it is used only
for a pool none of whose nodes carries state and none of whose nodes it has seen carrying state, that
is, a pool whose nodes were all replaced. State removed by hand from known nodes still ends the hold.

Every time read from a node is bounded (:func:`~tpu_platform.hotswap.core.timeutil.accepted`): a
condition's transition or a taint's ``timeAdded`` later than now + skew, or earlier than the node's
creation, dates nothing (the problem counts from when the controller first saw it, through
``suspect-since``; a clean condition does not move the clean clock); so does a creation time later
than now + skew. The stored state is bounded in :mod:`tpu_platform.hotswap.core.pool_state`.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.actions import PatchNode
from tpu_platform.hotswap.core.model import Node, NodePool
from tpu_platform.hotswap.core.pool_state import (
    OWN_TAINT,
    PoolMemory,
    PoolRecord,
    carries_state,
    node_key,
    node_patches,
    read_state,
    recall,
)
from tpu_platform.hotswap.core.settings import Settings
from tpu_platform.hotswap.core.timeutil import (
    CLOCK_SKEW_SECONDS,
    accepted,
    format_time,
    format_time_list,
    parse_time,
    shown,
)

MAX_HISTORY = 10
MAX_REASON_CHARS = 250


class PoolState(StrEnum):
    HEALTHY = "Healthy"
    SUSPECT = "Suspect"
    """A problem is visible but younger than T_bad: nothing is done yet."""
    UNHEALTHY = "Unhealthy"
    """Declared and still bad: tainted, managed pods are failed fast."""
    RECOVERING = "Recovering"
    """Declared, now clean, waiting out T_good (or the flapping clean time): still tainted."""


@dataclass(frozen=True, slots=True)
class Problem:
    node: str
    """Empty for pool-level problems (an incomplete slice)."""
    reason: str
    since: float | None
    """When the problem started, if the cluster says; None if only the controller can tell."""
    confirmed: bool = False
    """Already confirmed by its own rule (workload reports: repetition or a second source; a suspect
    node whose VM Compute Engine reports not running), so the pool is declared without waiting out
    T_bad, which exists to let one transient signal clear."""


@dataclass(frozen=True, slots=True)
class PoolStatus:
    name: str
    state: PoolState
    problems: tuple[Problem, ...] = ()
    bad_since: float | None = None
    unhealthy_since: float | None = None
    clean_since: float | None = None
    flapping: bool = False
    declared_now: bool = False
    recovered_now: bool = False
    history: tuple[float, ...] = ()
    """Times the pool was declared unhealthy (flap counter), oldest first."""
    recovers_at: float | None = None
    """While recovering: when the pool will be declared healthy if it stays clean."""

    @property
    def declared(self) -> bool:
        return self.state in (PoolState.UNHEALTHY, PoolState.RECOVERING)

    @property
    def usable(self) -> bool:
        """Healthy and not under watch: may host work, give capacity, or lose it to preemption."""
        return self.state is PoolState.HEALTHY

    @property
    def reason(self) -> str:
        return summarize(self.problems)


_POOL_STATE_ANNOTATIONS = (
    k.SUSPECT_SINCE_ANNOTATION,
    k.UNHEALTHY_SINCE_ANNOTATION,
    k.CLEAN_SINCE_ANNOTATION,
    k.UNHEALTHY_REASON_ANNOTATION,
)
"""Everything the controller records on a pool's nodes; a healthy pool carries none of it."""


def summarize(problems: Sequence[Problem]) -> str:
    by_node: dict[str, set[str]] = {}
    for p in problems:
        by_node.setdefault(p.node, set()).add(p.reason)
    parts = [
        f"{node}: {', '.join(sorted(reasons))}" if node else ", ".join(sorted(reasons))
        for node, reasons in sorted(by_node.items())
    ]
    text = "; ".join(parts)
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 3] + "..."


class ProblemDetector:
    """Per-node checks with the configured sets built once per reconcile."""

    __slots__ = ("_conditions", "_lead", "_lease_stale", "_taints")

    def __init__(self, settings: Settings) -> None:
        self._conditions = frozenset(settings.problem_condition_types)
        self._taints = frozenset(
            (
                k.NOT_READY_TAINT,
                k.UNREACHABLE_TAINT,
                k.IMPENDING_TERMINATION_TAINT,
                k.MAINTENANCE_WINDOW_TAINT,
                *settings.problem_taint_keys,
            )
        )
        self._lead = settings.maintenance_lead_seconds
        self._lease_stale = settings.lease_stale_seconds

    def problems(self, node: Node, now: float) -> list[Problem]:
        out: list[Problem] = []
        ready = None
        lo, hi = _window(node, now)
        for c in node.conditions:
            if c.type == "Ready":
                ready = c
            elif c.status == "True" and c.type in self._conditions:
                t = c.last_transition
                out.append(Problem(node.name, c.type, t if lo <= t <= hi else None))
        if ready is None:
            out.append(
                Problem(
                    node.name, "no Ready condition", node.created if _LOWEST <= node.created <= hi else None
                )
            )
        elif ready.status != "True":
            t = ready.last_transition
            out.append(Problem(node.name, f"Ready={ready.status}", t if lo <= t <= hi else None))
        renewed = node.lease_renewed
        if (
            self._lease_stale > 0
            and renewed is not None
            and _LOWEST <= renewed <= hi
            and now - renewed >= self._lease_stale
        ):
            out.append(Problem(node.name, "lease not renewed", renewed + self._lease_stale))
        for taint in node.taints:
            if taint.key in self._taints:
                t_added = taint.time_added
                since = t_added if t_added is not None and lo <= t_added <= hi else None
                out.append(Problem(node.name, f"taint {taint.key}", since))
        labels = node.labels
        if labels:
            if labels.get(k.ACTIVE_MAINTENANCE_LABEL) == k.ACTIVE_MAINTENANCE_VALUE:
                out.append(Problem(node.name, "maintenance ongoing", None))
            scheduled = parse_time(labels.get(k.SCHEDULED_MAINTENANCE_LABEL))
            if scheduled is not None and now >= scheduled - self._lead:
                out.append(Problem(node.name, "scheduled maintenance", scheduled - self._lead))
        return out

    def last_change(self, node: Node, now: float) -> float:
        """Latest transition of Ready or a watched condition (or creation): a clean node has been clean
        since then. Times outside their bounds are left out (0.0 if none is left)."""
        lo, hi = _window(node, now)
        latest = node.created if _LOWEST <= node.created <= hi else 0.0
        for c in node.conditions:
            if c.type == "Ready" or c.type in self._conditions:
                t = c.last_transition
                if lo <= t <= hi and t > latest:
                    latest = t
        return latest

    def refused_times(self, node: Node, now: float) -> list[tuple[str, str]]:
        """(field, why) for each time on ``node`` that these checks leave out (as :meth:`problems` and
        :meth:`last_change` do), for the decision's refusals."""
        hi = now + CLOCK_SKEW_SECONDS
        created, renewed = node.created, node.lease_renewed
        ok = _LOWEST <= created <= hi
        lo = created - CLOCK_SKEW_SECONDS if ok else _LOWEST
        if renewed is not None and not _LOWEST <= renewed <= hi:
            ok = False
        if ok:
            for c in node.conditions:
                if not lo <= c.last_transition <= hi and (c.type == "Ready" or c.type in self._conditions):
                    ok = False
                    break
        if ok:
            for t in node.taints:
                added = t.time_added
                if added is not None and not lo <= added <= hi and t.key in self._taints:
                    ok = False
                    break
        if ok:
            return []
        watched = [c for c in node.conditions if c.type == "Ready" or c.type in self._conditions]
        taints = [t for t in node.taints if t.time_added is not None and t.key in self._taints]
        skew = f"now + {CLOCK_SKEW_SECONDS:g}s"
        span = f"not between the node's creation and {skew}"
        out: list[tuple[str, str]] = []
        if not _LOWEST <= created <= hi:
            out.append(("creation-time", f"creationTimestamp {shown(created)} is later than {skew}"))
        for c in watched:
            if not lo <= c.last_transition <= hi:
                out.append(
                    (
                        "condition-time",
                        f"{c.type[:60]} lastTransitionTime {shown(c.last_transition)} is {span}",
                    )
                )
        for t in taints:
            if not lo <= t.time_added <= hi:  # type: ignore[operator]
                out.append(("taint-time", f"taint {t.key[:80]} timeAdded {shown(t.time_added)} is {span}"))
        if renewed is not None and not _LOWEST <= renewed <= hi:
            out.append(("lease-renew-time", f"Lease renewTime {shown(renewed)} is later than {skew}"))
        return out


_LOWEST = -sys.float_info.max
"""Finite: ``_LOWEST <= t`` fails for -inf (and NaN), as ``t <= hi`` does for inf."""


def _window(node: Node, now: float) -> tuple[float, float]:
    """(lo, hi): a time on ``node`` counts if ``lo <= t <= hi`` (:func:`~tpu_platform.hotswap.core.
    timeutil.accepted` with the node's creation, if within bounds, as ``not_before``)."""
    hi = now + CLOCK_SKEW_SECONDS
    created = node.created
    return (created - CLOCK_SKEW_SECONDS if _LOWEST <= created <= hi else _LOWEST), hi


def _created(node: Node, now: float) -> float | None:
    """The node's creation time, if within bounds: nothing about the node happened before it."""
    return node.created if accepted(node.created, now) else None


def chips_withdrawn(node: Node) -> bool:
    """The device plugin marked some of the node's TPU chips Unhealthy: allocatable below capacity (the
    kubelet counts only healthy devices as allocatable, kubernetes/kubernetes
    ``pkg/kubelet/cm/devicemanager/manager.go``, ``GetCapacity``). Both zero, as while a restarted
    kubelet waits for the device plugin to register again, is no sign. Nor is this alone proof of a
    failed chip: the kubelet marks every device Unhealthy while its plugin is disconnected
    (``markResourceUnhealthy``), as in a device plugin restart."""
    cap, alloc = node.tpu_capacity, node.tpu_allocatable
    return type(cap) is int and type(alloc) is int and 0 <= alloc < cap


def node_dead_since(node: Node, *, now: float | None = None) -> float | None:
    """When the node stopped being Ready (or became unreachable); None while Ready or unknown.

    A Ready node is never dead, however slow: the kubelet is alive and will finish its pods. A stale
    Lease alone does not count either: it may be a kubelet slow to renew. The earliest known of Ready's
    transition and the unreachable taint's ``timeAdded``; a non-finite time is unknown (NaN passed every
    ``now - since`` timer). With ``now``, so is one later than now + skew or earlier than the node's
    creation (for a timer, unknown is never long enough). Without it a later time still only delays
    (not dead long enough, no evidence read after it), but an earlier one passes a timer.
    """
    ready = node.condition("Ready")
    if ready is None or ready.status == "True":
        return None
    late, floor = (math.inf, None) if now is None else (now, _created(node, now))
    times = [ready.last_transition, *(t.time_added for t in node.taints if t.key == k.UNREACHABLE_TAINT)]
    known = [t for t in times if t is not None and accepted(t, late, floor)]
    return min(known) if known else None


def _remember(
    status: PoolStatus,
    nodes: Sequence[Node],
    previous: PoolRecord | None,
    *,
    window_start: float,
    reason: str = "",
    clean_stamp: float | None = None,
) -> PoolRecord | None:
    """The record after this decision: what its node patches write, and which nodes already carry it."""
    history = tuple(t for t in status.history if t > window_start)
    declared = status.declared
    if not declared and not history:
        return None
    carrying = frozenset(node_key(n) for n in nodes if carries_state(n))
    return PoolRecord(
        pool=status.name,
        declared=declared,
        unhealthy_since=status.unhealthy_since if declared else None,
        reason=reason if declared else "",
        clean_since=clean_stamp if declared else None,
        history=history,
        nodes=carrying or (previous.nodes if previous is not None else frozenset()),
    )


def assess_pool(
    pool: NodePool,
    nodes: Sequence[Node],
    *,
    now: float,
    settings: Settings,
    detector: ProblemDetector,
    node_problems: dict[str, list[Problem]],
    record: PoolRecord | None = None,
    pool_problems: Sequence[Problem] = (),
    extra_annotations: Mapping[str, str | None] | None = None,
) -> tuple[PoolStatus, list[PatchNode], PoolRecord | None]:
    """Pool state at ``now``, the node patches that bring the stored state in line with it, and the
    pool's memory record after them.

    ``node_problems`` holds each node's problems (computed once by the caller). ``record`` (the previous
    decision's memory) stands in for the node state only when every node was replaced.
    ``pool_problems`` are problems of the pool as a whole (confirmed workload reports), and
    ``extra_annotations`` other controller state every node of the pool carries whatever its health
    (the workload reports, :mod:`tpu_platform.hotswap.core.workload_signals`).
    """
    problems: list[Problem] = []
    timed: list[float] = []
    untimed = False
    for n in nodes:
        probs = node_problems.get(n.name, ())
        if not probs:
            continue
        problems.extend(probs)
        node_times = [p.since for p in probs if p.since is not None]
        if node_times:
            timed.append(min(node_times))
        else:
            untimed = True
    if len(nodes) < pool.expected_nodes:
        problems.append(Problem("", f"slice incomplete: {len(nodes)}/{pool.expected_nodes} nodes", None))
        untimed = True
    confirmed = any(p.confirmed for p in problems) or any(p.confirmed for p in pool_problems)
    for p in pool_problems:
        problems.append(p)
        if p.since is not None:
            timed.append(p.since)
        else:
            untimed = True
    extra = dict(extra_annotations) if extra_annotations else {}
    bad = bool(problems)
    st = recall(read_state(nodes, now), nodes, record, now)
    window_start = now - settings.flap_window_seconds
    declared = st.declared
    desired: dict[str, str | None]

    if not declared:
        if not bad:
            status = PoolStatus(pool.name, PoolState.HEALTHY, history=st.history)
            desired = dict.fromkeys(_POOL_STATE_ANNOTATIONS)
            memo = _remember(status, nodes, record, window_start=window_start)
            return status, node_patches(nodes, False, {**desired, **extra}, "pool healthy"), memo
        suspect = (st.suspect_since if st.suspect_since is not None else now) if untimed else None
        bad_since = min([*timed, *([suspect] if suspect is not None else [])])
        if now - bad_since < settings.unhealthy_after_seconds and not confirmed:
            status = PoolStatus(
                pool.name, PoolState.SUSPECT, tuple(problems), bad_since=bad_since, history=st.history
            )
            desired = {
                k.SUSPECT_SINCE_ANNOTATION: format_time(suspect) if suspect is not None else None,
                k.UNHEALTHY_SINCE_ANNOTATION: None,
                k.CLEAN_SINCE_ANNOTATION: None,
                k.UNHEALTHY_REASON_ANNOTATION: None,
            }
            memo = _remember(status, nodes, record, window_start=window_start)
            return status, node_patches(nodes, False, {**desired, **extra}, "pool suspect"), memo
        history = (*(t for t in st.history if t > window_start), now)[-MAX_HISTORY:]
        status = PoolStatus(
            pool.name,
            PoolState.UNHEALTHY,
            tuple(problems),
            bad_since=bad_since,
            unhealthy_since=now,
            flapping=len(history) >= settings.flap_threshold,
            declared_now=True,
            history=history,
        )
        desired = {
            k.UNHEALTHY_SINCE_ANNOTATION: format_time(now),
            k.UNHEALTHY_REASON_ANNOTATION: status.reason,
            k.UNHEALTHY_HISTORY_ANNOTATION: format_time_list(history),
            k.SUSPECT_SINCE_ANNOTATION: None,
            k.CLEAN_SINCE_ANNOTATION: None,
        }
        memo = _remember(status, nodes, record, window_start=window_start, reason=status.reason)
        return status, node_patches(nodes, True, {**desired, **extra}, "pool unhealthy"), memo

    unhealthy_since = st.unhealthy_since if st.unhealthy_since is not None else now
    history = st.history
    flapping = sum(1 for t in history if t > window_start) >= settings.flap_threshold
    reason = st.reason or summarize(problems) or "unhealthy"
    kept = {
        k.UNHEALTHY_SINCE_ANNOTATION: format_time(unhealthy_since),
        k.UNHEALTHY_REASON_ANNOTATION: reason,
        k.SUSPECT_SINCE_ANNOTATION: None,
    }
    if history:
        kept[k.UNHEALTHY_HISTORY_ANNOTATION] = format_time_list(history)
    if bad:
        status = PoolStatus(
            pool.name,
            PoolState.UNHEALTHY,
            tuple(problems),
            bad_since=min(timed) if timed else None,
            unhealthy_since=unhealthy_since,
            flapping=flapping,
            history=history,
        )
        memo = _remember(status, nodes, record, window_start=window_start, reason=reason)
        patches = node_patches(
            nodes, True, {**kept, k.CLEAN_SINCE_ANNOTATION: None, **extra}, "pool unhealthy"
        )
        return status, patches, memo

    changes = [detector.last_change(n, now) for n in nodes]
    if st.clean_since is not None:
        stamp = st.clean_since
    elif st.from_memory:
        # Replacement nodes: T_good counts from their own clean (or creation) time, not from now, and
        # never from before the declaration (the pool was bad then).
        stamp = (
            max([*changes, *([] if st.unhealthy_since is None else [st.unhealthy_since])]) if nodes else now
        )
    else:
        stamp = now
    clean_since = max([stamp, *changes])
    needed = settings.flapping_healthy_after_seconds if flapping else settings.healthy_after_seconds
    if now - clean_since >= needed:
        status = PoolStatus(
            pool.name,
            PoolState.HEALTHY,
            unhealthy_since=unhealthy_since,
            clean_since=clean_since,
            flapping=flapping,
            recovered_now=True,
            history=history,
        )
        desired = dict.fromkeys(_POOL_STATE_ANNOTATIONS)
        memo = _remember(status, nodes, record, window_start=window_start)
        return status, node_patches(nodes, False, {**desired, **extra}, "pool recovered"), memo
    status = PoolStatus(
        pool.name,
        PoolState.RECOVERING,
        unhealthy_since=unhealthy_since,
        clean_since=clean_since,
        flapping=flapping,
        history=history,
        recovers_at=clean_since + needed,
    )
    memo = _remember(status, nodes, record, window_start=window_start, reason=reason, clean_stamp=stamp)
    patches = node_patches(
        nodes, True, {**kept, k.CLEAN_SINCE_ANNOTATION: format_time(stamp), **extra}, "pool recovering"
    )
    return status, patches, memo


__all__ = [
    "MAX_HISTORY",
    "MAX_REASON_CHARS",
    "OWN_TAINT",
    "PoolMemory",
    "PoolRecord",
    "PoolState",
    "PoolStatus",
    "Problem",
    "ProblemDetector",
    "assess_pool",
    "chips_withdrawn",
    "node_dead_since",
    "node_key",
    "summarize",
]
