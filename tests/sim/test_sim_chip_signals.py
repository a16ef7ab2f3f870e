"""Chip/ICI failures with a live kubelet in the simulator: the signals they leave, the controller
acting on them, and software crashes (healthy hardware) that report a TPU error anyway.

What the simulator emits, and why: the failed host's trainer and then the runtime's coordinator
(worker 0) exit with ``SLICE_FAILURE_CHIP_DRIVER_ERROR`` in their termination message (openxla/xla
``xla/pjrt/c/pjrt_c_api_callback_extension.h``; AI-Hypercomputer/maxtext
``benchmarks/maxtest/getting_started.md``), and the kubelet's next node status shows the chips
withdrawn (allocatable below capacity, ``pkg/kubelet/cm/devicemanager/manager.go``); the Job
controller's 1 s batch (``pkg/controller/job/job_controller.go``, ``syncJobBatchPeriod``) is how long
a failed pod stays visible.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from tpu_platform.hotswap.core.workload_signals import reports_tpu_error
from tpu_platform.sim.chipsignals import crash, tpu_error
from tpu_platform.sim.failures import CHIP_ERROR, WORKLOAD_CRASH
from tpu_platform.sim.params import Timings, floor_seconds
from tpu_platform.sim.run import Result, Scenario, make_policy, run
from tpu_platform.sim.scenarios import seed_scenario
from tpu_platform.sim.traces import Failure

FAIL_AT = 1800.0
HIGH = "default/high"
PATTERNS = ("SLICE_FAILURE_CHIP_DRIVER_ERROR",)


def high_pool(policy: str, scenario: Scenario) -> str:
    probe = run(replace(scenario, end=FAIL_AT - 1), make_policy(policy, scenario))
    w = probe.cluster.workloads[HIGH]
    (pool,) = {p.pool for p in w.current_pods() if p.pool is not None}
    return pool


def hit(policy: str, kind: str, node: int, timings: dict[str, Any] | None = None, **settings: Any) -> Result:
    scenario = seed_scenario(spare=False)
    scenario = replace(scenario, timings=scenario.timings.with_overrides(timings or {}))
    if settings:
        scenario = replace(scenario, settings=scenario.settings.replace(**settings))
    pool = high_pool(policy, scenario)
    trace = (Failure(FAIL_AT, f"{pool}-n{node}", kind=kind),)
    return run(replace(scenario, trace=trace), make_policy(policy, scenario))


def seconds(r: Result) -> float:
    (ep,) = [e for e in r.metrics.episodes if e.workload == HIGH]
    assert ep.seconds is not None
    return ep.seconds


def test_what_the_simulated_trainers_leave_is_what_the_core_reads() -> None:
    assert reports_tpu_error_of(tpu_error(5.0)) == 5.0
    assert reports_tpu_error_of(crash(5.0, reports_tpu_error=False)) is None
    assert reports_tpu_error_of(crash(5.0, reports_tpu_error=True)) == 5.0


def reports_tpu_error_of(t: Any) -> float | None:
    from tpu_platform.hotswap.core.model import Pod

    return reports_tpu_error(Pod("default", "w", "uid-w", node="n", terminations=(t,)), PATTERNS)


@pytest.mark.parametrize("node", [0, 1, 2, 3])
def test_the_controller_moves_work_off_a_chip_error_within_a_minute(node: int) -> None:
    t = Timings()
    r = hit("hotswap", CHIP_ERROR, node)
    assert r.controller is not None
    (taint,) = [x for x in r.controller.tainted if x[1] >= FAIL_AT]
    assert taint[1] <= FAIL_AT + t.chips_withdrawn_report_s + 1.0  # type: ignore[operator]
    assert floor_seconds(t, CHIP_ERROR) <= seconds(r) <= 60.0
    assert r.cluster.force_deletes == 0, "a live kubelet stops its pods: nothing is force-deleted"


@pytest.mark.parametrize("node", [0, 1, 2, 3])
def test_a_single_report_is_confirmed_by_withdrawn_chips_or_by_the_restart_failing_again(
    node: int,
) -> None:
    default = seconds(hit("hotswap", CHIP_ERROR, node))
    reports_off = hit("hotswap", CHIP_ERROR, node, workload_signals=False)
    (ep,) = [e for e in reports_off.metrics.episodes if e.workload == HIGH]
    assert ep.seconds is None or ep.seconds >= Timings().chip_repair_after_s, "withdrawn chips alone act"
    silent = {"chips_withdrawn_report_s": None, "chip_coordinator_report_s": None}
    one_report = hit("hotswap", CHIP_ERROR, node, silent)
    # Nothing withdraws the chips: the JobSet restarts on the same slice, the pod on the broken node
    # fails again when its runtime initializes, and that second report confirms.
    restart = Timings().pod_startup_s
    assert default < seconds(one_report) < Timings().chip_repair_after_s
    assert one_report.controller is not None
    (taint,) = [x for x in one_report.controller.tainted if x[1] >= FAIL_AT]
    assert taint[1] >= FAIL_AT + restart - 1.0, "the first report alone declared nothing"
    off = hit("hotswap", CHIP_ERROR, node, silent, workload_signals=False)
    (ep,) = [e for e in off.metrics.episodes if e.workload == HIGH]
    assert ep.seconds is None or ep.seconds >= Timings().chip_repair_after_s, "nothing else sees it"


@pytest.mark.parametrize("node", [0, 2])
def test_a_software_crash_reporting_a_tpu_error_is_restarted_in_place_not_moved(node: int) -> None:
    r = hit("hotswap", WORKLOAD_CRASH, node, {"crash_tpu_report_fraction": 1.0})
    assert r.controller is not None
    assert [x for x in r.controller.tainted if x[1] >= FAIL_AT] == [], "a single report declared a pool"
    assert seconds(r) == seconds(hit("recipe", WORKLOAD_CRASH, node, {"crash_tpu_report_fraction": 1.0}))
