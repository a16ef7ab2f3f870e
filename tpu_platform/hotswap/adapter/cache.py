"""Reflector caches, after client-go's ``tools/cache/reflector.go``: list, then watch from the list's
resourceVersion with bookmarks, objects converted to the core's types as they arrive.

A cache is *fresh* once it has listed, while its watch is open or it heard from the server recently,
and while its attempts are not failing in a row; the controller acts only on what fresh caches show.
Failures back off with jitter, and a cache made stale by failures lists again. Where and why this
differs from client-go: docs/hotswap-adapter.md, "cache".
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from tpu_platform.hotswap.adapter.client import JSON, ApiError, KubeApi, Resource
from tpu_platform.hotswap.adapter.convert import object_key

T = TypeVar("T")
GONE = 410
TOO_LARGE_CAUSE = "ResourceVersionTooLarge"
BACKOFF_INITIAL_SECONDS = 0.8
BACKOFF_MAX_SECONDS = 4.0
"""client-go caps at 30 s; this keeps every cache current well inside lease duration + retry period
after an outage."""
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
