"""Pool health: a slice's problems, its state with hysteresis, and the state kept on its nodes.

A multi-host slice is one unit: one bad node makes the whole pool bad. The state is rebuilt every
reconcile from the nodes (where the controller keeps what the cluster does not timestamp) and, for a
pool whose nodes were all recreated, from the optional pool memory. Also here: when a terminating
pod still counts as leaving its pool. Reasoning: docs/hotswap-core.md, "pool_health.py".
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.actions import PatchNode
from tpu_platform.hotswap.core.constants import Taint
from tpu_platform.hotswap.core.model import Node, NodePool, Pod
from tpu_platform.hotswap.core.settings import Settings
from tpu_platform.hotswap.core.times import (
    CLOCK_SKEW_SECONDS,
    accepted,
    bounded,
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
    times.accepted` with the node's creation, if within bounds, as ``not_before``)."""
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


# --- the state kept on the pool's nodes (and in pool memory), read back within bounds ---------

OWN_TAINT = Taint(key=k.UNHEALTHY_TAINT_KEY, effect=k.UNHEALTHY_TAINT_EFFECT, value=k.UNHEALTHY_TAINT_VALUE)
Refusal = tuple[Node, str, str]
"""A stored time left out: the node carrying it, the field (a stable reason code) and why."""


def node_key(node: Node) -> str:
    """Identity of one Node object: a recreated node gets a new uid (or creation time) under its name."""
    return node.uid or f"{node.name}@{node.created!r}"


@dataclass(frozen=True, slots=True)
class PoolRecord:
    """What the controller last wrote on one pool's nodes, kept so node re-creation does not erase it."""

    pool: str
    declared: bool = False
    unhealthy_since: float | None = None
    reason: str = ""
    clean_since: float | None = None
    history: tuple[float, ...] = ()
    """Declaration times within the flap window, oldest first."""
    nodes: frozenset[str] = frozenset()
    """Keys (:func:`node_key`) of nodes seen carrying this state: their loss of it is not a re-creation."""


@dataclass(frozen=True, slots=True)
class PoolMemory:
    """Immutable pool memory, one record per pool, sorted by pool name. Empty: nodes alone decide."""

    records: tuple[PoolRecord, ...] = ()
    _by_pool: Mapping[str, PoolRecord] = field(default_factory=dict, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_pool", {r.pool: r for r in self.records})

    @classmethod
    def of(cls, records: Iterable[PoolRecord]) -> PoolMemory:
        return cls(tuple(sorted(records, key=lambda r: r.pool)))

    def get(self, pool: str) -> PoolRecord | None:
        return self._by_pool.get(pool)


@dataclass(slots=True)
class Persisted:
    tainted: bool = False
    unhealthy_since: float | None = None
    suspect_since: float | None = None
    clean_since: float | None = None
    reason: str = ""
    history: tuple[float, ...] = ()
    from_memory: bool = False
    marked: bool = False
    """An ``unhealthy-since`` is stored but its time was refused: declared, since unknown (now)."""

    @property
    def declared(self) -> bool:
        return self.tainted or self.unhealthy_since is not None or self.marked


def carries_state(node: Node) -> bool:
    ann = node.annotations
    return node.has_taint(k.UNHEALTHY_TAINT_KEY) or (
        bool(ann)
        and (
            k.UNHEALTHY_SINCE_ANNOTATION in ann
            or k.UNHEALTHY_HISTORY_ANNOTATION in ann
            or k.CLEAN_SINCE_ANNOTATION in ann
        )
    )


def recall(st: Persisted, nodes: Sequence[Node], record: PoolRecord | None, now: float) -> Persisted:
    """The remembered state, if the nodes carry none and all of them are unknown to the record. The
    record is the controller's own, but read within the same bounds as the nodes (a clock that
    jumped back must not hold a pool either)."""
    if record is None or any(carries_state(n) or node_key(n) in record.nodes for n in nodes):
        return st
    declared = record.declared
    return Persisted(
        tainted=declared,
        unhealthy_since=bounded(record.unhealthy_since, now) if declared else None,
        suspect_since=st.suspect_since,
        clean_since=bounded(record.clean_since, now) if declared else None,
        reason=record.reason if declared else "",
        history=tuple(sorted(set(st.history) | {t for t in record.history if accepted(t, now)})),
        from_memory=True,
    )


STATE_TIMES = (
    k.UNHEALTHY_SINCE_ANNOTATION,
    k.SUSPECT_SINCE_ANNOTATION,
    k.CLEAN_SINCE_ANNOTATION,
    k.UNHEALTHY_HISTORY_ANNOTATION,
)
"""The stored annotations that hold times."""


def _stored(ann: Mapping[str, str], key: str) -> tuple[float | None, str]:
    text = ann.get(key)
    return (None, "") if text is None else (parse_time(text), text[:40])


def read_state(nodes: Sequence[Node], now: float, refused: list[Refusal] | None = None) -> Persisted:
    """Merge what the controller wrote on the pool's nodes (they may disagree after a partial write),
    leaving out (and adding to ``refused``) every time outside its bounds. A time counts if no later
    than now + skew and, where an earlier one would skip a wait, no earlier than the controller could
    have written it. Left out, each extends nothing:

    - ``unhealthy-since``: counts as now (the pool stays declared: a write of the annotation may have
      gone through without the taint's); it bounds no clean-since below.
    - ``suspect-since``: the suspect clock starts now; also refused before the pool's oldest node was
      created (that would skip T_bad).
    - ``clean-since``: the clean clock starts now; also refused when more than the skew before
      ``unhealthy-since`` (an older one would recover the pool early).
    - ``unhealthy-history``: the entry is dropped (a future one would keep the pool flapping).
    """
    st = Persisted()
    out: list[Refusal] = refused if refused is not None else []
    late = now + CLOCK_SKEW_SECONDS
    history: set[float] = set()
    suspects: list[tuple[Node, float, str]] = []
    cleans: list[tuple[Node, float, str]] = []
    for n in nodes:
        if n.has_taint(k.UNHEALTHY_TAINT_KEY):
            st.tainted = True
        ann = n.annotations
        if not ann:
            continue
        t, text = _stored(ann, k.UNHEALTHY_SINCE_ANNOTATION)
        if t is not None:
            if t > late:
                st.marked = True
                out.append((n, "unhealthy-since", f"{text!r} is later than now + {CLOCK_SKEW_SECONDS:g}s"))
            elif st.unhealthy_since is None or t < st.unhealthy_since:
                st.unhealthy_since = t
        t, text = _stored(ann, k.SUSPECT_SINCE_ANNOTATION)
        if t is not None:
            suspects.append((n, t, text))
        t, text = _stored(ann, k.CLEAN_SINCE_ANNOTATION)
        if t is not None:
            cleans.append((n, t, text))
        if not st.reason:
            st.reason = ann.get(k.UNHEALTHY_REASON_ANNOTATION, "")
        stored = parse_time_list_bounded(ann.get(k.UNHEALTHY_HISTORY_ANNOTATION), late)
        history.update(stored[0])
        if stored[1]:
            out.append(
                (n, "unhealthy-history", f"{stored[1]} entry(ies) later than now + {CLOCK_SKEW_SECONDS:g}s")
            )
    st.history = tuple(sorted(history))
    if suspects:
        created = [n.created for n in nodes if n.created > 0 and accepted(n.created, now)]
        oldest = min(created) if created else None
        for n, t, text in suspects:
            if not accepted(t, now, oldest):
                why = "later than now" if t > late else "earlier than the pool's oldest node"
                out.append((n, "suspect-since", f"{text!r} is {why} (+/- {CLOCK_SKEW_SECONDS:g}s)"))
            elif st.suspect_since is None or t < st.suspect_since:
                st.suspect_since = t
    for n, t, text in cleans:
        if not accepted(t, now, st.unhealthy_since):
            why = "later than now" if t > late else "earlier than the declaration (unhealthy-since)"
            out.append((n, "clean-since", f"{text!r} is {why} (+/- {CLOCK_SKEW_SECONDS:g}s)"))
        elif st.clean_since is None or t > st.clean_since:
            st.clean_since = t
    return st


def parse_time_list_bounded(text: str | None, latest: float) -> tuple[list[float], int]:
    """The times of a comma-separated list no later than ``latest``, and how many were later
    (unparsable items are dropped, as :func:`~tpu_platform.hotswap.core.times.parse_time_list`)."""
    if not text:
        return [], 0
    kept: list[float] = []
    late = 0
    for item in text.split(","):
        t = parse_time(item)
        if t is None:
            continue
        if t > latest:
            late += 1
        else:
            kept.append(t)
    return kept, late


def node_patches(
    nodes: Sequence[Node], want_taint: bool, desired: dict[str, str | None], reason: str
) -> list[PatchNode]:
    """Per-node diffs against the desired taint and annotations; nodes already in line get none."""
    sets = sorted((key, v) for key, v in desired.items() if v is not None)
    removes = sorted(key for key, v in desired.items() if v is None)
    out = []
    for n in nodes:
        has = n.has_taint(k.UNHEALTHY_TAINT_KEY)
        ann = n.annotations
        if not sets and not has and not want_taint and (not ann or not any(key in ann for key in removes)):
            continue
        set_ann = tuple((key, v) for key, v in sets if ann.get(key) != v)
        rm_ann = tuple(key for key in removes if key in ann)
        add = (OWN_TAINT,) if want_taint and not has else ()
        rm = (k.UNHEALTHY_TAINT_KEY,) if has and not want_taint else ()
        if set_ann or rm_ann or add or rm:
            out.append(
                PatchNode(
                    node=n.name,
                    pool=n.pool,
                    add_taints=add,
                    remove_taints=rm,
                    set_annotations=set_ann,
                    remove_annotations=rm_ann,
                    reason=reason,
                )
            )
    return out


# --- the pool's state now ------------------------------------------------------------------------


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


@dataclass(frozen=True, slots=True)
class _Findings:
    """A pool's problems now, and what dates them."""

    problems: tuple[Problem, ...]
    timed: tuple[float, ...]
    """Each node's earliest dated problem, and each dated pool problem."""
    untimed: bool
    """Some problem carries no time of its own: the suspect clock dates it."""
    confirmed: bool
    """Some problem is confirmed already: no T_bad wait."""


def _findings(
    pool: NodePool,
    nodes: Sequence[Node],
    node_problems: Mapping[str, Sequence[Problem]],
    pool_problems: Sequence[Problem],
) -> _Findings:
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
    return _Findings(tuple(problems), tuple(timed), untimed, confirmed)


@dataclass(frozen=True, slots=True)
class _Outcome:
    """A pool's status and the state its nodes must carry for it (tainted exactly while declared)."""

    status: PoolStatus
    annotations: dict[str, str | None]
    """The controller's annotations: a value to set, or None to remove."""
    patch_reason: str
    memo_reason: str = ""
    """The declaration's reason, for the pool memory."""
    clean_stamp: float | None = None
    """The clean-since written, for the pool memory."""


def _while_undeclared(
    name: str, found: _Findings, st: Persisted, *, now: float, settings: Settings, window_start: float
) -> _Outcome:
    """Healthy, suspect (a problem younger than T_bad), or declared unhealthy now."""
    if not found.problems:
        status = PoolStatus(name, PoolState.HEALTHY, history=st.history)
        return _Outcome(status, dict.fromkeys(_POOL_STATE_ANNOTATIONS), "pool healthy")
    suspect = (st.suspect_since if st.suspect_since is not None else now) if found.untimed else None
    bad_since = min([*found.timed, *([suspect] if suspect is not None else [])])
    if now - bad_since < settings.unhealthy_after_seconds and not found.confirmed:
        status = PoolStatus(name, PoolState.SUSPECT, found.problems, bad_since=bad_since, history=st.history)
        desired: dict[str, str | None] = {
            k.SUSPECT_SINCE_ANNOTATION: format_time(suspect) if suspect is not None else None,
            k.UNHEALTHY_SINCE_ANNOTATION: None,
            k.CLEAN_SINCE_ANNOTATION: None,
            k.UNHEALTHY_REASON_ANNOTATION: None,
        }
        return _Outcome(status, desired, "pool suspect")
    history = (*(t for t in st.history if t > window_start), now)[-MAX_HISTORY:]
    status = PoolStatus(
        name,
        PoolState.UNHEALTHY,
        found.problems,
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
    return _Outcome(status, desired, "pool unhealthy", memo_reason=status.reason)


def _while_declared(
    name: str,
    nodes: Sequence[Node],
    found: _Findings,
    st: Persisted,
    *,
    now: float,
    settings: Settings,
    detector: ProblemDetector,
    window_start: float,
) -> _Outcome:
    """Still unhealthy, recovering (clean, waiting out T_good or the flapping clean time), or recovered."""
    unhealthy_since = st.unhealthy_since if st.unhealthy_since is not None else now
    history = st.history
    flapping = sum(1 for t in history if t > window_start) >= settings.flap_threshold
    reason = st.reason or summarize(found.problems) or "unhealthy"
    kept: dict[str, str | None] = {
        k.UNHEALTHY_SINCE_ANNOTATION: format_time(unhealthy_since),
        k.UNHEALTHY_REASON_ANNOTATION: reason,
        k.SUSPECT_SINCE_ANNOTATION: None,
    }
    if history:
        kept[k.UNHEALTHY_HISTORY_ANNOTATION] = format_time_list(history)
    if found.problems:
        status = PoolStatus(
            name,
            PoolState.UNHEALTHY,
            found.problems,
            bad_since=min(found.timed) if found.timed else None,
            unhealthy_since=unhealthy_since,
            flapping=flapping,
            history=history,
        )
        return _Outcome(
            status, {**kept, k.CLEAN_SINCE_ANNOTATION: None}, "pool unhealthy", memo_reason=reason
        )
    stamp, clean_since = _clean_clock(st, nodes, detector, now)
    needed = settings.flapping_healthy_after_seconds if flapping else settings.healthy_after_seconds
    if now - clean_since >= needed:
        status = PoolStatus(
            name,
            PoolState.HEALTHY,
            unhealthy_since=unhealthy_since,
            clean_since=clean_since,
            flapping=flapping,
            recovered_now=True,
            history=history,
        )
        return _Outcome(status, dict.fromkeys(_POOL_STATE_ANNOTATIONS), "pool recovered")
    status = PoolStatus(
        name,
        PoolState.RECOVERING,
        unhealthy_since=unhealthy_since,
        clean_since=clean_since,
        flapping=flapping,
        history=history,
        recovers_at=clean_since + needed,
    )
    desired = {**kept, k.CLEAN_SINCE_ANNOTATION: format_time(stamp)}
    return _Outcome(status, desired, "pool recovering", memo_reason=reason, clean_stamp=stamp)


def _clean_clock(
    st: Persisted, nodes: Sequence[Node], detector: ProblemDetector, now: float
) -> tuple[float, float]:
    """(stamp, clean_since) of a declared pool that looks clean: the ``clean-since`` to store, and
    since when the pool has been clean (no earlier than any node's last change)."""
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
    return stamp, max([stamp, *changes])


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
    found = _findings(pool, nodes, node_problems, pool_problems)
    st = recall(read_state(nodes, now), nodes, record, now)
    window_start = now - settings.flap_window_seconds
    if st.declared:
        outcome = _while_declared(
            pool.name,
            nodes,
            found,
            st,
            now=now,
            settings=settings,
            detector=detector,
            window_start=window_start,
        )
    else:
        outcome = _while_undeclared(
            pool.name, found, st, now=now, settings=settings, window_start=window_start
        )
    status = outcome.status
    extra = dict(extra_annotations) if extra_annotations else {}
    patches = node_patches(nodes, status.declared, {**outcome.annotations, **extra}, outcome.patch_reason)
    memo = _remember(
        status,
        nodes,
        record,
        window_start=window_start,
        reason=outcome.memo_reason,
        clean_stamp=outcome.clean_stamp,
    )
    return status, patches, memo


# --- when a terminating pod still counts as leaving its pool -------------------------------------

MAX_DRAIN_GRACE_SECONDS = 120.0
"""Of a pod's grace period, this much at most counts as draining (chosen: Kubernetes' default
grace period is 30 s, GKE gives Spot VMs 30 s of graceful shutdown; shown 30-600 s in the docs). A
longer grace period still runs; the pod just stops holding decisions back after this."""
DELETION_OVERDUE_SECONDS = 30.0
"""After the grace period, the kubelet's kill and the API server's removal take seconds; a pod
still there this long after is held (chosen: three kubelet status updates of 10 s)."""


def still_draining(pod: Pod, now: float) -> bool:
    """``pod`` is terminating and its deletion is not overdue: no later than its deletion request plus
    min(grace period, :data:`MAX_DRAIN_GRACE_SECONDS`) plus :data:`DELETION_OVERDUE_SECONDS`. A pod
    held past that (a tenant's finalizer, a dead node) still occupies its node, but no longer stands
    for a restart in progress (its JobSet failing) nor for capacity on its way (its pool draining)."""
    deadline = pod.deletion_timestamp
    if deadline is None or not math.isfinite(deadline):
        return False
    grace = pod.deletion_grace
    grace = max(0.0, grace) if grace is not None and math.isfinite(grace) else 0.0
    requested = deadline - grace
    return now <= requested + min(grace, MAX_DRAIN_GRACE_SECONDS) + DELETION_OVERDUE_SECONDS
