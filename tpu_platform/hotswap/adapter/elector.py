"""Leader election on a coordination.k8s.io/v1 Lease with client-go's ``tools/leaderelection`` semantics,
and the write budget that keeps a replica that may have lost the Lease from writing.

LeaseDuration 15 s, RenewDeadline 10 s, RetryPeriod 2 s (kube-controller-manager's defaults); the
leader renews optimistically; expiry is judged on the local monotonic clock from when the record was
last seen to change. Losing the lease is fatal, like client-go's ``OnStoppedLeading`` in controllers:
the process stops writing and exits. :meth:`LeaderElector.write_budget` is how long a write sent now may
take before another replica could take the Lease. Design notes: docs/hotswap-adapter.md, "elector".
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from tpu_platform.hotswap.adapter.client import JSON, ApiError, KubeApi, micro_time

log = logging.getLogger("hotswap.leader")
JITTER_FACTOR = 1.2
MIN_WRITE_SECONDS = 0.5
"""No write starts with less time than this left: it would time out (leaving its outcome unknown)
rather than be answered."""
RELEASE_ATTEMPTS = 3
"""A release that meets a transport error or 5xx is retried (the lease is re-read, so a release
that did land is not repeated: no second release, no 409)."""


class LeaderElector:
    def __init__(
        self,
        api: KubeApi,
        *,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        write_margin: float | None = None,
        expiry_margin: float | None = None,
        min_write_seconds: float = MIN_WRITE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        on_change: Callable[[bool], None] | None = None,
        on_lost: Callable[[], None] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if not retry_period < renew_deadline < lease_duration:
            raise ValueError("need retry_period < renew_deadline < lease_duration")
        self.api = api
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.write_margin = retry_period if write_margin is None else write_margin
        """Writes stop this long before the renew deadline."""
        self.expiry_margin = retry_period if expiry_margin is None else expiry_margin
        """Every write's client gives up at least this long before the lease could be taken."""
        self.min_write_seconds = min_write_seconds
        if self.write_margin < 0 or self.expiry_margin < 0 or min_write_seconds <= 0:
            raise ValueError("need write_margin >= 0, expiry_margin >= 0 and min_write_seconds > 0")
        self.request_timeout = max(0.5, min(5.0, renew_deadline / 2))
        """Per-call timeout for lease requests: a hung call cannot eat the renew deadline."""
        self.clock = clock
        self.wall_clock = wall_clock
        self.on_change = on_change
        self.on_lost = on_lost
        self.rng = rng or random.Random()
        self.lost = threading.Event()
        """Set once this process led and then lost the lease; it must write nothing more."""
        self.transitions = 0
        """Times this process started leading."""
        self.last_beat = clock()
        """When the elector loop last came round (liveness)."""
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self._renewed_at: float | None = None
        self._last_written: JSON | None = None
        """The Lease as the server returned it after our last successful write (the optimistic
        renewal updates it without reading it first)."""
        self._was_leader = False
        self._released = False
        self._lock = threading.RLock()

    # --- state -------------------------------------------------------------------------------------
    def is_leader(self) -> bool:
        """True while the last successful renewal is younger than the renew deadline."""
        with self._lock:
            leading = (
                not self.lost.is_set()
                and self._renewed_at is not None
                and self.clock() - self._renewed_at < self.renew_deadline
            )
            if leading != self._was_leader:
                self._was_leader = leading
                log.info(
                    "leadership changed", extra={"fields": {"leader": leading, "identity": self.identity}}
                )
                if leading:
                    self.transitions += 1
                if self.on_change is not None:
                    self.on_change(leading)
                if not leading and not self._released:
                    self._lose("renew deadline passed or lease taken")
            return leading

    @property
    def lease_seconds(self) -> int:
        """The lease duration as the Lease records it (whole seconds): what other candidates wait."""
        return int(self.lease_duration)

    def write_budget(self) -> float | None:
        """Seconds a write sent now may take before its client gives up, or None if none may start.

        None unless leading with ``write_margin`` to spare before the renew deadline; else the time
        left until ``expiry_margin`` before the earliest moment another replica could take the
        Lease (``renewed_at + lease_seconds``), and None if that is under ``min_write_seconds``."""
        with self._lock:
            if not self.is_leader() or self._renewed_at is None:
                return None
            age = self.clock() - self._renewed_at
            if age >= self.renew_deadline - self.write_margin:
                return None
            left = self.lease_seconds - self.expiry_margin - age
            return left if left >= self.min_write_seconds else None

    def may_write(self) -> bool:
        """The check every write passes: a write may start now (:meth:`write_budget`)."""
        return self.write_budget() is not None

    def _lose(self, why: str) -> None:
        if self.lost.is_set():
            return
        self.lost.set()
        self._renewed_at = None
        self._last_written = None
        log.error("lost the lease: stopping", extra={"fields": {"identity": self.identity, "why": why}})
        if self.on_lost is not None:
            self.on_lost()

    # --- one attempt -------------------------------------------------------------------------------
    def try_acquire_or_renew(self) -> bool:
        """One attempt; never raises. True if this process leads afterwards.

        The leader first renews optimistically, one update of the Lease as its last write left
        it; only if that fails does it read the record and write again (client-go's fast path in
        ``tryAcquireOrRenew``). One request instead of two per renewal halves the chance that a
        faulty API fails it, so the write budget runs out less often."""
        if self.lost.is_set() or self._released:
            return False
        last = self._last_written
        if last is not None and self.is_leader():
            if self._write(last, holder=self.identity, transitions=0):
                return self.is_leader()
            log.info("optimistic renewal failed: reading the lease", extra={"fields": {}})
        try:
            lease = self.api.get_lease(self.namespace, self.name, timeout=self.request_timeout)
        except Exception as err:  # noqa: BLE001 - the elector survives every failure
            log.warning("lease read failed", extra={"fields": {"error": f"{type(err).__name__}: {err}"}})
            return self.is_leader()
        if lease is None:
            self._write(None, holder="", transitions=0)
            return self.is_leader()
        spec = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        try:
            transitions = int(spec.get("leaseTransitions") or 0)
            duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        except (TypeError, ValueError):
            transitions, duration = 0, self.lease_duration
        record = (holder, spec.get("renewTime"), transitions, spec.get("leaseDurationSeconds"))
        with self._lock:
            if record != self._observed:
                self._observed = record
                self._observed_at = self.clock()
            if holder and holder != self.identity and self.clock() < self._observed_at + duration:
                if self._renewed_at is not None:
                    self._lose(f"lease held by {holder}")
                self.is_leader()
                return False
        self._write(lease, holder=holder, transitions=transitions)
        return self.is_leader()

    def _write(self, lease: JSON | None, *, holder: str, transitions: int) -> bool:
        """Create or update the Lease with this process as holder; True if the server took it."""
        started = self.clock()  # before the request is sent: the renewal cannot count from later
        stamp = micro_time(self.wall_clock())
        spec: JSON = dict((lease or {}).get("spec") or {})
        spec.update(
            holderIdentity=self.identity, leaseDurationSeconds=int(self.lease_duration), renewTime=stamp
        )
        if holder != self.identity:
            spec["acquireTime"] = stamp
            spec["leaseTransitions"] = transitions + 1 if lease is not None else 0
        metadata: JSON = {"name": self.name, "namespace": self.namespace}
        try:
            if lease is None:
                written = self.api.create_lease(
                    self.namespace, self._body(metadata, spec), timeout=self.request_timeout
                )
            else:
                metadata["resourceVersion"] = (lease.get("metadata") or {}).get("resourceVersion", "")
                written = self.api.replace_lease(
                    self.namespace, self.name, self._body(metadata, spec), timeout=self.request_timeout
                )
        except Exception as err:  # noqa: BLE001 - the elector survives every failure
            status = err.status if isinstance(err, ApiError) else None
            log.info("lease update failed", extra={"fields": {"status": status, "error": str(err)}})
            return False
        with self._lock:
            if self.lost.is_set() or self._released:
                return False
            self._last_written = (
                written
                if isinstance(written, dict) and (written.get("metadata") or {}).get("resourceVersion")
                else None
            )
            self._renewed_at = started
            self._observed = (
                self.identity,
                stamp,
                spec.get("leaseTransitions", 0),
                spec["leaseDurationSeconds"],
            )
            self._observed_at = self.clock()
        return True

    @staticmethod
    def _body(metadata: JSON, spec: JSON) -> JSON:
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata, "spec": spec}

    # --- shutdown ----------------------------------------------------------------------------------
    def release(self) -> None:
        """Give the lease up once, on shutdown, after the last write returned."""
        with self._lock:
            if self._released:
                return
            leading = self.is_leader()
            self._released = True
            self._renewed_at = None
            self._last_written = None
            self._was_leader = False
        if self.on_change is not None and leading:
            self.on_change(False)
        if not leading:
            return
        for attempt in range(RELEASE_ATTEMPTS):
            try:
                self._give_up()
                return
            except ApiError as err:
                retry = err.retryable and attempt + 1 < RELEASE_ATTEMPTS
                log.warning(
                    "lease release failed",
                    extra={"fields": {"error": f"{type(err).__name__}: {err}", "retrying": retry}},
                )
                if not retry:
                    return
                time.sleep(min(0.5, self.retry_period))
            except Exception:
                log.exception("lease release failed")
                return

    def _give_up(self) -> None:
        lease = self.api.get_lease(self.namespace, self.name, timeout=self.request_timeout)
        if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
            return
        stamp = micro_time(self.wall_clock())
        spec = dict(lease.get("spec") or {})
        spec.update(holderIdentity="", leaseDurationSeconds=1, renewTime=stamp, acquireTime=stamp)
        metadata = {
            "name": self.name,
            "namespace": self.namespace,
            "resourceVersion": (lease.get("metadata") or {}).get("resourceVersion", ""),
        }
        self.api.replace_lease(
            self.namespace, self.name, self._body(metadata, spec), timeout=self.request_timeout
        )
        log.info("lease released", extra={"fields": {"identity": self.identity}})

    # --- loop --------------------------------------------------------------------------------------
    def next_wait(self) -> float:
        """The leader renews every retry period; candidates wait with client-go's jitter."""
        if self.is_leader():
            return self.retry_period
        return self.retry_period * (1.0 + JITTER_FACTOR * self.rng.random())

    def run(self, stop: threading.Event) -> None:
        """Acquire, then renew, until ``stop`` or the lease is lost. Survives every exception."""
        while not stop.is_set() and not self.lost.is_set():
            self.last_beat = self.clock()
            try:
                self.try_acquire_or_renew()
                wait = self.next_wait()
            except Exception:
                log.exception("leader election attempt failed")
                wait = self.retry_period
            stop.wait(wait)
