"""Pool health with hysteresis, rebuilt every reconcile from the nodes (and optional pool memory).

A multi-host slice is one unit: one bad node makes the whole pool bad. State that the cluster does not
timestamp by itself (when an untimed problem was first seen, when an unhealthy pool first looked clean,
past declarations for flap damping) lives in annotations the controller writes on every node of the
pool, so a restarted controller or a new leader reaches the same conclusions.

GKE repairs a multi-host pool by recreating it, and fresh Node objects carry none of that state. The
caller may therefore pass a :class:`PoolMemory` (returned by the previous decision): it is used only
for a pool none of whose nodes carries state and none of whose nodes it has seen carrying state, that
is, a pool whose nodes were all replaced. State removed by hand from known nodes still ends the hold.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.actions import PatchNode
from tpu_platform.hotswap.core.model import Node, NodePool, Taint
from tpu_platform.hotswap.core.settings import Settings
from tpu_platform.hotswap.core.timeutil import format_time, format_time_list, parse_time, parse_time_list

OWN_TAINT = Taint(key=k.UNHEALTHY_TAINT_KEY, effect=k.UNHEALTHY_TAINT_EFFECT, value=k.UNHEALTHY_TAINT_VALUE)
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
        for c in node.conditions:
            if c.type == "Ready":
                ready = c
            elif c.status == "True" and c.type in self._conditions:
                out.append(Problem(node.name, c.type, c.last_transition))
        if ready is None:
            out.append(Problem(node.name, "no Ready condition", node.created))
        elif ready.status != "True":
            out.append(Problem(node.name, f"Ready={ready.status}", ready.last_transition))
        renewed = node.lease_renewed
        if self._lease_stale > 0 and renewed is not None and now - renewed >= self._lease_stale:
            out.append(Problem(node.name, "lease not renewed", renewed + self._lease_stale))
        for t in node.taints:
            if t.key in self._taints:
                out.append(Problem(node.name, f"taint {t.key}", t.time_added))
        labels = node.labels
        if labels:
            if labels.get(k.ACTIVE_MAINTENANCE_LABEL) == k.ACTIVE_MAINTENANCE_VALUE:
                out.append(Problem(node.name, "maintenance ongoing", None))
            scheduled = parse_time(labels.get(k.SCHEDULED_MAINTENANCE_LABEL))
            if scheduled is not None and now >= scheduled - self._lead:
                out.append(Problem(node.name, "scheduled maintenance", scheduled - self._lead))
        return out

    def last_change(self, node: Node) -> float:
        """Latest transition of Ready or a watched condition: a clean node has been clean since then."""
        latest = node.created
        for c in node.conditions:
            if (c.type == "Ready" or c.type in self._conditions) and c.last_transition > latest:
                latest = c.last_transition
        return latest


def chips_withdrawn(node: Node) -> bool:
    """The device plugin marked some of the node's TPU chips Unhealthy: allocatable below capacity (the
    kubelet counts only healthy devices as allocatable, kubernetes/kubernetes
    ``pkg/kubelet/cm/devicemanager/manager.go``, ``GetCapacity``). Both zero, as while a restarted
    kubelet waits for the device plugin to register again, is no sign. Nor is this alone proof of a
    failed chip: the kubelet marks every device Unhealthy while its plugin is disconnected
    (``markResourceUnhealthy``), as in a device plugin restart."""
    cap, alloc = node.tpu_capacity, node.tpu_allocatable
    return type(cap) is int and type(alloc) is int and 0 <= alloc < cap


def node_dead_since(node: Node) -> float | None:
    """When the node stopped being Ready (or became unreachable); None while Ready or unknown.

    A Ready node is never dead, however slow: the kubelet is alive and will finish its pods. A stale
    Lease alone does not count either: it may be a kubelet slow to renew.
    """
    ready = node.condition("Ready")
    if ready is None or ready.status == "True":
        return None
    since = ready.last_transition
    for t in node.taints:
        if t.key == k.UNREACHABLE_TAINT and t.time_added is not None and t.time_added < since:
            since = t.time_added
    return since


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
class _Persisted:
    tainted: bool = False
    unhealthy_since: float | None = None
    suspect_since: float | None = None
    clean_since: float | None = None
    reason: str = ""
    history: tuple[float, ...] = ()
    from_memory: bool = False

    @property
    def declared(self) -> bool:
        return self.tainted or self.unhealthy_since is not None


def _carries_state(node: Node) -> bool:
    ann = node.annotations
    return node.has_taint(k.UNHEALTHY_TAINT_KEY) or (
        bool(ann)
        and (
            k.UNHEALTHY_SINCE_ANNOTATION in ann
            or k.UNHEALTHY_HISTORY_ANNOTATION in ann
            or k.CLEAN_SINCE_ANNOTATION in ann
        )
    )


def _recall(st: _Persisted, nodes: Sequence[Node], record: PoolRecord | None) -> _Persisted:
    """The remembered state, if the nodes carry none and all of them are unknown to the record."""
    if record is None or any(_carries_state(n) or node_key(n) in record.nodes for n in nodes):
        return st
    return _Persisted(
        tainted=record.declared,
        unhealthy_since=record.unhealthy_since if record.declared else None,
        suspect_since=st.suspect_since,
        clean_since=record.clean_since if record.declared else None,
        reason=record.reason if record.declared else "",
        history=tuple(sorted(set(st.history) | set(record.history))),
        from_memory=True,
    )


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
    carrying = frozenset(node_key(n) for n in nodes if _carries_state(n))
    return PoolRecord(
        pool=status.name,
        declared=declared,
        unhealthy_since=status.unhealthy_since if declared else None,
        reason=reason if declared else "",
        clean_since=clean_stamp if declared else None,
        history=history,
        nodes=carrying or (previous.nodes if previous is not None else frozenset()),
    )


def _read_state(nodes: Sequence[Node]) -> _Persisted:
    """Merge what the controller wrote on the pool's nodes (they may disagree after a partial write)."""
    st = _Persisted()
    history: set[float] = set()
    for n in nodes:
        if n.has_taint(k.UNHEALTHY_TAINT_KEY):
            st.tainted = True
        ann = n.annotations
        if not ann:
            continue
        t = parse_time(ann.get(k.UNHEALTHY_SINCE_ANNOTATION))
        if t is not None and (st.unhealthy_since is None or t < st.unhealthy_since):
            st.unhealthy_since = t
        t = parse_time(ann.get(k.SUSPECT_SINCE_ANNOTATION))
        if t is not None and (st.suspect_since is None or t < st.suspect_since):
            st.suspect_since = t
        t = parse_time(ann.get(k.CLEAN_SINCE_ANNOTATION))
        if t is not None and (st.clean_since is None or t > st.clean_since):
            st.clean_since = t
        if not st.reason:
            st.reason = ann.get(k.UNHEALTHY_REASON_ANNOTATION, "")
        history.update(parse_time_list(ann.get(k.UNHEALTHY_HISTORY_ANNOTATION)))
    st.history = tuple(sorted(history))
    return st


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
    st = _recall(_read_state(nodes), nodes, record)
    window_start = now - settings.flap_window_seconds
    declared = st.declared
    desired: dict[str, str | None]

    if not declared:
        if not bad:
            status = PoolStatus(pool.name, PoolState.HEALTHY, history=st.history)
            desired = dict.fromkeys(_POOL_STATE_ANNOTATIONS)
            memo = _remember(status, nodes, record, window_start=window_start)
            return status, _patches(nodes, False, {**desired, **extra}, "pool healthy"), memo
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
            return status, _patches(nodes, False, {**desired, **extra}, "pool suspect"), memo
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
        return status, _patches(nodes, True, {**desired, **extra}, "pool unhealthy"), memo

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
        patches = _patches(nodes, True, {**kept, k.CLEAN_SINCE_ANNOTATION: None, **extra}, "pool unhealthy")
        return status, patches, memo

    if st.clean_since is not None:
        stamp = st.clean_since
    elif st.from_memory:
        # Replacement nodes: T_good counts from their own clean (or creation) time, not from now.
        stamp = max(detector.last_change(n) for n in nodes) if nodes else now
    else:
        stamp = now
    clean_since = max([stamp, *(detector.last_change(n) for n in nodes)])
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
        return status, _patches(nodes, False, {**desired, **extra}, "pool recovered"), memo
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
    patches = _patches(
        nodes, True, {**kept, k.CLEAN_SINCE_ANNOTATION: format_time(stamp), **extra}, "pool recovering"
    )
    return status, patches, memo


def _patches(
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
