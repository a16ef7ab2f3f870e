"""Report objects the core left alone because of a refused value: a warning Event on each, and
``hotswap_rejected_inputs_total{kind,reason}``.

The core lists every refusal in every decision, so the reporter remembers what it reported: each
refusal counts once while it lasts, and its Event is repeated at most every :data:`REPEAT_SECONDS`.
Design notes: docs/hotswap-adapter.md, "rejections".
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import replace

from prometheus_client import CollectorRegistry, Counter

from tpu_platform.hotswap.core.actions import EmitEvent, sort_actions
from tpu_platform.hotswap.core.model import Rejection
from tpu_platform.hotswap.core.reconcile import Decision

REPEAT_SECONDS = 600.0
EVENT_REASON = "HotswapInputRejected"
METRIC = "hotswap_rejected_inputs"


def rejection_event(r: Rejection) -> EmitEvent:
    """The warning Event on the refused object: what was refused and what the controller does."""
    message = (
        (
            f"Value ignored by the hotswap controller ({r.reason}): {r.detail}. The object is otherwise "
            "handled as usual; see tpu_platform/hotswap/README.md."
        )
        if r.value_only
        else (
            f"Ignored by the hotswap controller until fixed ({r.reason}): {r.detail}. "
            "It is neither helped nor preempted meanwhile; see tpu_platform/hotswap/README.md."
        )
    )
    return EmitEvent(r.kind, r.namespace, r.name, r.uid, "Warning", EVENT_REASON, message, "Ignore")


class RejectionReporter:
    """One per metrics registry (a registry holds one counter of a name)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.counter = Counter(
            METRIC,
            "Objects left alone because a tenant-written value was refused, by kind and reason.",
            ["kind", "reason"],
            registry=registry,
        )
        self._reported: dict[tuple[str, str, str, str, str], float] = {}
        self._lock = threading.Lock()

    def report(self, decision: Decision) -> Decision:
        """The decision with a warning Event for each refusal that is new or due again."""
        events: list[EmitEvent] = []
        current: dict[tuple[str, str, str, str, str], float] = {}
        with self._lock:
            for r in decision.rejected:
                key = (r.kind, r.namespace, r.name, r.uid, r.reason)
                if key in current:
                    continue
                last = self._reported.get(key)
                if last is None:
                    self.counter.labels(kind=r.kind, reason=r.reason).inc()
                if last is None or decision.now - last >= REPEAT_SECONDS:
                    events.append(rejection_event(r))
                    last = decision.now
                current[key] = last
            self._reported = current
        if not events:
            return decision
        return replace(decision, actions=sort_actions([*decision.actions, *events]))


_REPORTERS: weakref.WeakKeyDictionary[CollectorRegistry, RejectionReporter] = weakref.WeakKeyDictionary()
_REPORTERS_LOCK = threading.Lock()


def report_rejections(decision: Decision, registry: CollectorRegistry) -> Decision:
    """:meth:`RejectionReporter.report` with the reporter of ``registry`` (created on first use)."""
    with _REPORTERS_LOCK:
        reporter = _REPORTERS.get(registry)
        if reporter is None:
            reporter = _REPORTERS[registry] = RejectionReporter(registry)
    return reporter.report(decision)
