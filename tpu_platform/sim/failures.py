"""The kinds of incident the simulator injects, and how often each happens.

Rates per VM are from the one public breakdown of interruptions of a large synchronous training fleet
we found: Meta's Llama 3 pre-training (Dubey et al., "The Llama 3 Herd of Models", arXiv:2407.21783,
section 3.3.4 and Table 5): 466 job interruptions in 54 days on 16,384 GPUs in 2,048 hosts of 8, 47
planned (automated maintenance) and 419 unexpected, 58.7% of those from the accelerators (GPU, HBM3,
SRAM, GPU system processor, NVLink), with the kubelet-equivalent host alive. Whole-host losses (network
switch or cable, NIC, power supply, CPU, memory, chassis, SSD: about 13%) become silent host deaths.
The remaining causes (software bugs and the like) restart the job in place under any policy and are
left out. TPU v6e rates are not published; these GPU-fleet rates are the stand-in. Kubelet restarts,
Spot preemptions and mass events have no public rate we could cite: their rates are *chosen*.
"""

from __future__ import annotations

from dataclasses import dataclass

HOST_DEATH = "host_death"
"""The VM dies silently: its kubelet stops reporting, its pods hang until something deletes them."""
CHIP_ERROR = "chip_error"
"""A TPU chip or ICI link fails with the kubelet alive: the trainer crashes (its pod Failed), the Node
stays Ready, and the device plugin no longer offers the node's chips until GKE repairs the slice."""
KUBELET_RESTART = "kubelet_restart"
"""The kubelet restarts (containers keep running): its Lease and status pause; if the pause outlasts
node-monitor-grace-period the node goes NotReady until the kubelet is back."""
MAINTENANCE = "maintenance"
"""Scheduled host maintenance with a 7-day notice: GKE labels the nodes ahead, then cordons and drains
the slice, which is down for the maintenance and comes back."""
SPOT_PREEMPTION = "spot_preemption"
"""A Spot slice is reclaimed with a 30 s notice (taint ``cloud.google.com/impending-node-termination``);
the kubelet's graceful node shutdown sets its pods Failed, its nodes go, and it comes back when
capacity returns. Spot pools only."""
MASS_EVENT = "mass_event"
"""Several slices lose a host at the same moment (a shared switch, power domain or bad rollout)."""
WORKLOAD_CRASH = "workload_crash"
"""A trainer crashes on healthy hardware (a software fault): its pod Failed, the node stays Ready with
its chips. Some crashes report a TPU-looking error anyway: the false positive of the workload signal."""

KINDS = (HOST_DEATH, CHIP_ERROR, KUBELET_RESTART, MAINTENANCE, SPOT_PREEMPTION, MASS_EVENT, WORKLOAD_CRASH)

LLAMA3_HOST_DAYS = 54.0 * 2048
"""Host-days observed in the Llama 3 pre-training snapshot (arXiv:2407.21783, section 3.3.4)."""


@dataclass(frozen=True, slots=True)
class Rate:
    """Mean days between incidents of one kind, per VM (per slice for Spot, per fleet for mass events)."""

    kind: str
    mean_days: float
    source: str


RATES: tuple[Rate, ...] = (
    Rate(CHIP_ERROR, LLAMA3_HOST_DAYS / (419 * 0.587), "Llama 3: 58.7% of 419 unexpected interruptions"),
    Rate(HOST_DEATH, LLAMA3_HOST_DAYS / (419 * 0.13), "Llama 3: ~13% of 419 (network, NIC, host hardware)"),
    Rate(MAINTENANCE, LLAMA3_HOST_DAYS / 47, "Llama 3: 47 planned interruptions (automated maintenance)"),
    Rate(KUBELET_RESTART, 60.0, "chosen"),
    Rate(SPOT_PREEMPTION, 7.0, "chosen (per Spot slice)"),
    Rate(MASS_EVENT, 30.0, "chosen (per fleet; 3 slices at once)"),
    Rate(WORKLOAD_CRASH, 30.0, "chosen (software crashes have no public per-host rate)"),
)


def rate(kind: str) -> Rate:
    for r in RATES:
        if r.kind == kind:
            return r
    raise ValueError(f"unknown failure kind {kind!r}; known: {', '.join(KINDS)}")
