"""Compute Engine resets of silent VMs: the I/O half of the fence (``tpu_platform.hotswap.core.fencing``
decides which VM, ``core.corroboration`` when a done reset confirms it).

One call, ``InstancesClient.reset`` (https://cloud.google.com/compute/docs/reference/rest/v1/instances/reset;
permission ``compute.instances.reset``), sent with a ``requestId`` derived from the VM and the start of
the node's suspicion: "if you must retry your request, the server will know to ignore the request if it
has already been completed" (the same page, ``requestId``), so a retry, a restarted controller or a new
leader resetting the same silent node sends the same id and the VM is reset once per suspicion. The call
returns the Operation at once; it is not waited for: the evidence cache re-reads the VM, and the reset
confirms only once ``zoneOperations.list`` shows it ``DONE`` (``adapter/compute.py``).

Bounded: ``retry=None`` with a timeout on every call (as for the reads, ``adapter/compute.py``), at most
``max_per_minute`` resets in any 60 s, and a VM already sent a reset is not sent another for
``pending_s``. An error is logged and counted, never retried in the same reconcile.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter

from tpu_platform.hotswap.adapter.compute import DEFAULT_TIMEOUT_S, call_errors, parse_provider_id
from tpu_platform.hotswap.core.actions import ResetVm

log = logging.getLogger("hotswap.vm_reset")

REQUEST_NAMESPACE = uuid.UUID("0e6c3f8a-54c1-4b8e-9d5e-6f1f3b2a7c10")
"""Namespace of the deterministic request ids (UUID v5 of provider ID and suspicion start)."""
SENT = "sent"


class ResetApi(Protocol):
    def reset(self, *, request: dict[str, str], timeout: float, retry: None) -> Any: ...


def request_id(provider_id: str, since: float) -> str:
    """The same id for the same VM and suspicion, from any replica; never the zero UUID."""
    return str(uuid.uuid5(REQUEST_NAMESPACE, f"{provider_id}@{since:.3f}"))


@dataclass(slots=True)
class VmResetter:
    """Sends resets; safe to call from several threads."""

    instances: ResetApi
    clock: Callable[[], float]
    registry: CollectorRegistry | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_per_minute: int = 10
    pending_s: float = 120.0
    sent: dict[str, float] = field(default_factory=dict)
    """provider ID -> when its reset was sent (this process)."""
    _recent: deque[float] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _calls: Counter | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.registry is not None:
            self._calls = Counter(
                "hotswap_vm_resets",
                "Compute Engine instances.reset calls by outcome (sent, skipped_pending, skipped_rate, "
                "bad_provider_id, or the library's exception class name)",
                ["outcome"],
                registry=self.registry,
            )

    def reset(self, action: ResetVm) -> str:
        """Send one reset (unless one is pending or the rate is spent); returns the outcome."""
        ref = parse_provider_id(action.provider_id)
        if ref is None:
            return self._count("bad_provider_id")
        now = self.clock()
        with self._lock:
            at = self.sent.get(action.provider_id)
            if at is not None and now - at < self.pending_s:
                return self._count("skipped_pending")
            while self._recent and now - self._recent[0] >= 60.0:
                self._recent.popleft()
            if len(self._recent) >= self.max_per_minute:
                return self._count("skipped_rate")
            self._recent.append(now)
            self.sent[action.provider_id] = now
        request = {
            "project": ref.project,
            "zone": ref.zone,
            "instance": ref.instance,
            "request_id": request_id(action.provider_id, action.since),
        }
        started = time.monotonic()
        try:
            self.instances.reset(request=request, timeout=self.timeout_s, retry=None)
        except call_errors() as err:
            with self._lock:
                self.sent.pop(action.provider_id, None)
            log.warning(
                "VM reset failed",
                extra={
                    "fields": {"node": action.node, "error": repr(err), "seconds": time.monotonic() - started}
                },
            )
            return self._count(type(err).__name__)
        log.warning("VM reset sent", extra={"fields": {"node": action.node, "reason": action.reason}})
        return self._count(SENT)

    def pending(self, provider_id: str, now: float) -> float | None:
        """When this process sent ``provider_id`` a reset that may still be in flight, else None."""
        with self._lock:
            at = self.sent.get(provider_id)
        return at if at is not None and now - at < self.pending_s else None

    def _count(self, outcome: str) -> str:
        if self._calls is not None:
            self._calls.labels(outcome=outcome).inc()
        return outcome


def google_resetter(
    clock: Callable[[], float], registry: CollectorRegistry, *, endpoint: str = ""
) -> VmResetter:
    """The resetter over Google's client (the same endpoint and credentials as the reads)."""
    from google.cloud import compute_v1

    options = {"api_endpoint": endpoint} if endpoint else None
    return VmResetter(compute_v1.InstancesClient(client_options=options), clock, registry)
