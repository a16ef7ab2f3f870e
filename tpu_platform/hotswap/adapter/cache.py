"""List-then-watch caches: one list at start (and after 410 Gone), watches from there on.

Objects are converted to the core's types as they arrive, so building a snapshot costs no parsing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from tpu_platform.hotswap.adapter.api import JSON, ApiError, KubeApi, Resource
from tpu_platform.hotswap.adapter.convert import object_key

T = TypeVar("T")
GONE = 410
log = logging.getLogger("hotswap.cache")


class WatchCache(Generic[T]):
    """Thread-safe store of converted objects kept current by a watch."""

    def __init__(
        self,
        api: KubeApi,
        resource: Resource,
        convert: Callable[[JSON], T | None],
        *,
        watch_timeout_seconds: int = 300,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self.api = api
        self.resource = resource
        self.convert = convert
        self.watch_timeout_seconds = watch_timeout_seconds
        self.on_change = on_change
        self.resource_version = ""
        self.lists = 0
        """How many full lists were made (1 at start, +1 per 410 Gone)."""
        self._items: dict[str, T] = {}
        self._lock = threading.Lock()
        self._synced = threading.Event()

    @property
    def synced(self) -> bool:
        return self._synced.is_set()

    def values(self) -> list[T]:
        with self._lock:
            return list(self._items.values())

    def get(self, key: str) -> T | None:
        with self._lock:
            return self._items.get(key)

    def relist(self) -> None:
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
        self._synced.set()
        log.info("listed", extra={"fields": {"resource": self.resource.name, "count": len(fresh), "rv": rv}})
        self._changed()

    def apply_event(self, event: JSON) -> bool:
        """Apply one watch event. False means the resourceVersion expired (410): list again."""
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            code = int(obj.get("code") or 0)
            if code == GONE:
                return False
            raise ApiError(code, str(obj.get("reason", "")), str(obj.get("message", "")))
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
            with self._lock:
                self._items.pop(key, None)
        else:
            log.warning(
                "unknown watch event", extra={"fields": {"resource": self.resource.name, "type": kind}}
            )
            return True
        if rv:
            self.resource_version = rv
        self._changed()
        return True

    def watch_once(self) -> None:
        """List if needed, then one watch request until the server closes it; re-list on 410 Gone."""
        if not self.synced:
            self.relist()
        try:
            stream = self.api.watch_objects(self.resource, self.resource_version, self.watch_timeout_seconds)
            for event in stream:
                if not self.apply_event(event):
                    log.info("watch expired, relisting", extra={"fields": {"resource": self.resource.name}})
                    self.relist()
                    return
        except ApiError as err:
            if err.status != GONE:
                raise
            log.info("watch expired, relisting", extra={"fields": {"resource": self.resource.name}})
            self.relist()

    def run(self, stop: threading.Event, *, max_backoff: float = 30.0) -> None:
        """Keep the cache current until ``stop``; errors are logged and retried with backoff."""
        initial = min(0.5, max_backoff)
        backoff = initial
        while not stop.is_set():
            try:
                self.watch_once()
                backoff = initial
            except Exception:
                log.exception("watch failed", extra={"fields": {"resource": self.resource.name}})
                stop.wait(backoff)
                backoff = min(backoff * 2, max_backoff)

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()
