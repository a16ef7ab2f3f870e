"""Reflector caches: list, then watch from the list's resourceVersion with bookmarks.

Modelled on client-go's ``tools/cache/reflector.go``:

- Watches ask for ``allowWatchBookmarks``; a BOOKMARK only advances the resourceVersion.
- A watch that ends normally is resumed at once from the last resourceVersion, but a watch that
  lasted under a second and delivered no object (bookmarks do not count) is an error ("very short
  watch" in client-go, which counts bookmarks too), so an API server that closes every watch at
  once, with or without a bookmark, cannot drive a hot loop.
- Failures (of the list, of opening the watch, mid-stream, or an ERROR event) back off
  exponentially with jitter: client-go uses ``NewExponentialBackoffManager(800ms, 30s, 2min, 2.0,
  1.0)``, i.e. 0.8 s doubling, jitter up to +100 % (``tools/cache/reflector.go``, client-go
  v0.34.1). The cap here is 4 s (:data:`BACKOFF_MAX_SECONDS`, at most 8 s with jitter) so that
  after an outage every cache is current again well inside lease duration + retry period (17 s).
  A transport failure (status 0: refused, reset, timed out) does not escalate it: the retry waits
  one initial step (at most 1.6 s with jitter). An outage is a stretch of refused connections, and
  a backoff grown through it would keep the caches stale, so nothing is decided, for up to 8 s
  after the API is back; overload shows as 429/5xx, which keep escalating.
- A watch that delivered an object resets the backoff (:meth:`Backoff.reset`): the server was
  healthy enough to stream, so the failure that follows waits one initial step, not a step grown
  by failures from before it. client-go resets only when no backoff was taken for 2 min
  (``exponentialBackoffManagerImpl.getNextBackoff`` in apimachinery ``pkg/util/wait/backoff.go``
  v0.34.1; the reflector never resets it itself), so under a steady trickle of faults its backoff
  stays near the cap while its watches work; this reset is the deliberate difference. It cannot
  drive a hot loop: each reset needs a watch that opened and streamed an object. An ERROR event
  (410 on a compacted resourceVersion, say) proves nothing: it neither resets the backoff nor the
  failure count, so a relist that keeps failing after a compaction still makes the cache stale.
- A cache that went stale through failures (after an outage, say) lists again on its next
  attempt instead of resuming the watch, and a successful list makes it fresh at once: a quiet
  watch could otherwise stay open for a bookmark period (about a minute) before it proves the
  cache current. client-go likewise lists again after a watch that ended in an error.
- A cache given ``stale_retry_seconds`` (the node caches, see ``adapter/needs.py``: every taint
  reads them) retries at most that long after it went stale, with jitter (between half and all of
  it), however far the backoff had grown. client-go's reflector keeps its one exponential backoff
  (0.8 s doubling to 30 s, above) whether or not its store is current, because an informer's
  handlers keep running on the last state. Here a stale node cache withholds every taint, and
  right after an outage the API's first answers are often 429/5xx: a backoff escalated by them
  (5.7 s after 500, 503, 429 in a row) kept the node cache stale for about 10 s, past the
  lease duration + retry period the controller must act within. A LIST of TPU nodes (selected by
  label, a few hundred objects at most) costs the API server little, and a 429 still waits its
  own step: the wait never drops below half of ``stale_retry_seconds``.
- ``410 Gone``/``Expired`` and "too large resource version" (504 with the
  ``ResourceVersionTooLarge`` cause, ``apiserver/pkg/storage/errors.go``; client-go's
  ``isTooLargeResourceVersionError``) mean the resourceVersion cannot be resumed: list again.
- Health: a cache is *fresh* once it has listed, while its watch is open or it heard from the
  server within :attr:`WatchCache.stale_after_seconds`, and while fewer than
  :attr:`WatchCache.failure_threshold` attempts in a row failed. The default 90 s exceeds the
  API server's bookmark period (about a minute, ``bookmarkFrequency`` in the apiserver's cacher),
  so a quiet but open watch never looks stale; a dead connection fails sooner, through keepalive.
  A watch that keeps failing (e.g. 403 after an RBAC change) makes it stale after
  ``failure_threshold`` attempts; the controller then neither reports ready nor acts.
  :meth:`WatchCache.age` is the time since the server was last heard from.

Objects are converted to the core's types as they arrive, so building a snapshot costs no parsing.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from tpu_platform.hotswap.adapter.api import JSON, ApiError, KubeApi, Resource
from tpu_platform.hotswap.adapter.convert import object_key

T = TypeVar("T")
GONE = 410
TOO_LARGE_CAUSE = "ResourceVersionTooLarge"
BACKOFF_INITIAL_SECONDS = 0.8
BACKOFF_MAX_SECONDS = 4.0
BACKOFF_RESET_SECONDS = 120.0
SHORT_WATCH_SECONDS = 1.0
OBJECT_EVENTS = ("ADDED", "MODIFIED", "DELETED")
"""Events that carry an object: only they prove a watch healthy (an ERROR event, e.g. 410 on a
compacted resourceVersion, is the server refusing the watch; a BOOKMARK carries no object)."""
log = logging.getLogger("hotswap.cache")


class CacheObserver(Protocol):
    """Where a cache reports its watch restarts, relists and failures (the controller's metrics)."""

    def watch_started(self, resource: str) -> None: ...

    def relisted(self, resource: str, reason: str) -> None: ...

    def watch_failed(self, resource: str, status: int) -> None: ...


def must_relist(err: ApiError) -> bool:
    """The resourceVersion cannot be resumed: 410, or too large (504 with its cause or message)."""
    if err.status == GONE:
        return True
    return err.status == 504 and (
        TOO_LARGE_CAUSE in err.causes or "too large resource version" in (err.body or "").lower()
    )


class Backoff:
    """Exponential backoff with jitter that resets only after a quiet period (client-go's manager)."""

    def __init__(
        self,
        initial: float = BACKOFF_INITIAL_SECONDS,
        cap: float = BACKOFF_MAX_SECONDS,
        *,
        reset_after: float = BACKOFF_RESET_SECONDS,
        jitter: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self.initial = initial
        self.cap = cap
        self.reset_after = reset_after
        self.jitter = jitter
        self.clock = clock
        self.rng = rng or random.Random()
        self._current = 0.0
        self._last = -float("inf")

    def reset(self) -> None:
        """Start over from the initial step (after a watch that streamed an object)."""
        self._current = 0.0

    def next(self, *, escalate: bool = True) -> float:
        """The next wait; ``escalate=False`` (a transport failure) waits one initial step and leaves
        the escalation where it was."""
        now = self.clock()
        if now - self._last > self.reset_after:
            self._current = 0.0
        self._last = now
        if not escalate:
            return self.initial * (1.0 + self.jitter * self.rng.random())
        self._current = self.initial if self._current == 0 else min(self._current * 2, self.cap)
        return self._current * (1.0 + self.jitter * self.rng.random())


class _WatchEnded(Exception):
    """The watch must be reopened from a new list."""


class WatchCache(Generic[T]):
    """Thread-safe store of converted objects kept current by list + watch."""

    def __init__(
        self,
        api: KubeApi,
        resource: Resource,
        convert: Callable[[JSON], T | None],
        *,
        watch_timeout_seconds: int = 300,
        on_change: Callable[[], None] | None = None,
        observer: CacheObserver | None = None,
        stale_after_seconds: float = 90.0,
        failure_threshold: int = 3,
        clock: Callable[[], float] = time.monotonic,
        backoff: Backoff | None = None,
        stale_retry_seconds: float | None = None,
        keep_deleted: Callable[[T], bool] | None = None,
    ) -> None:
        if stale_retry_seconds is not None and not stale_retry_seconds > 0:
            raise ValueError(f"stale_retry_seconds must be > 0 or None, got {stale_retry_seconds}")
        self.stale_retry_seconds = stale_retry_seconds
        """Once stale, retry within this (jittered); None: the backoff alone decides."""
        self.api = api
        self.resource = resource
        self.convert = convert
        self.watch_timeout_seconds = watch_timeout_seconds
        self.on_change = on_change
        self.observer = observer
        self.stale_after_seconds = stale_after_seconds
        self.failure_threshold = failure_threshold
        self.clock = clock
        self.backoff = backoff if backoff is not None else Backoff(clock=clock)
        self.resource_version = ""
        self.lists = 0
        """How many full lists were made (1 at start, +1 per relist)."""
        self.watches = 0
        """How many watch requests were opened."""
        self.failures = 0
        """Consecutive failed attempts (list, watch open, stream, ERROR event)."""
        self.last_contact: float | None = None
        self.last_beat = clock()
        self._streaming = False
        self._listed = False
        self._items: dict[str, T] = {}
        self.keep_deleted = keep_deleted
        """Deleted objects this accepts are shown to the next ``snapshot()`` once (see there)."""
        self._deleted: dict[str, T] = {}
        self._lock = threading.Lock()

    # --- state -------------------------------------------------------------------------------------
    def fresh(self, now: float | None = None) -> bool:
        """Listed, not failing repeatedly, and open or recently heard from."""
        now = self.clock() if now is None else now
        if not self._listed or self.failures >= self.failure_threshold:
            return False
        if self._streaming:
            return True
        return self.last_contact is not None and now - self.last_contact < self.stale_after_seconds

    @property
    def synced(self) -> bool:
        """Fresh now (readiness and the permission to act depend on it)."""
        return self.fresh()

    def age(self, now: float | None = None) -> float:
        """Seconds since the server was last heard from for this resource (inf: never)."""
        now = self.clock() if now is None else now
        return float("inf") if self.last_contact is None else max(0.0, now - self.last_contact)

    def values(self) -> list[T]:
        with self._lock:
            return list(self._items.values())

    def snapshot(self) -> list[T]:
        """The objects, plus each deleted one ``keep_deleted`` accepted since the last snapshot.

        A state the server reported is seen by at least one reconcile even if the object is gone
        before the reconcile runs: a TPU error in a failed pod's termination message would
        otherwise be lost whenever JobSet deletes the pod first (on a real cluster that takes
        well under a second after the Job fails). Each such object appears in one snapshot only.
        """
        with self._lock:
            shown = [v for key, v in self._deleted.items() if key not in self._items]
            self._deleted.clear()
            return list(self._items.values()) + shown

    def get(self, key: str) -> T | None:
        with self._lock:
            return self._items.get(key)

    def _contact(self) -> None:
        self.last_contact = self.clock()
        self.last_beat = self.last_contact

    # --- list and watch ----------------------------------------------------------------------------
    def relist(self, reason: str = "start") -> None:
        items, rv = self.api.list_objects(self.resource)
        fresh: dict[str, T] = {}
        for obj in items:
            value = self.convert(obj)
            if value is not None:
                fresh[object_key(obj)] = value
        with self._lock:
            self._items = fresh
            self.resource_version = rv
        self.lists += 1
        self._listed = True
        self.failures = 0
        self._contact()
        if self.observer is not None and self.lists > 1:
            self.observer.relisted(self.resource.name, reason)
        log.info(
            "listed",
            extra={
                "fields": {"resource": self.resource.name, "count": len(fresh), "rv": rv, "reason": reason}
            },
        )
        self._changed()

    def apply_event(self, event: JSON) -> bool:
        """Apply one watch event. False means the resourceVersion cannot be resumed: list again."""
        kind = event.get("type")
        obj = event.get("object")
        if not isinstance(obj, dict):
            raise ApiError(0, "BadResponse", f"watch event without an object: {str(event)[:200]}")
        if kind == "ERROR":
            try:
                code = int(obj.get("code") or 0)
            except (TypeError, ValueError):
                code = 0
            causes = tuple(
                str(c.get("reason") or "")
                for c in (obj.get("details") or {}).get("causes") or []
                if isinstance(c, dict)
            )
            err = ApiError(code, str(obj.get("reason", "")), str(obj.get("message", "")), causes=causes)
            if must_relist(err):
                return False
            raise err
        self._contact()
        rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        if kind == "BOOKMARK":
            if rv:
                self.resource_version = rv
            return True
        key = object_key(obj)
        if kind in ("ADDED", "MODIFIED"):
            value = self.convert(obj)
            with self._lock:
                if value is None:
                    self._items.pop(key, None)
                else:
                    self._items[key] = value
        elif kind == "DELETED":
            last = self.convert(obj) if self.keep_deleted is not None else None
            with self._lock:
                previous = self._items.pop(key, None)
                for value in (last, previous):
                    if value is not None and self.keep_deleted is not None and self.keep_deleted(value):
                        self._deleted[key] = value
                        break
        else:
            log.warning(
                "unknown watch event", extra={"fields": {"resource": self.resource.name, "type": kind}}
            )
            return True
        if rv:
            self.resource_version = rv
        self._changed()
        return True

    def watch_once(self, stop: threading.Event | None = None) -> None:
        """List if needed, then one watch request until it ends. Raises on failure (incl. short)."""
        if not self._listed:
            self.relist()
        elif self.failures >= self.failure_threshold:
            self.relist("stale")
        started = self.clock()
        events = 0
        self.watches += 1
        if self.observer is not None:
            self.observer.watch_started(self.resource.name)
        try:
            stream = self.api.watch_objects(self.resource, self.resource_version, self.watch_timeout_seconds)
            for event in stream:
                kind = event.get("type")
                if kind != "ERROR" and not self._streaming:
                    self._streaming = True
                    self.failures = 0
                    self._contact()
                if kind in OBJECT_EVENTS:
                    events += 1
                if not self.apply_event(event):
                    raise _WatchEnded("expired")
                if stop is not None and stop.is_set():
                    return
        except _WatchEnded:
            self._streaming = False
            self._relist_expired()
            return
        except ApiError as err:
            self._streaming = False
            if not must_relist(err):
                raise
            self._relist_expired()
            return
        finally:
            self._streaming = False
            if events:
                self.backoff.reset()
        self._contact()
        if self.clock() - started < SHORT_WATCH_SECONDS and events == 0:
            raise ApiError(0, "ShortWatch", "watch closed within a second with no objects")

    def _relist_expired(self) -> None:
        log.info("watch cannot resume, relisting", extra={"fields": {"resource": self.resource.name}})
        self.relist("expired")

    def run(self, stop: threading.Event) -> None:
        """Keep the cache current until ``stop``; failures back off with jitter."""
        while not stop.is_set():
            self.last_beat = self.clock()
            try:
                self.watch_once(stop)
                self.failures = 0
            except Exception as err:
                self.failures += 1
                status = err.status if isinstance(err, ApiError) else -1
                if self.observer is not None:
                    self.observer.watch_failed(self.resource.name, status)
                wait = self.retry_wait(status)
                log.warning(
                    "watch failed",
                    exc_info=not isinstance(err, ApiError),
                    extra={
                        "fields": {
                            "resource": self.resource.name,
                            "error": f"{type(err).__name__}: {err}",
                            "failures": self.failures,
                            "retry_in": round(wait, 2),
                        }
                    },
                )
                stop.wait(wait)

    def retry_wait(self, status: int) -> float:
        """The wait after a failure with ``status``: the backoff's, capped once the cache is stale
        when ``stale_retry_seconds`` is set."""
        wait = self.backoff.next(escalate=status != 0)
        if self.stale_retry_seconds is not None and self.failures >= self.failure_threshold:
            cap = self.stale_retry_seconds * (0.5 + 0.5 * self.backoff.rng.random())
            wait = min(wait, cap)
        return wait

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()
