"""What Compute Engine does with the VM of a host that died silently, drawn per incident so every
policy sees the same fate for the same trace and seed.

Three fates ("About host events", https://cloud.google.com/compute/docs/instances/host-maintenance-overview,
and ``Instance.status`` in the Compute API reference):
- ``STOPPED``: the VM stays TERMINATED (then REPAIRING) until GKE recreates the slice;
- ``RESTARTED``: after a host error Compute Engine restarts the VM on a healthy host: it reads
  TERMINATED, then RUNNING again with a ``compute.instances.hostError`` operation on record, and its
  kubelet registers again with the containers that ran gone;
- ``HUNG``: the guest hangs on a VM that keeps reading RUNNING; nothing confirms it down until GKE's
  auto-repair recreates it.

The shares are chosen (``Timings.hung_guest_fraction``, ``compute_restart_fraction``): Google
publishes none, so ``bench/mttr.py`` shows the headline over a range of them.
"""

from __future__ import annotations

import random

from tpu_platform.sim.params import Timings

STOPPED = "stopped"
RESTARTED = "restarted"
HUNG = "hung"
FATES = (STOPPED, RESTARTED, HUNG)


def host_fate(t: Timings, seed: int, node: str, at: float) -> str:
    """The fate of ``node``'s VM after a silent death at ``at``: seeded by the incident alone, so it
    does not depend on the policy or on what else drew random numbers before it."""
    rng = random.Random(f"fate:{seed}:{node}:{at:.3f}")
    if rng.random() < t.hung_guest_fraction:
        return HUNG
    return RESTARTED if rng.random() < t.compute_restart_fraction else STOPPED
