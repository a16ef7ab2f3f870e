"""Client-side rate limits: a token bucket for every request, and per-item exponential backoff.

- :class:`TokenBucket` is client-go's ``flowcontrol.NewTokenBucketRateLimiter(qps, burst)`` (what
  ``rest.Config.QPS``/``Burst`` configure; client-go's defaults are QPS 5, burst 10, in
  ``k8s.io/client-go/rest/config.go`` ``DefaultQPS``/``DefaultBurst``). The controller uses
  :data:`DEFAULT_QPS`/:data:`DEFAULT_BURST`, kube-controller-manager's ``--kube-api-qps 20`` and
  ``--kube-api-burst 30`` defaults (kubernetes.io/docs/reference/command-line-tools-reference/
  kube-controller-manager): one replica does the work of a small controller manager, and tainting
  a 64-node pool at 5 QPS would take 13 s.
- :class:`ItemBackoff` is client-go's ``util/workqueue`` ``ItemExponentialFailureRateLimiter``
  (``base * 2**failures`` capped at ``max``, forgotten on success) with jitter, and with the
  server's Retry-After as a floor. client-go's controller default (5 ms .. 1000 s) is tuned for
  requeues; here the cap is 8 s so a write that failed during an outage is retried within the
  lease duration + retry period after the API is back. A transport failure (status 0: refused,
  reset, timed out) says nothing about the item, only that the API was unreachable, so it does not
  escalate: the item waits one base step and keeps its count. Otherwise a pool that failed during
  an outage would wait out a backoff grown during the outage (up to 9.6 s) after the API is back.
- Node patches (taints, pool annotations) get their own, short backoff
  (:data:`NODE_PATCH_BACKOFF_MAX_SECONDS`, 1 s, at most 1.2 s with jitter): a pool's taint is the
  one write a failing pool waits for, and it must be retried at the next reconcile tick (2 s by
  default), not after a backoff grown by earlier faults; the cap stays well under T_bad (10 s by
  default). A patch is small and guarded by the node's resourceVersion, so retrying it every tick
  costs the API server little.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

DEFAULT_QPS = 20.0
DEFAULT_BURST = 30
BACKOFF_BASE_SECONDS = 0.25
BACKOFF_MAX_SECONDS = 8.0
NODE_PATCH_BACKOFF_MAX_SECONDS = 1.0
RETRY_AFTER_MAX_SECONDS = 60.0
"""A Retry-After is honoured up to this (a hostile or broken server must not park the controller)."""


class TokenBucket:
    """``qps`` tokens a second, at most ``burst`` saved up; :meth:`take` blocks until one is free."""

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
    """Per-item exponential backoff with jitter; Retry-After is a floor."""

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
