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

_MAX_NAME = 253


def jobset_rejection(js: JobSet) -> Rejection | None:
    """Why the core must leave this JobSet alone, or None."""
    if js.rejection is not None:
        return js.rejection
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
    if not isinstance(p.priority, int) or not inputs.INT32_MIN <= p.priority <= inputs.INT32_MAX:
        return Rejection("Pod", p.namespace, p.name, p.uid, "priority", f"{p.priority!r} is not an int32")
    for name, t in (
        ("creation-time", p.created),
        ("start-time", p.started),
        ("unschedulable-since", p.unschedulable_since),
        ("deletion-time", p.deletion_timestamp),
    ):
        if t is not None and not math.isfinite(t):
            return Rejection("Pod", p.namespace, p.name, p.uid, name, f"{t!r} is not a finite time")
    if p.jobset is not None and len(p.jobset) > 2 * _MAX_NAME + 1:
        return Rejection("Pod", p.namespace, p.name, p.uid, "jobset-name", "JobSet name too long")
    return None


def as_occupant(p: Pod) -> Pod:
    """A refused pod kept only for what it occupies: no JobSet, the highest priority (so no rule
    takes its pool for lower-priority work), finite times."""

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
    )
