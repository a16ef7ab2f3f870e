"""Compute Engine as the controller's corroborating source sees it: the status of the VM behind a
suspect node, late by ``Timings.compute_status_lag_s`` after a silent host death, each read late by
``compute_api_latency_s`` and failing with probability ``compute_api_error_rate``. Reads follow the
adapter's cadence (``tpu_platform.hotswap.adapter.compute_engine``): a usable answer (read after the node's
current suspicion began) is re-read once ``compute_reread_s`` old, anything else at most every
``compute_retry_s``; in between the cached answer is joined in. A VM whose guest
still runs (a kubelet restart, a slow host) reads RUNNING: the false positives of the node-side
signals stay unconfirmed, which is what keeps the early force-delete fenced.

Statuses as documented for ``Instance.status``
(https://cloud.google.com/compute/docs/reference/rest/v1/instances): a VM whose host failed is
``TERMINATED`` ("stopped ... by underlying failure") until it is repaired or Compute Engine restarts
it on another host (RUNNING again, with the ``compute.instances.hostError`` operation on record); a
hung guest reads RUNNING throughout (``tpu_platform.sim.host_fates``). A reset the controller sent
(``tpu_platform.sim.vm_reset``) is on record at once, pending until its Operation is done.
"""

from __future__ import annotations

import random

from tpu_platform.hotswap.core import Instance
from tpu_platform.hotswap.core.vm_evidence import read_after_suspicion
from tpu_platform.sim.model import SimNode
from tpu_platform.sim.params import Timings


class ComputeApi:
    """Seeded per run: the same trace and seed give the same failed reads for every setting."""

    def __init__(self, timings: Timings, seed: int) -> None:
        self.t = timings
        self.rng = random.Random(f"compute:{seed}")
        self.reads = 0
        self.errors = 0
        self.last: dict[str, Instance] = {}
        """The latest answer per node: a failed read leaves the previous one in place, as the adapter's
        evidence cache does (the core's max age and its after-the-suspicion rule bound its use)."""
        self.attempted: dict[str, tuple[float, bool]] = {}
        """Per node: the reconcile time its last read started at (the adapter's ``attempted``) and
        whether it failed."""

    def due(self, node: SimNode, now: float, since: float) -> bool:
        """The adapter's rule: re-read a usable answer after ``compute_reread_s``, else after
        ``compute_retry_s`` (a new suspicion makes the old answer unusable, so it is read at once)."""
        if node.name not in self.attempted:
            return True
        at, failed = self.attempted[node.name]
        answer = self.last.get(node.name)
        usable = answer is not None and read_after_suspicion(answer.observed, since) and not failed
        return now - at >= (self.t.compute_reread_s if usable else self.t.compute_retry_s)

    def expire(self, name: str) -> None:
        """A reset was sent: the adapter reads the VM again at the next reconcile."""
        self.attempted.pop(name, None)

    def forget(self, name: str) -> None:
        """The node is no longer suspect: the adapter drops its cache entry."""
        self.attempted.pop(name, None)
        self.last.pop(name, None)

    def join(self, node: SimNode, now: float, since: float) -> Instance | None:
        """What the adapter joins into the snapshot: a fresh read if one is due, else the cached answer."""
        if self.due(node, now, since):
            return self.read(node, now)
        return self.last.get(node.name)

    def read(self, node: SimNode, now: float) -> Instance | None:
        """One ``instances.get`` sent at ``now - latency``; when it fails, the previous answer (if any)."""
        self.reads += 1
        sent = now - self.t.compute_api_latency_s
        if self.rng.random() < self.t.compute_api_error_rate:
            self.errors += 1
            self.attempted[node.name] = (now, True)
            return self.last.get(node.name)
        self.attempted[node.name] = (now, False)
        lag = self.t.compute_status_lag_s
        down = node.vm_down_at
        stopped = not node.vm_running and down is not None and sent - down >= lag
        err = node.host_error_at
        host_error = err if err is not None and sent - err >= lag else None
        reset = node.reset_sent_at if node.reset_done else None
        answer = Instance(
            status="TERMINATED" if stopped else "RUNNING",
            observed=sent,
            host_error_at=host_error,
            reset_at=reset if reset is not None and reset <= sent else None,
            reset_pending=node.reset_sent_at is not None and not node.reset_done,
        )
        self.last[node.name] = answer
        return answer
