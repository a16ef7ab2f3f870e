"""Every time the controller reads from a cluster object is bounded by now + clock skew.

A time later than the snapshot's ``now`` plus :data:`~tpu_platform.hotswap.core.timeutil.
CLOCK_SKEW_SECONDS` was written by a clock far ahead of the controller's, or by hand; believed, it
would hold a state for as long as it says (a ``clean-since`` in 9999 kept a clean pool recovering
until then). Each such time is refused where it is read, so that it extends nothing, and listed in
``Decision.rejected`` as a :class:`~tpu_platform.hotswap.core.inputs.Rejection` with ``value_only``
(the object is still handled) and the field as its reason; the adapter gives each a warning Event and
counts it in ``hotswap_rejected_inputs_total{kind,reason}``. Where an earlier time would skip a wait,
it is bounded from below too. What a refused time does:

On nodes (kind ``Node``; read by :mod:`~tpu_platform.hotswap.core.health`):

- ``creation-time`` (later): dates no problem and no clean time.
- ``condition-time``: a Ready or watched condition's ``lastTransitionTime`` later, or earlier than the
  node's creation: its problem counts from when the controller first saw it (``suspect-since``), and a
  clean transition does not move the clean clock. ``taint-time``: a watched taint's ``timeAdded``, the
  same.
- ``lease-renew-time`` (later): no stale-Lease signal, as without a Lease (the adapter times renewals
  on its own clock, so only a snapshot built otherwise has one).
- ``unhealthy-since``, ``suspect-since``, ``clean-since``, ``unhealthy-history``: the controller's own
  state (:mod:`~tpu_platform.hotswap.core.pool_state`): the clock concerned starts now.
- ``tpu-errors``: an entry later is dropped, and not written back.

On pods: ``creation-time`` later counts as now; ``unschedulable-since`` later as not unschedulable
yet, earlier than the pod's creation as its creation; ``termination-time`` (a failed container's
``finishedAt``) later gives no TPU-error report. On JobSets: ``creation-time`` later counts as now;
``running-since`` later, or earlier than the JobSet's creation, and ``last-checkpoint-time`` later
count as absent (the work at risk counts from the run's start, or the JobSet's creation);
``checkpoint-requested-at`` later is no request (it is made again), ``checkpoint-completed-at`` later
no answer (the move waits for one, or for its deadline), ``preempted-at`` later voids the preemption
record (``core/preemption.py``).

Not bounded by now + skew, on purpose: a pod's ``deletionTimestamp`` (the API server sets it to the
deletion request plus the grace period, so it lies ahead by design; only its presence is read), the
``scheduled-maintenance-time`` label (the notice of a window ahead; a far one asks for nothing before
its request time) and Compute Engine's answers (not the cluster's; only answers observed by now, and at
least the skew after the suspicion began, count: ``core/corroboration.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.health import ProblemDetector
from tpu_platform.hotswap.core.inputs import Rejection
from tpu_platform.hotswap.core.model import JobSet, Node, Pod
from tpu_platform.hotswap.core.pool_state import STATE_TIMES, Refusal, read_state
from tpu_platform.hotswap.core.settings import Settings
from tpu_platform.hotswap.core.tenancy import late_declarations
from tpu_platform.hotswap.core.timeutil import CLOCK_SKEW_SECONDS, accepted, parse_time, shown
from tpu_platform.hotswap.core.workload_signals import MAX_TERMINATIONS, late_reports

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


def _pod_rejection(p: Pod, reason: str, detail: str) -> Rejection:
    return Rejection("Pod", p.namespace, p.name, p.uid, reason, detail, True)


def bounded_pod(pod: Pod, now: float) -> tuple[Pod, list[Rejection]]:
    """``pod`` with its creation and unschedulable times within bounds, and what was refused. Its
    times are finite (:func:`~tpu_platform.hotswap.core.screen.pod_rejection` refuses others)."""
    created, waiting, hi = pod.created, pod.unschedulable_since, now + CLOCK_SKEW_SECONDS
    if created <= hi and (waiting is None or created - CLOCK_SKEW_SECONDS <= waiting <= hi):
        return pod, []
    out: list[Rejection] = []
    changes: dict[str, Any] = {}
    if not accepted(created, now):
        out.append(
            _pod_rejection(
                pod, "creation-time", f"creationTimestamp {shown(created)} is {_LATER}: counted as now"
            )
        )
        created = changes["created"] = now
    if waiting is not None and not accepted(waiting, now):
        why = f"PodScheduled=False lastTransitionTime {shown(waiting)} is {_LATER}: not unschedulable yet"
        out.append(_pod_rejection(pod, "unschedulable-since", why))
        changes["unschedulable_since"] = None
    elif waiting is not None and not accepted(waiting, now, created):
        why = f"PodScheduled=False lastTransitionTime {shown(waiting)} is before the pod's creation: from it"
        out.append(_pod_rejection(pod, "unschedulable-since", why))
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
    return [_pod_rejection(pod, "termination-time", why)]


def bounded_jobset(js: JobSet, now: float, settings: Settings) -> tuple[JobSet, list[Rejection]]:
    """``js`` with its times within bounds, and what was refused. Its times are finite, in 1970..9999
    (:func:`~tpu_platform.hotswap.core.screen.jobset_rejection` refuses others). Annotations the rules
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
