"""What a chip/ICI failure and a software crash leave for the controller to read: the failed
container's termination (exit code, reason, message) and the node's TPU allocatable.

A trainer on a slice whose chip driver reports an error exits with the TPU runtime's slice failure in
its last log lines, ``SLICE_FAILURE_CHIP_DRIVER_ERROR`` (openxla/xla
``xla/pjrt/c/pjrt_c_api_callback_extension.h``), which ``terminationMessagePolicy:
FallbackToLogsOnError`` copies into the termination message. The exit code is *chosen* (1): none is
documented. A software crash ends with a Python traceback, and a *chosen* share of crashes
(``Timings.crash_tpu_report_fraction``) carries the slice failure line anyway: a single worker's
report on healthy hardware, the false positive the controller must not act on alone.
"""

from __future__ import annotations

from dataclasses import replace

from tpu_platform.hotswap.core.model import Termination
from tpu_platform.sim.cluster import Cluster
from tpu_platform.sim.model import SimNode

CHIP_ERROR_LOG = (
    "E0000 00:00:00.000000 session_master.cc] Detected failure SLICE_FAILURE_CHIP_DRIVER_ERROR in session; "
    "Start failure handling"
)
CRASH_LOG = "Traceback (most recent call last):\n  ...\nRuntimeError: step failed"
TRAINER = "trainer"
CHOSEN_EXIT_CODE = 1


def tpu_error(now: float) -> Termination:
    """The trainer's end after the runtime saw the slice fail."""
    return Termination(TRAINER, CHOSEN_EXIT_CODE, "Error", CHIP_ERROR_LOG, now)


def crash(now: float, *, reports_tpu_error: bool) -> Termination:
    """A software crash; with ``reports_tpu_error`` its last log lines carry the slice failure too."""
    message = f"{CRASH_LOG}\n{CHIP_ERROR_LOG}" if reports_tpu_error else CRASH_LOG
    return Termination(TRAINER, CHOSEN_EXIT_CODE, "Error", message, now)


def withdraw_chips(cluster: Cluster, node: SimNode, chips: int) -> None:
    """The kubelet's node status after the device plugin marked every chip of the node Unhealthy:
    capacity keeps them, allocatable drops (``pkg/kubelet/cm/devicemanager/manager.go``,
    ``GetCapacity``)."""
    cluster.update_node(node, replace(node.api, tpu_capacity=chips, tpu_allocatable=0))


def restore_chips(cluster: Cluster, node: SimNode) -> None:
    if node.api.tpu_allocatable is not None or node.api.tpu_capacity is not None:
        cluster.update_node(node, replace(node.api, tpu_capacity=None, tpu_allocatable=None))
