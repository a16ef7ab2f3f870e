"""The client the adapter talks to the API server through, and what every request passes on its way.

- :class:`KubeApi`, the few calls the adapter makes, and :class:`ApiError`, their one error. Bodies are
  plain JSON-ready dicts, so a fake can assert on exactly what would go over the wire;
  :mod:`~tpu_platform.hotswap.adapter.kube` implements it on the official ``kubernetes`` client.
- Client-side rate limits: a token bucket before every request (:class:`TokenBucket`) and per-target
  exponential backoff for failed writes (:class:`ItemBackoff`).
- The lease's write budget: :func:`budgeted` carries the elector's budget from the applier's check to
  the request it admits, which the client checks again after its rate limiter (:func:`write_timeout`).

Standard library only. Design notes: docs/hotswap-adapter.md, "client".
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

JSON = dict[str, Any]

JOBSET_GROUP = "jobset.x-k8s.io"
JOBSET_VERSION = "v1alpha2"


TRANSPORT = 0
"""``ApiError.status`` when no HTTP status came back: refused, reset, timed out, TLS, bad JSON."""


class ApiError(Exception):
    """Any failed API call, and the only error the transport raises.

    ``status`` is the HTTP status, or :data:`TRANSPORT` (0) when there was no usable response.
    ``retry_after`` is the server's Retry-After in seconds (header or Status
    ``details.retryAfterSeconds``), if it sent one. ``cause`` is the Status ``details.causes[].reason``
    list (e.g. ``ResourceVersionTooLarge``), so callers need not parse messages.
    """

    def __init__(
        self,
        status: int,
        reason: str = "",
        body: str = "",
        *,
        retry_after: float | None = None,
        causes: tuple[str, ...] = (),
    ) -> None:
        self.status = status
        self.reason = reason
        self.body = body
        self.retry_after = retry_after
        self.causes = causes
        super().__init__(f"{status} {reason}".strip())

    @property
    def transport(self) -> bool:
        """No HTTP status: the request may or may not have reached the server."""
        return self.status == TRANSPORT

    @property
    def retryable(self) -> bool:
        """Worth retrying later unchanged: transport errors, 429 and 5xx."""
        return self.status in (TRANSPORT, 429) or self.status >= 500


@dataclass(frozen=True, slots=True)
class Resource:
    """A collection to list and watch: cluster-wide, or in ``namespace`` if given."""

    name: str
    """``nodes``, ``pods``, ``jobsets``, ``jobs`` or ``leases``."""
    label_selector: str = ""
    namespace: str = ""
    """Only for namespaced collections read from one namespace (node Leases in kube-node-lease)."""


class KubeApi(Protocol):
    """The writes (``patch_node``, ``patch_jobset``, ``evict_pod``, ``delete_pod``, ``create_event``)
    made inside :func:`budgeted` are checked against the write budget again by the real client as it
    sends them, and time out within it; Lease calls never are. A fake may ignore the budget: the
    applier checks it before every write too."""

    def list_objects(self, resource: Resource) -> tuple[list[JSON], str]:
        """All objects and the list's resourceVersion."""
        ...

    def watch_objects(
        self, resource: Resource, resource_version: str, timeout_seconds: int
    ) -> Iterator[JSON]:
        """Raw watch events ``{"type": ..., "object": {...}}`` from ``resource_version`` on."""
        ...

    def patch_node(self, name: str, patch: list[JSON]) -> None:
        """JSON Patch (RFC 6902) on a Node."""
        ...

    def patch_jobset(self, namespace: str, name: str, patch: JSON) -> None:
        """JSON merge patch on a JobSet."""
        ...

    def evict_pod(self, namespace: str, name: str, body: JSON) -> None:
        """POST a policy/v1 Eviction."""
        ...

    def delete_pod(self, namespace: str, name: str, *, grace_period_seconds: int, uid: str) -> None:
        """DELETE a pod with a grace period and a UID precondition."""
        ...

    def create_event(self, namespace: str, body: JSON) -> None: ...

    def get_lease(self, namespace: str, name: str, *, timeout: float | None = None) -> JSON | None:
        """The Lease, or None if it does not exist."""
        ...

    def create_lease(self, namespace: str, body: JSON, *, timeout: float | None = None) -> JSON: ...

    def replace_lease(self, namespace: str, name: str, body: JSON, *, timeout: float | None = None) -> JSON:
        """PUT with the body's resourceVersion: 409 if someone else updated it first."""
        ...


def micro_time(t: float) -> str:
    """RFC 3339 with microseconds, as MicroTime fields (Event.eventTime, Lease times) require."""
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# --- rate limits ----------------------------------------------------------------------------------
DEFAULT_QPS = 20.0
DEFAULT_BURST = 30
"""kube-controller-manager's ``--kube-api-qps``/``--kube-api-burst`` defaults (client-go's own: 5, 10)."""
BACKOFF_BASE_SECONDS = 0.25
BACKOFF_MAX_SECONDS = 8.0
"""Far under client-go's 1000 s: a write that failed during an outage is retried soon after it."""
NODE_PATCH_BACKOFF_MAX_SECONDS = 1.0
"""A failed taint goes out again at the next reconcile tick, not after a backoff grown by earlier faults."""
RETRY_AFTER_MAX_SECONDS = 60.0
"""A Retry-After is honoured up to this (a hostile or broken server must not park the controller)."""


class TokenBucket:
    """``qps`` tokens a second, at most ``burst`` saved up; :meth:`take` blocks until one is free
    (client-go's ``flowcontrol.NewTokenBucketRateLimiter``)."""

    def __init__(
        self,
        qps: float = DEFAULT_QPS,
        burst: int = DEFAULT_BURST,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError("need qps > 0 and burst >= 1")
        self.qps = qps
        self.burst = burst
        self.clock = clock
        self.sleep = sleep
        self._tokens = float(burst)
        self._at = clock()
        self._lock = threading.Lock()

    def reserve(self) -> float:
        """Take a token now (possibly going into debt) and return how long to wait for it."""
        with self._lock:
            now = self.clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._at) * self.qps)
            self._at = now
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def take(self) -> float:
        """Block until a token is ours; returns the seconds waited."""
        wait = self.reserve()
        if wait > 0:
            self.sleep(wait)
        return wait


@dataclass(slots=True)
class _Item:
    failures: int
    not_before: float


class ItemBackoff:
    """Per-item exponential backoff with jitter; Retry-After is a floor (client-go's
    ``workqueue.ItemExponentialFailureRateLimiter``; a transport failure does not escalate)."""

    def __init__(
        self,
        base: float = BACKOFF_BASE_SECONDS,
        cap: float = BACKOFF_MAX_SECONDS,
        *,
        jitter: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self.base = base
        self.cap = cap
        self.jitter = jitter
        self.clock = clock
        self.rng = rng or random.Random()
        self._items: dict[str, _Item] = {}
        self._lock = threading.Lock()

    def delay(self, failures: int, retry_after: float | None = None) -> float:
        """The wait after ``failures`` consecutive failures (1 = the first)."""
        wait = min(self.cap, self.base * 2 ** max(0, failures - 1))
        wait *= 1.0 + self.jitter * self.rng.random()
        if retry_after is not None:
            wait = max(wait, min(retry_after, RETRY_AFTER_MAX_SECONDS))
        return wait

    def failed(self, key: str, retry_after: float | None = None, *, escalate: bool = True) -> float:
        """Record a failure; returns how long ``key`` now waits. ``escalate=False`` (a transport
        failure) waits one base step and leaves the count as it was."""
        with self._lock:
            item = self._items.get(key)
            known = item.failures if item else 0
            failures = known + 1 if escalate else known
            wait = self.delay(failures if escalate else 1, retry_after)
            self._items[key] = _Item(failures, self.clock() + wait)
            return wait

    def forget(self, key: str) -> None:
        with self._lock:
            self._items.pop(key, None)

    def waiting(self, key: str) -> float:
        """Seconds ``key`` must still wait (0: go)."""
        with self._lock:
            item = self._items.get(key)
            return 0.0 if item is None else max(0.0, item.not_before - self.clock())

    def failures(self, key: str) -> int:
        with self._lock:
            item = self._items.get(key)
            return item.failures if item else 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


# --- the lease's write budget ---------------------------------------------------------------------
WriteBudget = Callable[[], float | None]
"""Seconds a write sent now may take before its client gives up, or None: no write may start."""

_BUDGET: ContextVar[WriteBudget | None] = ContextVar("hotswap_write_budget", default=None)


class OutOfBudget(Exception):
    """A write that was not sent: the budget ran out after the applier's check (while the write
    waited for the rate limiter, say), or too little time was left before the lease could pass."""


@contextmanager
def budgeted(budget: WriteBudget | None) -> Iterator[None]:
    """Writes made inside are sent only while ``budget`` allows and time out within it (None:
    no budget, the client's own timeouts apply). A thread's context is its own, so each writer
    thread binds its own writes."""
    token = _BUDGET.set(budget)
    try:
        yield
    finally:
        _BUDGET.reset(token)


def write_timeout(cap: float) -> float | None:
    """The total timeout for a write sent now: ``min(cap, budget)``; None outside :func:`budgeted`.

    Raises :class:`OutOfBudget` when the bound budget says no write may start."""
    budget = _BUDGET.get()
    if budget is None:
        return None
    seconds = budget()
    if seconds is None:
        raise OutOfBudget("the lease is not held with margin: write not sent")
    return min(cap, seconds)
