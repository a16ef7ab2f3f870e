"""The benchmark scripts run end to end on tiny sizes and end with a JSON line of the agreed shape.

Only keys and types are checked: the figures themselves are what the benchmarks are for.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tpu_platform.sim.variants import ABLATION

BENCH = Path(__file__).resolve().parents[2] / "bench"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def last_json(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    lines = capsys.readouterr().out.strip().splitlines()
    doc = json.loads(lines[-1])
    assert isinstance(doc, dict)
    return doc


def is_number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


P_KEYS = {
    "mttr_p50_s",
    "mttr_p95_s",
    "resumed_p50_s",
    "low_priority_lost_chip_hours",
    "utilization",
    "force_deletes",
    "unsafe_force_deletes",
}
POLICIES = {"recipe", "kueue_tas", "hotswap"}
M_KEYS = {
    "unplanned_downtime_s",
    "planned_downtime_s",
    "total_downtime_s",
    "moves_at_checkpoint",
    "moves_at_deadline",
    "low_priority_lost_chip_hours",
}


def check_p(p: dict[str, Any]) -> None:
    assert set(p) == P_KEYS
    for key in ("mttr_p50_s", "mttr_p95_s", "resumed_p50_s"):
        assert p[key] is None or is_number(p[key]), key
    assert is_number(p["low_priority_lost_chip_hours"])
    assert is_number(p["utilization"]) and 0.0 <= p["utilization"] <= 1.0
    assert isinstance(p["force_deletes"], int) and 0 <= p["unsafe_force_deletes"] <= p["force_deletes"]


def check_report(out: str, doc: dict[str, Any], tmp_path: Path) -> None:
    """The docs' tables regenerate from the saved run: every marked section is rewritten, the text
    around it kept, and the headline cell is the run's figure."""
    report = load("mttr_report")
    saved = tmp_path / "mttr.txt"
    saved.write_text("$ python bench/mttr.py --quick\n" + out)
    page = tmp_path / "page.md"
    sections = list(report.SECTIONS)
    page.write_text(
        "intro\n" + "".join(f"<!-- mttr:{n} -->\nold\n<!-- /mttr:{n} -->\n" for n in sections) + "end\n"
    )
    assert report.main([str(saved), "--write", str(page)]) == 0
    text = page.read_text()
    assert text.startswith("intro\n") and text.endswith("end\n") and "\nold\n" not in text
    assert f"| {doc['headline']['hotswap']['host_death_p50_s']} / " in text
    assert "`python bench/mttr.py --quick`" in text


def test_mttr_bench_json_shape(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    args = ["--stack", "seed", "--spot-stack", "dev", "--days", "1", "--kind-days", "0.5"]
    assert load("mttr").main([*args, "--node-mtbf-days", "1", "--seed", "4", "--range-days", "0.05"]) == 0
    out = capsys.readouterr().out
    doc = json.loads(out.strip().splitlines()[-1])
    check_report(out, doc, tmp_path)
    assert set(doc) == {
        "policies",
        "floor_s",
        "by_kind",
        "kueue_tas_mid",
        "headline",
        "sensitivity",
        "parameters",
        "ablation",
        "unsafe_force_deletes",
        "chip_signals",
        "false_declarations",
        "maintenance",
    }
    assert isinstance(doc["unsafe_force_deletes"], int)
    assert isinstance(doc["false_declarations"], int)
    assert len(doc["chip_signals"]) == 5
    for label, by_kind in doc["chip_signals"].items():
        assert set(by_kind) == {"chip_error", "workload_crash"}, label
        for c in by_kind.values():
            assert set(c) == {"mttr_p50_s", "mttr_p95_s", "pools_declared"}
            assert isinstance(c["pools_declared"], int)
    assert set(doc["maintenance"]) == {*POLICIES, "kueue_tas_mid", "hotswap_moves_off"}
    for m in doc["maintenance"].values():
        assert set(m) == M_KEYS
        assert m["unplanned_downtime_s"] >= 0 and m["planned_downtime_s"] >= 0
        assert m["total_downtime_s"] == pytest.approx(
            m["unplanned_downtime_s"] + m["planned_downtime_s"], abs=0.2
        )
        assert isinstance(m["moves_at_checkpoint"], int) and isinstance(m["moves_at_deadline"], int)
    for policy in ("recipe", "kueue_tas", "kueue_tas_mid", "hotswap_moves_off"):
        m = doc["maintenance"][policy]
        assert m["planned_downtime_s"] == 0 and m["moves_at_checkpoint"] == m["moves_at_deadline"] == 0
    assert len(doc["ablation"]) == len(ABLATION) == 9
    for label, by_kind in doc["ablation"].items():
        assert set(by_kind) == {"host_death", "kubelet_restart"}, label
        for a in by_kind.values():
            assert set(a) == {"mttr_p50_s", "mttr_p95_s", "force_deletes", "unsafe_force_deletes"}
            if "no Compute" not in label:
                assert a["unsafe_force_deletes"] == 0, f"{label}: corroboration must fence"
    assert set(doc["policies"]) == POLICIES
    for p in doc["policies"].values():
        check_p(p)
    assert is_number(doc["floor_s"]) and doc["floor_s"] > 0
    assert set(doc["by_kind"]) == {
        "host_death",
        "chip_error",
        "kubelet_restart",
        "maintenance",
        "spot_preemption",
        "mass_event",
        "workload_crash",
    }
    for by_policy in doc["by_kind"].values():
        assert set(by_policy) == POLICIES
        for p in by_policy.values():
            check_p(p)
    assert doc["by_kind"]["host_death"] == doc["policies"], "the headline is the host-death run"
    assert set(doc["kueue_tas_mid"]) == set(doc["by_kind"])
    for p in doc["kueue_tas_mid"].values():
        check_p(p)
    assert set(doc["headline"]) == {*POLICIES, "kueue_tas_mid"}
    assert doc["headline"]["hotswap"]["unsafe_force_deletes"] == 0, "the shipped settings fence"
    assert doc["headline"]["hotswap"]["host_death_p50_s"] == doc["policies"]["hotswap"]["mttr_p50_s"]
    assert set(doc["sensitivity"]) == {
        "compute_status_lag_s",
        "pod_startup_s",
        "hung_guest_fraction",
        "compute_restart_fraction",
        "compute_reset_s",
    }
    for points in doc["sensitivity"].values():
        for row in points.values():
            assert set(row) == POLICIES
    assert all(set(p) == {"value", "source", "ref"} for p in doc["parameters"].values())
    assert {p["source"] for p in doc["parameters"].values()} <= {"doc", "code", "measured", "chosen"}


def test_reconcile_bench_json_shape(capsys: pytest.CaptureFixture[str]) -> None:
    assert load("reconcile").main(["--sizes", "4", "8", "--runs", "3"]) == 0
    doc = last_json(capsys)
    assert [r["slices"] for r in doc["runs"]] == [4, 8]
    for r in [*doc["runs"], *doc["runs_single_incident"]]:
        assert set(r) == {"slices", "nodes", "pods", "reconcile_ms_p50", "reconcile_ms_p99", "peak_mib"}
        assert r["nodes"] == 4 * r["slices"] and r["pods"] >= r["nodes"]
        assert all(is_number(r[k]) for k in ("reconcile_ms_p50", "reconcile_ms_p99", "peak_mib"))


def test_plan_bench_generates_a_valid_stack_and_reports(capsys: pytest.CaptureFixture[str]) -> None:
    plan = load("plan")
    assert plan.main(["--teams", "3", "--slices", "4", "--renders", "1"]) == 0
    doc = last_json(capsys)
    assert doc["teams"] == 3 and doc["slices"] == 4 and doc["resources"] > 0
    assert all(is_number(doc[k]) for k in ("validate_s", "render_first_s", "render_p50_s", "plan_kib"))


def test_the_generated_large_stack_fits_its_capacity() -> None:
    from tpu_platform.config import parse_platform
    from tpu_platform.quota import unassigned_slices

    raw = load("plan").big_stack(50, 64)
    cfg = parse_platform({key.split(":", 1)[1]: value for key, value in raw.items()})
    assert len(cfg.teams) == 50
    assert all(v == 0 for v in unassigned_slices(cfg).values()), "every slice is in exactly one nominal quota"


def test_mttr_bench_takes_controller_settings(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--stack", "seed", "--days", "1", "--node-mtbf-days", "1", "--seed", "4"]
    args += ["--kinds", "host_death", "--no-sensitivity"]
    assert load("mttr").main(args) == 0
    default = last_json(capsys)
    assert load("mttr").main([*args, "--setting", "lease_stale_seconds=20"]) == 0
    out = capsys.readouterr().out
    doc = json.loads(out.strip().splitlines()[-1])
    assert "controller settings: lease_stale_seconds=20" in out
    assert doc["floor_s"] == default["floor_s"], "the floor is what the signals allow, not a setting"
    assert doc["policies"]["recipe"] == default["policies"]["recipe"], "settings move only the controller"
    with pytest.raises(SystemExit, match="lease_stale_seconds"):
        load("mttr").main([*args, "--setting", "lease_stale_seconds=15"])


def test_every_ablation_row_sets_every_early_detection_mechanism() -> None:
    """The prod stack turns the Lease signal on: a row that left a mechanism to the stack would report
    the stack's setting as "off"."""

    keys = {"lease_stale_seconds", "compute_corroboration", "force_delete_unconfirmed", "reset_silent_vms"}
    assert ABLATION[0][1] == {
        "lease_stale_seconds": 0,
        "compute_corroboration": True,
        "force_delete_unconfirmed": False,
        "reset_silent_vms": True,
    }
    for label, settings, _ in ABLATION:
        assert keys <= set(settings), label
    assert len({tuple(sorted(s.items())) for _, s, t in ABLATION if not t}) == 6, "six distinct mechanisms"


def test_mttr_bench_prints_episode_timelines(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--stack", "seed", "--days", "1", "--node-mtbf-days", "1", "--seed", "4", "--kinds", "host_death"]
    assert load("mttr").main([*args, "--no-sensitivity", "--no-ablation", "--timeline", "2"]) == 0
    out = capsys.readouterr().out
    assert "== timeline: the first" in out
    section = out.split("== timeline", 1)[1]
    assert section.count("pods Running") >= 1
    assert "NotReady" in section and "pool declared" in section, "the seed stack's default path"
