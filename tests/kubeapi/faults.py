"""Faults the API double injects, matched per request: status replies, resets, delays, hangs, early
watch closes. Each rule fires ``times`` times (None: until removed)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Request:
    """What a rule can match on: the Kubernetes verb, resource and the caller's identity."""

    method: str
    verb: str
    """list, watch, get, create, update, patch, delete, evict."""
    group: str
    resource: str
    namespace: str
    name: str
    subresource: str
    identity: str

    @property
    def write(self) -> bool:
        return self.verb in ("create", "update", "patch", "delete", "evict")


@dataclass(slots=True)
class Fault:
    """``status``: reply with this code (and Retry-After if given); ``reset``: close the connection
    with RST before replying; ``delay``: wait before handling (a slow server; the write still lands,
    so a client timing out does not know whether it did, unless the request's ``timeout`` deadline
    passes first: then 504 and nothing applied, as kube-apiserver does); ``drop_after``: close a
    watch stream after this many seconds, mid-stream; ``body``: a 200 with a broken body."""

    status: int = 0
    retry_after: int | None = None
    reset: bool = False
    delay: float = 0.0
    drop_after: float | None = None
    body: bytes | None = None
    """Reply 200 with these raw bytes (e.g. not JSON)."""
    verbs: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    identity: str = ""
    times: int | None = 1
    label: str = ""
    """Counted under this name in :attr:`Faults.fired_by`."""
    expires: float | None = None
    """Monotonic time after which an unfired rule is dropped (a schedule must not pile up)."""
    fired: int = field(default=0)

    def matches(self, req: Request) -> bool:
        return (
            (not self.verbs or req.verb in self.verbs)
            and (not self.resources or req.resource in self.resources)
            and (not self.identity or req.identity == self.identity)
        )


class Faults:
    def __init__(self) -> None:
        self.background: Callable[[Request], Fault | None] | None = None
        """Consulted for each request no rule matched: a random fault schedule (see bench/chaos.py)."""
        self._rules: list[Fault] = []
        self._lock = threading.Lock()
        self.injected = 0
        self.fired_by: dict[str, int] = {}

    def add(self, fault: Fault) -> Fault:
        with self._lock:
            self._rules.append(fault)
        return fault

    def remove(self, fault: Fault) -> None:
        with self._lock:
            if fault in self._rules:
                self._rules.remove(fault)

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()

    def take(self, req: Request) -> Fault | None:
        """The first matching rule, spent once."""
        now = time.monotonic()
        with self._lock:
            self._rules = [r for r in self._rules if r.expires is None or r.expires > now]
            for rule in self._rules:
                if rule.matches(req):
                    rule.fired += 1
                    self.injected += 1
                    name = rule.label or "fault"
                    self.fired_by[name] = self.fired_by.get(name, 0) + 1
                    if rule.times is not None and rule.fired >= rule.times:
                        self._rules.remove(rule)
                    return rule
        fault = self.background(req) if self.background is not None else None
        if fault is not None:
            with self._lock:
                self.injected += 1
                name = fault.label or "fault"
                self.fired_by[name] = self.fired_by.get(name, 0) + 1
        return fault
