"""Leader election on a coordination.k8s.io/v1 Lease, following client-go's leaderelection.

Only the leader applies actions. Expiry is judged on the local clock from when the lease record was
last seen to change (as client-go does), never by comparing our clock with another pod's renewTime.
A leader that cannot renew within the renew deadline stops acting before any other candidate may
take over (renew deadline < lease duration).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from tpu_platform.hotswap.adapter.api import JSON, ApiError, KubeApi
from tpu_platform.hotswap.adapter.applier import micro_time

log = logging.getLogger("hotswap.leader")


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
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        on_change: Callable[[bool], None] | None = None,
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
        self.clock = clock
        self.wall_clock = wall_clock
        self.on_change = on_change
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self._renewed_at: float | None = None
        self._was_leader = False

    def is_leader(self) -> bool:
        """True while the last successful renewal is younger than the renew deadline."""
        leading = self._renewed_at is not None and self.clock() - self._renewed_at < self.renew_deadline
        if leading != self._was_leader:
            self._was_leader = leading
            log.info("leadership changed", extra={"fields": {"leader": leading, "identity": self.identity}})
            if self.on_change is not None:
                self.on_change(leading)
        return leading

    def try_acquire_or_renew(self) -> bool:
        now = self.clock()
        try:
            lease = self.api.get_lease(self.namespace, self.name)
        except ApiError as err:
            log.warning("lease read failed", extra={"fields": {"error": str(err)}})
            return self.is_leader()
        if lease is None:
            return self._write(None, now, holder="", transitions=0)
        spec = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        transitions = int(spec.get("leaseTransitions") or 0)
        record = (holder, spec.get("renewTime"), transitions, spec.get("leaseDurationSeconds"))
        if record != self._observed:
            self._observed = record
            self._observed_at = now
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        if holder and holder != self.identity and now < self._observed_at + duration:
            self._renewed_at = None
            self.is_leader()
            return False
        return self._write(lease, now, holder=holder, transitions=transitions)

    def _write(self, lease: JSON | None, now: float, *, holder: str, transitions: int) -> bool:
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
                self.api.create_lease(self.namespace, self._body(metadata, spec))
            else:
                metadata["resourceVersion"] = (lease.get("metadata") or {}).get("resourceVersion", "")
                self.api.replace_lease(self.namespace, self.name, self._body(metadata, spec))
        except ApiError as err:
            log.info("lease update failed", extra={"fields": {"status": err.status, "error": str(err)}})
            return self.is_leader()
        self._renewed_at = now
        self._observed = (self.identity, stamp, spec.get("leaseTransitions", 0), spec["leaseDurationSeconds"])
        self._observed_at = now
        return self.is_leader()

    @staticmethod
    def _body(metadata: JSON, spec: JSON) -> JSON:
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata, "spec": spec}

    def release(self) -> None:
        """Give the lease up on shutdown so a successor need not wait for it to expire."""
        if not self.is_leader():
            return
        try:
            lease = self.api.get_lease(self.namespace, self.name)
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
            self.api.replace_lease(self.namespace, self.name, self._body(metadata, spec))
        except ApiError as err:
            log.warning("lease release failed", extra={"fields": {"error": str(err)}})
        finally:
            self._renewed_at = None
            self.is_leader()

    def run(self, stop: threading.Event) -> None:
        """Try to acquire or renew every retry period until ``stop``; release on the way out."""
        while not stop.is_set():
            self.try_acquire_or_renew()
            stop.wait(self.retry_period)
        self.release()
