"""EmitEvent -> events.k8s.io/v1 Event bodies, and the MicroTime format Events and Leases use."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

from tpu_platform.hotswap.adapter.api import JOBSET_GROUP, JOBSET_VERSION, JSON
from tpu_platform.hotswap.core.actions import EmitEvent

CONTROLLER_NAME = "tpu-platform.dev/hotswap"
_API_VERSIONS = {"Node": "v1", "Pod": "v1", "JobSet": f"{JOBSET_GROUP}/{JOBSET_VERSION}"}
_EVENT_SEQUENCE = itertools.count()


def micro_time(t: float) -> str:
    """RFC 3339 with microseconds, as MicroTime fields (Event.eventTime, Lease times) require."""
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def event_name(regarding: str, now: float) -> str:
    """``<object>.<hex nanoseconds>``, as client-go's event recorder names Events
    (``tools/record/event.go``, ``makeEvent``). Not a ``generateName`` of ``<object>.``: the API
    server validates a generateName as a DNS subdomain prefix, where only a trailing ``-`` is
    allowed (apimachinery ``ValidateObjectMeta``, ``maskTrailingDash``), so it rejects that with 422.
    A process-wide sequence keeps two Events of one reconcile on one object apart."""
    return f"{regarding[:200]}.{int(now * 1e9) + next(_EVENT_SEQUENCE):x}"


def event_body(action: EmitEvent, *, identity: str, now: float, node_namespace: str) -> tuple[str, JSON]:
    """(namespace, events.k8s.io/v1 Event) for an EmitEvent."""
    namespace = action.namespace or node_namespace
    regarding: JSON = {
        "apiVersion": _API_VERSIONS.get(action.kind, "v1"),
        "kind": action.kind,
        "name": action.name,
    }
    if action.namespace:
        regarding["namespace"] = action.namespace
    if action.uid:
        regarding["uid"] = action.uid
    body: JSON = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": event_name(action.name, now), "namespace": namespace},
        "eventTime": micro_time(now),
        "reportingController": CONTROLLER_NAME,
        "reportingInstance": identity,
        "action": action.action or action.reason,
        "reason": action.reason,
        "note": action.message[:1024],
        "type": action.type,
        "regarding": regarding,
    }
    return namespace, body
