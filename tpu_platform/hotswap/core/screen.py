"""Screen a snapshot's tenant-written objects before any rule reads them.

The adapter refuses bad values while converting (and marks the object); a simulator or a test can
build a snapshot directly, so the core checks the same bounds again on the typed values. A refused
JobSet is left out (its pods stay, as occupants that belong to no JobSet: never touched, never
helped, still holding their nodes); a refused pod stays as such an occupant too.
"""

from __future__ import annotations

import math
from dataclasses import replace

from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core import inputs
from tpu_platform.hotswap.core.inputs import InputError, Rejection
from tpu_platform.hotswap.core.model import JobSet, Pod
from tpu_platform.hotswap.core.timeutil import MAX_EPOCH

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
        (not js.topology or inputs.topology_chips(js.topology) > 0)
        and _count_ok(js.slices, 1, inputs.MAX_SLICES)
        and _count_ok(js.priority, inputs.INT32_MIN, inputs.INT32_MAX)
        and _count_ok(js.max_restarts, 0, inputs.MAX_RESTARTS)
        and _count_ok(js.restarts, 0, inputs.MAX_RESTARTS)
        and _epoch_ok(js.created)
        and _epoch_ok(js.running_since)
        and _epoch_ok(js.last_checkpoint)
        and (interval is None or (type(interval) is float and 0.0 < interval <= inputs.MAX_INTERVAL_SECONDS))
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
        inputs.topology(js.topology)
    for name, value, low, high in (
        ("replicas", js.slices, 1, inputs.MAX_SLICES),
        ("priority", js.priority, inputs.INT32_MIN, inputs.INT32_MAX),
        ("max-restarts", js.max_restarts, 0, inputs.MAX_RESTARTS),
        ("restarts", js.restarts, 0, inputs.MAX_RESTARTS),
    ):
        if not isinstance(value, int) or isinstance(value, bool):
            raise InputError(name, f"{value!r} is not an integer")
        inputs.integer(value, reason=name, low=low, high=high)
    for name, t in (
        ("creation-time", js.created),
        ("running-since", js.running_since),
        ("last-checkpoint-time", js.last_checkpoint),
    ):
        inputs.epoch(t, reason=name)
    if js.checkpoint_interval is not None:
        inputs.seconds(js.checkpoint_interval, reason="checkpoint-interval", high=inputs.MAX_INTERVAL_SECONDS)
    inputs.flag(js.annotations.get(k.PREEMPTIBLE_ANNOTATION), reason="preemptible")
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
        and inputs.INT32_MIN <= p.priority <= inputs.INT32_MAX
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
        or not inputs.INT32_MIN <= p.priority <= inputs.INT32_MAX
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
        priority=inputs.INT32_MAX,
        created=finite(p.created) or 0.0,
        started=finite(p.started),
        unschedulable_since=None,
        deletion_timestamp=finite(p.deletion_timestamp),
        terminations=(),
    )
