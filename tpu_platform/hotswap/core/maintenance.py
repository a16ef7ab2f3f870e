"""Maintenance-aware moves: managed work leaves a slice before its scheduled maintenance, at a
checkpoint the workload was asked for, instead of being drained by GKE when the window opens.

From GKE's ``scheduled-maintenance-time`` label the controller asks each managed JobSet on the pool
for a checkpoint, then declares the pool (moving the work) once all answered or at the deadline.
Everything is read back from the cluster. The protocol and its sources: docs/hotswap-core.md,
"maintenance.py".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.actions import AnnotateJobSet, EmitEvent
from tpu_platform.hotswap.core.index import ClusterIndex
from tpu_platform.hotswap.core.model import JobSet, Node
from tpu_platform.hotswap.core.pool_health import PoolStatus, Problem
from tpu_platform.hotswap.core.settings import Settings
from tpu_platform.hotswap.core.times import CLOCK_SKEW_SECONDS, format_time, parse_time

MOVE_REASON = "maintenance move"
"""Reason of the pool problem that moves the work (``PoolStatus.problems``)."""
# CLOCK_SKEW_SECONDS (core/times.py): a request or completion later than now by more than this is
# ignored (core/screening.py reports it), as every time read from the cluster.
ROUNDING_SECONDS = 1e-3
"""Times round-trip through RFC 3339 with microseconds; a request made exactly at the request time
must still count after that."""
MAX_REQUEST_POOLS = 64


def window_start(node: Node) -> float | None:
    """The node's scheduled-maintenance window start (epoch seconds), or None: absent, unparsable,
    non-finite or outside 1970..9999 (``times.parse_time`` bounds the text to 64 characters)."""
    labels = node.labels
    return parse_time(labels.get(k.SCHEDULED_MAINTENANCE_LABEL)) if labels else None


def pool_window(nodes: Iterable[Node]) -> float | None:
    """The earliest window start among a pool's nodes: the slice is one unit."""
    times = [t for t in (window_start(n) for n in nodes) if t is not None]
    return min(times) if times else None


def pool_windows(idx: ClusterIndex) -> dict[str, float]:
    """Pool name -> its window start, for the pools that have one; computed once per reconcile, since
    both the protocol and the victim choice read it (most nodes carry no notice)."""
    out: dict[str, float] = {}
    for name, nodes in idx.nodes_by_pool.items():
        if any(n.labels and k.SCHEDULED_MAINTENANCE_LABEL in n.labels for n in nodes):
            w = pool_window(nodes)
            if w is not None:
                out[name] = w
    return out


def request_at(window: float, settings: Settings) -> float:
    """When the checkpoint is asked for."""
    return deadline(window, settings) - settings.maintenance_checkpoint_seconds


def deadline(window: float, settings: Settings) -> float:
    """When the work is moved whether or not the workload answered."""
    return window - settings.maintenance_move_lead_seconds


def next_wake(nodes: Iterable[Node], settings: Settings, now: float) -> float | None:
    """The next moment a maintenance notice asks for a decision (a request time or a deadline still
    ahead), for callers that otherwise reconcile only on change (e.g. a simulator)."""
    if not settings.maintenance_moves:
        return None
    best: float | None = None
    for n in nodes:
        w = window_start(n)
        if w is None:
            continue
        for t in (request_at(w, settings), deadline(w, settings)):
            if t > now and (best is None or t < best):
                best = t
    return best


def avoided_pools(
    idx: ClusterIndex, settings: Settings, now: float, *, windows: Mapping[str, float] | None = None
) -> frozenset[str]:
    """Pools whose window starts within ``maintenance_avoid_seconds``: not a destination.
    ``windows`` is :func:`pool_windows` of ``idx`` when the caller has it already."""
    if not settings.maintenance_moves or settings.maintenance_avoid_seconds <= 0:
        return frozenset()
    found = pool_windows(idx) if windows is None else windows
    return frozenset(name for name, w in found.items() if w - now < settings.maintenance_avoid_seconds)


@dataclass(frozen=True, slots=True)
class Answer:
    """The protocol's state on one JobSet."""

    requested: float | None
    """A request valid for this window (made at or after its request time), or None."""
    completed: float | None
    """A valid answer to that request, or None."""


def read_answer(js: JobSet, since: float, now: float, pool: str | None = None) -> Answer:
    """The request on ``js`` if made at or after ``since`` (this window's request time), not in the
    future and (with ``pool``) naming that pool, and the workload's answer if it is a time between
    the request and now, each within
    :data:`CLOCK_SKEW_SECONDS` (the workload writes with its own clock, maybe in whole seconds)."""
    ann = js.annotations
    requested = parse_time(ann.get(k.CHECKPOINT_REQUESTED_AT_ANNOTATION)) if ann else None
    if requested is None or requested < since - ROUNDING_SECONDS or requested > now + CLOCK_SKEW_SECONDS:
        return Answer(None, None)
    if pool is not None:
        named = ann.get(k.CHECKPOINT_REQUEST_POOLS_ANNOTATION, "")[: MAX_REQUEST_POOLS * 64].split(",")
        if pool not in (p.strip() for p in named[:MAX_REQUEST_POOLS]):
            return Answer(None, None)
    completed = parse_time(ann.get(k.CHECKPOINT_COMPLETED_AT_ANNOTATION))
    if (
        completed is None
        or completed < requested - CLOCK_SKEW_SECONDS
        or completed > now + CLOCK_SKEW_SECONDS
    ):
        return Answer(requested, None)
    return Answer(requested, completed)


@dataclass(slots=True)
class MaintenancePlan:
    annotations: list[AnnotateJobSet] = field(default_factory=list)
    events: list[EmitEvent] = field(default_factory=list)
    problems: dict[str, list[Problem]] = field(default_factory=dict)
    """Node name -> the move problem, for every node of a pool whose move is due."""
    moving: set[str] = field(default_factory=set)
    """Pools whose move is due."""
    notes: list[str] = field(default_factory=list)
    windows: dict[str, float] = field(default_factory=dict)
    """:func:`pool_windows` of the index (empty with moves off)."""


def plan_maintenance(idx: ClusterIndex, settings: Settings, now: float) -> MaintenancePlan:
    """Checkpoint requests to write and pools whose move is due (docs/hotswap-core.md, "maintenance.py")."""
    plan = MaintenancePlan()
    if not settings.maintenance_moves:
        return plan
    asking: set[str] = set()
    """JobSets to ask (again): one of their pools has no valid request."""
    bound: dict[str, tuple[JobSet, float, list[str]]] = {}
    """Every JobSet on a pool past its request time: the earliest deadline, and all those pools (a new
    request names them all, so no pool's request undoes another's)."""
    plan.windows = pool_windows(idx)
    for name, w in plan.windows.items():
        nodes = idx.nodes_by_pool[name]
        asked_from, due_at = request_at(w, settings), deadline(w, settings)
        if now < asked_from:
            continue
        occupants = _managed_occupants(idx, name)
        answers: list[float] = []
        waiting = False
        for js in occupants:
            prev = bound.get(js.key)
            bound[js.key] = (js, min(due_at, prev[1]), [*prev[2], name]) if prev else (js, due_at, [name])
            answer = read_answer(js, asked_from, now, name)
            if answer.requested is None:
                asking.add(js.key)
                waiting = True
            elif answer.completed is None:
                waiting = True
                _note_ignored(js, plan.notes)
            else:
                answers.append(answer.completed)
        held = any(n.has_taint(k.UNHEALTHY_TAINT_KEY) for n in nodes)
        if now >= due_at:
            since, why = due_at, "deadline reached"
        elif occupants and not waiting:
            # An answer within the clock skew ahead counts as written now.
            since, why = min(max(answers), now), "checkpoint written"
        elif not occupants and held:
            since, why = asked_from, "slice kept free"
        else:
            continue
        plan.moving.add(name)
        reason = f"{MOVE_REASON} ({why}; window {format_time(w)})"
        for n in nodes:
            plan.problems.setdefault(n.name, []).append(
                Problem(n.name, reason, since - settings.unhealthy_after_seconds)
            )
    for key in sorted(asking):
        js, due_at, pools = bound[key]
        _request(js, sorted(set(pools)), due_at, now, plan)
    return plan


def _managed_occupants(idx: ClusterIndex, pool: str) -> list[JobSet]:
    """Managed, admitted JobSets with a running (bound, not terminating) TPU pod on ``pool``."""
    keys = sorted(
        {
            p.jobset
            for p in idx.pods_by_pool.get(pool, ())
            if p.jobset is not None and p.jobset in idx.managed and p.uses_accelerator and not p.terminating
        }
    )
    out = []
    for key in keys:
        js = idx.jobsets[key]
        if not js.suspended and not js.finished:
            out.append(js)
    return out


def _note_ignored(js: JobSet, notes: list[str]) -> None:
    text = js.annotations.get(k.CHECKPOINT_COMPLETED_AT_ANNOTATION)
    if text:
        notes.append(
            f"{js.key}: {k.CHECKPOINT_COMPLETED_AT_ANNOTATION}={text[:40]!r} ignored "
            "(not a time between the request and now)"
        )


def _request(js: JobSet, pools: Sequence[str], due_at: float, now: float, plan: MaintenancePlan) -> None:
    named = ",".join(pools[:MAX_REQUEST_POOLS])
    why = f"scheduled maintenance on node pool(s) {named}; moving at {format_time(due_at)} at the latest"
    plan.annotations.append(
        AnnotateJobSet(
            namespace=js.namespace,
            name=js.name,
            uid=js.uid,
            annotations=(
                (k.CHECKPOINT_DEADLINE_ANNOTATION, format_time(due_at)),
                (k.CHECKPOINT_REQUEST_POOLS_ANNOTATION, named),
                (k.CHECKPOINT_REQUEST_REASON_ANNOTATION, why),
                (k.CHECKPOINT_REQUESTED_AT_ANNOTATION, format_time(now)),
            ),
            reason=why,
        )
    )
    plan.events.append(
        EmitEvent.on_jobset(
            js,
            "Normal",
            "HotswapCheckpointRequested",
            f"Checkpoint requested: {why}; answer with {k.CHECKPOINT_COMPLETED_AT_ANNOTATION}",
            "RequestCheckpoint",
        )
    )


def moving_pools(statuses: Iterable[PoolStatus]) -> frozenset[str]:
    """Pools of a decision whose status carries the move problem (for callers that label moves)."""
    return frozenset(s.name for s in statuses if any(p.reason.startswith(MOVE_REASON) for p in s.problems))
