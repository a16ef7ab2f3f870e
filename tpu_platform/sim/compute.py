"""Compute Engine as the controller's corroborating source sees it: the status of the VM behind a
suspect node, late by ``Timings.compute_status_lag_s`` after a silent host death, each read late by
``compute_api_latency_s`` and failing with probability ``compute_api_error_rate``. A VM whose guest
still runs (a kubelet restart, a slow host) reads RUNNING: the false positives of the node-side
signals stay unconfirmed, which is what keeps the early force-delete fenced.

Statuses as documented for ``Instance.status``
(https://cloud.google.com/compute/docs/reference/rest/v1/instances): a VM whose host failed is
``TERMINATED`` ("stopped ... by underlying failure") until it is repaired; the simulator does not
model the restart onto another host, which would only add ``STAGING``/``RUNNING`` after it.
"""

from __future__ import annotations

import random

from tpu_platform.hotswap.core import Instance
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

    def read(self, node: SimNode, now: float) -> Instance | None:
        """One ``instances.get`` sent at ``now - latency``; when it fails, the previous answer (if any)."""
        self.reads += 1
        if self.rng.random() < self.t.compute_api_error_rate:
            self.errors += 1
            return self.last.get(node.name)
        sent = now - self.t.compute_api_latency_s
        down = node.vm_down_at
        stopped = not node.vm_running and down is not None and sent - down >= self.t.compute_status_lag_s
        answer = Instance(status="TERMINATED" if stopped else "RUNNING", observed=sent)
        self.last[node.name] = answer
        return answer
