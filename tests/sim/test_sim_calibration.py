"""The live tier's incidents on the simulator (``tpu_platform.sim.calibration``, ``bench/calibrate.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.calibrate import Row, main
from tpu_platform.sim.calibration import simulate
from tpu_platform.sim.node_lifecycle import not_ready_after
from tpu_platform.sim.params import Timings

HOST_DEATH_STEPS = ["node NotReady", "pool tainted", "high pods Running on the spare slice"]


def test_a_silent_host_death_under_hotswap_reaches_every_step_in_order() -> None:
    steps = simulate("silent host death", "hotswap", HOST_DEATH_STEPS, pod_startup_s=1.0)
    assert list(steps) == HOST_DEATH_STEPS
    assert steps["node NotReady"] == 50.0  # silent right after a renewal: the whole 50 s grace
    assert steps["node NotReady"] < steps["pool tainted"] < steps["high pods Running on the spare slice"]


def test_the_lease_phase_moves_not_ready_earlier() -> None:
    """Silent 7.5 s after the last renewal: NotReady 50 s after that renewal, 42.5 s after the silence."""
    steps = simulate("silent host death", "recipe", ["node NotReady"], pod_startup_s=1.0, phase_s=7.5)
    assert steps == {"node NotReady": 42.5}


def test_steps_without_a_predicate_are_left_out() -> None:
    steps = simulate("silent host death", "recipe", ["node NotReady", "60 s later"], pod_startup_s=1.0)
    assert list(steps) == ["node NotReady"]


def test_a_kubelet_restart_comes_back_when_told() -> None:
    steps = simulate(
        "kubelet restart 70 s",
        "recipe",
        ["node NotReady", "node Ready again"],
        pod_startup_s=1.0,
        kubelet_silent_s=81.5,
    )
    assert steps["node Ready again"] == 81.5


def test_a_spot_notice_fails_the_pods_after_their_grace_and_takes_the_nodes_at_30_s() -> None:
    """The live tier's Spot notice: the pods Failed 1 s after it (their grace), JobSet restarts the
    JobSet, and the reclaimed VMs' Nodes are gone (so not Ready) when the VMs stop."""
    steps = simulate("Spot notice", "recipe", ["JobSet restarted", "node NotReady"], pod_startup_s=1.0)
    assert steps == {"JobSet restarted": 1.0, "node NotReady": 30.0}


def test_a_pool_without_nodes_is_not_tainted() -> None:
    """The live test reads every node of the pool: the deleted Nodes of a reclaimed slice are none."""
    assert simulate("Spot notice", "recipe", ["pool tainted"], pod_startup_s=1.0) == {}


def test_hotswap_reads_the_spot_taint_before_the_vms_stop() -> None:
    steps = simulate("Spot notice", "hotswap", ["pool tainted"], pod_startup_s=1.0)
    assert steps["pool tainted"] < 30.0


@settings(max_examples=200, deadline=None)
@given(silent_at=st.floats(min_value=0.0, max_value=10_000.0), lease_from=st.floats(0.0, 10.0))
def test_not_ready_follows_the_node_lifecycle_controllers_pass(silent_at: float, lease_from: float) -> None:
    """NotReady 40-55 s after the kubelet's silence: grace 50 s from the pass that saw the last
    renewal (renewals every 10 s, passes every 5 s)."""
    t = Timings()
    last = lease_from + t.lease_renew_s * ((silent_at - lease_from) // t.lease_renew_s)
    delay = not_ready_after(silent_at, last, t)
    lo = t.node_monitor_grace_s - t.lease_renew_s
    assert lo - 1e-6 <= delay <= t.node_monitor_grace_s + t.node_monitor_period_s + 1e-6


def test_a_row_agrees_within_the_simulated_range_or_5_s() -> None:
    assert Row("k", "p", "s", 45.0, (42.5, 50.0), 2).agrees
    assert Row("k", "p", "s", 54.0, (42.5, 50.0), 2).agrees  # 4 s past the range
    assert not Row("k", "p", "s", 101.5, (74.7, 74.7), 1).agrees
    assert not Row("k", "p", "s", 3.5, (), 1).agrees  # never reached in the simulator


def test_the_bench_prints_one_json_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    live = tmp_path / "steps.jsonl"
    record = {
        "kind": "silent host death",
        "policy": "recipe",
        "outcome": "",
        "steps": {"node NotReady": 47.0},
    }
    live.write_text(json.dumps(record) + "\n")
    assert main(["--live", str(live)]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["calibration"][0]["step"] == "node NotReady"
    assert out["calibration"][0]["sim_min_s"] == 42.5 and out["calibration"][0]["sim_max_s"] == 50.0
    assert out["disagreements"] == 0 and out["unexplained"] == 0


def test_a_spot_notice_node_not_ready_is_explained(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    live = tmp_path / "steps.jsonl"
    record = {"kind": "Spot notice", "policy": "recipe", "outcome": "", "steps": {"node NotReady": 79.3}}
    live.write_text(json.dumps(record) + "\n")
    assert main(["--live", str(live)]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["disagreements"] == 1 and out["unexplained"] == 0


def test_the_bench_names_a_missing_live_file(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="TPU_PLATFORM_LIVE_STEPS"):
        main(["--live", str(tmp_path / "none.jsonl")])


def test_a_chip_error_is_replayed_with_the_chip_withdrawn_as_the_live_test_withdraws_it() -> None:
    """Under hotswap the live test withdraws the chip with the error (a signal no tenant writes), so
    the pool is out at once; under recipe nothing withdraws it and the replay runs to its end (a
    JobSet that fails for good while its followers are due is gone, not a crash)."""
    hot = simulate("chip error", "hotswap", ["pool tainted"], pod_startup_s=1.0)
    assert hot["pool tainted"] < 1.0
    recipe = simulate(
        "chip error", "recipe", ["JobSet restarted", "high pods Running again"], pod_startup_s=1.0
    )
    assert "JobSet restarted" in recipe
