"""Screening of tenant-written values and cluster times, before any rule reads them.

Tenant-written values are parsed within bounds or refused with a reason (:class:`InputError`); a
snapshot's JobSets and pods are checked again on their typed values (a simulator or a test builds
snapshots without the adapter); and every time read from the cluster is bounded by now + clock skew,
each refusal reported as a :class:`~tpu_platform.hotswap.core.model.Rejection`. Reasoning and the
list of bounded fields: docs/hotswap-core.md, "screening.py".
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any, Final

from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.model import (
    MAX_TOPOLOGY_CHIPS,
    MAX_TOPOLOGY_DIM,
    TOPOLOGY_PATTERN,
    JobSet,
    Node,
    Pod,
    Rejection,
    topology_chips,
)
from tpu_platform.hotswap.core.pool_health import STATE_TIMES, ProblemDetector, Refusal, read_state
from tpu_platform.hotswap.core.settings import Settings
from tpu_platform.hotswap.core.tenancy import late_declarations
from tpu_platform.hotswap.core.times import CLOCK_SKEW_SECONDS, MAX_EPOCH, accepted, parse_time, shown
from tpu_platform.hotswap.core.workload_signals import MAX_TERMINATIONS, late_reports

# --- tenant-written values, parsed within bounds --------------------------------------------------

INT32_MIN: Final = -(2**31)
INT32_MAX: Final = 2**31 - 1
MAX_SLICES: Final = 10_000
"""Replicas a JobSet may ask slices for; more is refused rather than believed."""
MAX_RESTARTS: Final = 1_000_000
MAX_INTERVAL_SECONDS: Final = 366 * 86_400.0
"""A checkpoint cadence longer than a year is not a cadence."""
MIN_EPOCH: Final = 0.0
MAX_VALUE_LENGTH: Final = 256
"""Longer annotation values for these keys are refused before any parsing."""


class InputError(ValueError):
    """A tenant-written value was refused. ``reason`` is a short stable code (a metric label)."""

    def __init__(self, reason: str, detail: str) -> None:
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason}: {detail}")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def topology(value: Any, *, reason: str = "topology") -> str:
    """``AxB`` or ``AxBxC`` with each dimension 1..64 and at most 65,536 chips."""
    if not isinstance(value, str) or not topology_chips(value):
        if isinstance(value, str) and len(value) <= 16 and TOPOLOGY_PATTERN.match(value):
            raise InputError(
                reason, f"{value!r} exceeds {MAX_TOPOLOGY_DIM} per dimension or {MAX_TOPOLOGY_CHIPS} chips"
            )
        raise InputError(reason, f"{_short(value)} is not a TPU topology such as '4x4' or '2x2x4'")
    return value


def integer(value: Any, *, reason: str, low: int, high: int, default: int | None = None) -> int:
    """An int (or its decimal string) within ``[low, high]``; ``None`` gives ``default`` if set."""
    if value is None and default is not None:
        return default
    if isinstance(value, bool):
        raise InputError(reason, f"{_short(value)} is not an integer")
    if isinstance(value, str):
        text = value.strip()
        if not re.fullmatch(r"[+-]?[0-9]{1,12}", text):
            raise InputError(reason, f"{_short(value)} is not an integer")
        number = int(text)
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number = int(value)
    else:
        raise InputError(reason, f"{_short(value)} is not an integer")
    if not low <= number <= high:
        raise InputError(reason, f"{number} is outside [{low}, {high}]")
    return number


def seconds(value: Any, *, reason: str, high: float) -> float:
    """A finite number of seconds in ``(0, high]``, given as a number or a decimal string."""
    if isinstance(value, str):
        if len(value) > MAX_VALUE_LENGTH or not re.fullmatch(r"\s*[0-9]+(\.[0-9]+)?\s*", value):
            raise InputError(reason, f"{_short(value)} is not a number of seconds such as '3600'")
        number = float(value)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    else:
        raise InputError(reason, f"{_short(value)} is not a number of seconds")
    if not math.isfinite(number) or not 0.0 < number <= high:
        raise InputError(reason, f"{_short(value)} is outside (0, {high:g}] seconds")
    return number


def epoch(value: float | None, *, reason: str) -> float | None:
    """A time already parsed to epoch seconds: finite and between 1970 and 9999, or refused."""
    if value is None:
        return None
    if not math.isfinite(value) or not MIN_EPOCH <= value <= MAX_EPOCH:
        raise InputError(reason, f"{_short(value)} is not a time between 1970 and 9999")
    return value


def flag(value: str | None, *, reason: str) -> bool | None:
    """``"true"``/``"false"`` (any case); None when absent."""
    if value is None:
        return None
    lowered = value.strip().lower()
    if lowered not in ("true", "false"):
        raise InputError(reason, f"{_short(value)} is not 'true' or 'false'")
    return lowered == "true"


# --- the snapshot's JobSets and pods, checked on their typed values -----------------------------

_MAX_NAME = 253


def _epoch_ok(t: float | None) -> bool:
    return t is None or ((type(t) is float or type(t) is int) and 0.0 <= t <= MAX_EPOCH)


def _finite(t: float | None) -> bool:
    """None or a finite number: ``t - t`` is 0 for those and NaN for NaN and the infinities."""
    return t is None or ((type(t) is float or type(t) is int) and t - t == 0)


def _count_ok(n: object, low: int, high: int) -> bool:
    return type(n) is int and low <= n <= high


def _jobset_ok(js: JobSet) -> bool:
    """The common case, checked cheaply (every JobSet, every reconcile); False sends it to the
    precise check that names the field. NaN fails every comparison, so it never passes here."""
    interval = js.checkpoint_interval
    flag = js.annotations.get(k.PREEMPTIBLE_ANNOTATION)
    return (
        (not js.topology or topology_chips(js.topology) > 0)
        and _count_ok(js.slices, 1, MAX_SLICES)
        and _count_ok(js.priority, INT32_MIN, INT32_MAX)
        and _count_ok(js.max_restarts, 0, MAX_RESTARTS)
        and _count_ok(js.restarts, 0, MAX_RESTARTS)
        and _epoch_ok(js.created)
        and _epoch_ok(js.running_since)
        and _epoch_ok(js.last_checkpoint)
        and (interval is None or (type(interval) is float and 0.0 < interval <= MAX_INTERVAL_SECONDS))
        and (flag is None or (isinstance(flag, str) and flag.strip().lower() in ("true", "false")))
        and 0 < len(js.accelerator) <= 63
    )


def jobset_rejection(js: JobSet) -> Rejection | None:
    """Why the core must leave this JobSet alone, or None."""
    if js.rejection is not None:
        return js.rejection
    if _jobset_ok(js):
        return None
    try:
        _check_jobset(js)
    except InputError as err:
        return Rejection("JobSet", js.namespace, js.name, js.uid, err.reason, err.detail)
    return None


def _check_jobset(js: JobSet) -> None:
    if js.topology:
        topology(js.topology)
    for name, value, low, high in (
        ("replicas", js.slices, 1, MAX_SLICES),
        ("priority", js.priority, INT32_MIN, INT32_MAX),
        ("max-restarts", js.max_restarts, 0, MAX_RESTARTS),
        ("restarts", js.restarts, 0, MAX_RESTARTS),
    ):
        if not isinstance(value, int) or isinstance(value, bool):
            raise InputError(name, f"{value!r} is not an integer")
        integer(value, reason=name, low=low, high=high)
    for name, t in (
        ("creation-time", js.created),
        ("running-since", js.running_since),
        ("last-checkpoint-time", js.last_checkpoint),
    ):
        epoch(t, reason=name)
    if js.checkpoint_interval is not None:
        seconds(js.checkpoint_interval, reason="checkpoint-interval", high=MAX_INTERVAL_SECONDS)
    flag(js.annotations.get(k.PREEMPTIBLE_ANNOTATION), reason="preemptible")
    if not js.accelerator or len(js.accelerator) > 63:
        raise InputError("accelerator", f"{js.accelerator[:60]!r} is not a label value")


def pod_rejection(p: Pod) -> Rejection | None:
    if p.rejection is not None:
        return p.rejection
    return None if _pod_ok(p) else _pod_problem(p)


def _pod_ok(p: Pod) -> bool:
    """The common case, checked cheaply; False sends the pod to :func:`_pod_problem`."""
    return (
        type(p.priority) is int
        and INT32_MIN <= p.priority <= INT32_MAX
        and _finite(p.created)
        and _finite(p.started)
        and _finite(p.unschedulable_since)
        and _finite(p.deletion_timestamp)
        and (p.jobset is None or len(p.jobset) <= 2 * _MAX_NAME + 1)
    )


def _pod_problem(p: Pod) -> Rejection | None:
    if (
        isinstance(p.priority, bool)
        or not isinstance(p.priority, int)
        or not INT32_MIN <= p.priority <= INT32_MAX
    ):
        return Rejection("Pod", p.namespace, p.name, p.uid, "priority", f"{p.priority!r} is not an int32")
    for name, t in (
        ("creation-time", p.created),
        ("start-time", p.started),
        ("unschedulable-since", p.unschedulable_since),
        ("deletion-time", p.deletion_timestamp),
    ):
        if t is not None and (not isinstance(t, int | float) or not math.isfinite(t)):
            return Rejection("Pod", p.namespace, p.name, p.uid, name, f"{t!r} is not a finite time")
    if p.jobset is not None and len(p.jobset) > 2 * _MAX_NAME + 1:
        return Rejection("Pod", p.namespace, p.name, p.uid, "jobset-name", "JobSet name too long")
    return None


def as_occupant(p: Pod) -> Pod:
    """A refused pod kept only for what it occupies: no JobSet, the highest priority (so no rule
    takes its pool for lower-priority work), finite times, and no say in a pool's health (its
    container terminations are dropped)."""

    def finite(t: float | None) -> float | None:
        return t if t is None or math.isfinite(t) else 0.0

    return replace(
        p,
        jobset=None,
        jobset_uid="",
        priority=INT32_MAX,
        created=finite(p.created) or 0.0,
        started=finite(p.started),
        unschedulable_since=None,
        deletion_timestamp=finite(p.deletion_timestamp),
        terminations=(),
    )


# --- times read from the cluster, bounded by now + clock skew ------------------------------------

_LATER = f"later than now + {CLOCK_SKEW_SECONDS:g}s"
_NODE_OUTCOME = {
    "creation-time": "it dates nothing",
    "condition-time": "the problem counts from first sight, a clean transition moves no clock",
    "taint-time": "the problem counts from first sight",
    "lease-renew-time": "no stale-Lease signal from it",
    "unhealthy-since": "counted as now",
    "suspect-since": "ignored (the suspect clock starts now)",
    "clean-since": "ignored (the clean clock starts now)",
    "unhealthy-history": "dropped",
    "tpu-errors": "dropped",
    "tenant-declared": "dropped (it restricts and rate-limits no tenant)",
}
_ANNOTATION = {
    "unhealthy-since": k.UNHEALTHY_SINCE_ANNOTATION,
    "suspect-since": k.SUSPECT_SINCE_ANNOTATION,
    "clean-since": k.CLEAN_SINCE_ANNOTATION,
    "unhealthy-history": k.UNHEALTHY_HISTORY_ANNOTATION,
}


_JOBSET_TIMES = (
    k.CHECKPOINT_REQUESTED_AT_ANNOTATION,
    k.CHECKPOINT_COMPLETED_AT_ANNOTATION,
    k.PREEMPTED_AT_ANNOTATION,
)


def _on_node(node: Node, reason: str, why: str) -> Rejection:
    return Rejection("Node", "", node.name, node.uid, reason, f"{why}: {_NODE_OUTCOME[reason]}", True)


def node_rejections(
    pools: Iterable[Sequence[Node]], now: float, detector: ProblemDetector, settings: Settings
) -> list[Rejection]:
    """The times refused on each pool's nodes (the health rules leave the same ones out)."""
    out: list[Rejection] = []
    refused_times = detector.refused_times
    unhealthy, suspect, clean, history = STATE_TIMES
    errors = k.TPU_ERRORS_ANNOTATION if settings.workload_signals else None
    for nodes in pools:
        stateful = reports = False
        for n in nodes:
            found = refused_times(n, now)
            if found:
                out.extend(_on_node(n, reason, why) for reason, why in found)
            ann = n.annotations
            if ann:
                stateful = stateful or unhealthy in ann or suspect in ann or clean in ann or history in ann
                reports = reports or errors in ann
        if stateful:
            refused: list[Refusal] = []
            read_state(nodes, now, refused)
            out.extend(
                _on_node(n, reason, f"annotation {_ANNOTATION[reason]} {why}") for n, reason, why in refused
            )
        if reports:
            for n in nodes:
                late = late_reports(
                    n.annotations.get(k.TPU_ERRORS_ANNOTATION) if n.annotations else None, now
                )
                if late:
                    why = f"annotation {k.TPU_ERRORS_ANNOTATION}: {late} entry(ies) {_LATER}"
                    out.append(_on_node(n, "tpu-errors", why))
        for n in nodes:
            late = late_declarations(
                n.annotations.get(k.TENANT_DECLARED_ANNOTATION) if n.annotations else None, now
            )
            if late:
                why = f"annotation {k.TENANT_DECLARED_ANNOTATION}: {late} entry(ies) {_LATER}"
                out.append(_on_node(n, "tenant-declared", why))
    return out


def _refused_on_pod(p: Pod, reason: str, detail: str) -> Rejection:
    return Rejection("Pod", p.namespace, p.name, p.uid, reason, detail, True)


def bounded_pod(pod: Pod, now: float) -> tuple[Pod, list[Rejection]]:
    """``pod`` with its creation and unschedulable times within bounds, and what was refused. Its
    times are finite (:func:`pod_rejection` refuses others)."""
    created, waiting, hi = pod.created, pod.unschedulable_since, now + CLOCK_SKEW_SECONDS
    if created <= hi and (waiting is None or created - CLOCK_SKEW_SECONDS <= waiting <= hi):
        return pod, []
    out: list[Rejection] = []
    changes: dict[str, Any] = {}
    if not accepted(created, now):
        out.append(
            _refused_on_pod(
                pod, "creation-time", f"creationTimestamp {shown(created)} is {_LATER}: counted as now"
            )
        )
        created = changes["created"] = now
    if waiting is not None and not accepted(waiting, now):
        why = f"PodScheduled=False lastTransitionTime {shown(waiting)} is {_LATER}: not unschedulable yet"
        out.append(_refused_on_pod(pod, "unschedulable-since", why))
        changes["unschedulable_since"] = None
    elif waiting is not None and not accepted(waiting, now, created):
        why = f"PodScheduled=False lastTransitionTime {shown(waiting)} is before the pod's creation: from it"
        out.append(_refused_on_pod(pod, "unschedulable-since", why))
        changes["unschedulable_since"] = created
    return replace(pod, **changes), out


def termination_rejections(pod: Pod, now: float) -> list[Rejection]:
    """A failed container's ``finishedAt`` later than now + skew: no report from it
    (:func:`~tpu_platform.hotswap.core.workload_signals.assess_pool_signals` drops it)."""
    late = [
        t.container
        for t in pod.terminations[:MAX_TERMINATIONS]
        if t.finished is not None and not accepted(t.finished, now)
    ]
    if not late:
        return []
    why = f"container {late[0][:60]!r} finishedAt is {_LATER}: no TPU-error report from it"
    return [_refused_on_pod(pod, "termination-time", why)]


def bounded_jobset(js: JobSet, now: float, settings: Settings) -> tuple[JobSet, list[Rejection]]:
    """``js`` with its times within bounds, and what was refused. Its times are finite, in 1970..9999
    (:func:`jobset_rejection` refuses others). Annotations the rules
    read are only reported here: :mod:`~tpu_platform.hotswap.core.maintenance` and
    ``core/preemption.py`` apply the same bound."""
    created, run, ann, hi = js.created, js.running_since, js.annotations, now + CLOCK_SKEW_SECONDS
    if (
        created <= hi
        and (run is None or created - CLOCK_SKEW_SECONDS <= run <= hi)
        and (js.last_checkpoint is None or js.last_checkpoint <= hi)
        and not (ann and any(key in ann for key in _JOBSET_TIMES))
    ):
        return js, []
    out: list[Rejection] = []
    changes: dict[str, Any] = {}

    def refuse(reason: str, detail: str) -> None:
        out.append(Rejection("JobSet", js.namespace, js.name, js.uid, reason, detail, True))

    if not accepted(created, now):
        refuse("creation-time", f"creationTimestamp {shown(created)} is {_LATER}: counted as now")
        created = changes["created"] = now
    if run is not None and not accepted(run, now, created):
        refuse("running-since", f"its pods' start {shown(run)} is not between its creation and now: ignored")
        changes["running_since"] = None
    if js.last_checkpoint is not None and not accepted(js.last_checkpoint, now):
        refuse("last-checkpoint-time", f"{shown(js.last_checkpoint)} is {_LATER}: ignored")
        changes["last_checkpoint"] = None
    if ann:
        preempted = settings.preemption and k.PREEMPTED_FOR_ANNOTATION in ann
        for on, key, reason, outcome in (
            (
                settings.maintenance_moves,
                k.CHECKPOINT_REQUESTED_AT_ANNOTATION,
                "checkpoint-requested-at",
                "asked again",
            ),
            (
                settings.maintenance_moves,
                k.CHECKPOINT_COMPLETED_AT_ANNOTATION,
                "checkpoint-completed-at",
                "no answer",
            ),
            (preempted, k.PREEMPTED_AT_ANNOTATION, "preempted-at", "the preemption record is ignored"),
        ):
            if on and key in ann:
                t = parse_time(ann[key])
                if t is not None and not accepted(t, now):
                    refuse(reason, f"annotation {key} {ann[key][:40]!r} is {_LATER}: {outcome}")
    return (replace(js, **changes) if changes else js), out
