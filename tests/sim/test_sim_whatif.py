"""``tpu-platform whatif``: prints MTTRs and lost work as p50 (p95) over seeded draws, writes the timeline
PNG."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tpu_platform.cli import main
from tpu_platform.sim.draws import p50_p95
from tpu_platform.sim.metrics import percentile

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
DURATION = r"(\d+m\d\ds|\d+s)"
SPREAD = rf"{DURATION} \({DURATION}\)"
"""A cell: the p50 with the p95 beside it."""


def test_whatif_on_the_seed_stack_prints_mttrs_and_writes_a_timeline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["whatif", "seed", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    row = re.search(rf"default/training-4x4-high\s+{SPREAD}\s+{SPREAD}\s+{SPREAD}", out)
    assert row, out
    recipe, kueue_tas, hotswap = (_seconds(d) for d in row.groups()[::2])
    assert recipe > kueue_tas > hotswap, "on a dead node: the controller, then Kueue's own recovery"
    assert "default/training-4x4-low-0" in out, "the preempted low-priority JobSet and its lost work"
    assert "floor 87s = NotReady 50s" in out, "the seed stack runs Kubernetes 1.32 or later"
    assert "training back where it was" in out
    png = tmp_path / "whatif-seed.png"
    assert png.read_bytes()[:8] == PNG_SIGNATURE
    assert png.stat().st_size > 20_000
    assert f"timeline: {png}" in out


def _seconds(duration: str) -> int:
    m, s = re.fullmatch(r"(?:(\d+)m)?(\d+)s", duration).groups()  # type: ignore[union-attr]
    return int(m) * 60 + int(s) if m else int(s)


JOBS = """
workloads:
  - {name: train, team: training, priority: high-priority-job, topology: 4x4, restartStrategy: Recreate,
     podFailurePolicy: false}
  - {name: sweep, queue: default-queue, priority: low-priority-job, topology: 4x4, checkpointSeconds: 600}
"""


def test_whatif_reads_a_workload_file_and_no_policy_strands_a_leader_on_the_broken_slice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workloads = tmp_path / "jobs.yaml"
    workloads.write_text(JOBS)
    code = main(
        [
            "whatif",
            "seed",
            "--at",
            "3000",
            "--after",
            "1800",
            "--workloads",
            str(workloads),
            "--out",
            str(tmp_path),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert re.search(rf"default/train\s+{SPREAD}\s+{SPREAD}\s+{SPREAD}", out), out
    # JobSet recreates the Job only once the pod stuck on the dead node is gone (jobset
    # ``shouldCreateJob``), and that pod's anti-affinity keeps other Jobs off the slice until then.
    for policy in ("recipe", "kueue_tas", "hotswap"):
        assert re.search(rf"{policy}: .* 0 leader\(s\) placed on a broken slice", out), out


def test_whatif_fails_the_named_pool(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workloads = tmp_path / "jobs.yaml"
    workloads.write_text(JOBS)
    args = ["whatif", "seed", "--fail", "seed-4x4-1", "--at", "3000", "--after", "1800", "--draws", "1"]
    assert main([*args, "--workloads", str(workloads), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "node seed-4x4-1-n3 of slice seed-4x4-1 fails at t=3000s" in out
    high_hit = re.search(rf"default/train\s+{SPREAD}\s+{SPREAD}\s+{SPREAD}", out) is not None
    lost = r"[\d.]+ \([\d.]+\)"
    low_hit = re.search(rf"default/sweep\s+{lost} failure\s+{lost} \w+\s+{lost} failure", out) is not None
    assert high_hit != low_hit, "exactly one of the two JobSets ran on the failed slice"
    assert (tmp_path / "whatif-seed.png").exists()


def test_whatif_rejects_an_unknown_pool_and_a_bad_workload_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["whatif", "seed", "--fail", "nope", "--out", str(tmp_path)]) == 2
    assert "no node pool 'nope'" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("workloads:\n  - {name: x, team: training, priority: urgent, topology: 4x4}\n")
    assert main(["whatif", "seed", "--workloads", str(bad), "--out", str(tmp_path)]) == 2
    assert "workloads[0].priority: 'urgent' is not one of" in capsys.readouterr().err


def _whatif(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    assert main(["whatif", "seed", "--after", "1800", "--out", str(tmp_path), *extra]) == 0
    return capsys.readouterr().out


def test_whatif_reports_p50_and_p95_over_the_seeds_it_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _whatif(tmp_path, capsys, "--seed", "3", "--draws", "5")
    assert "over 5 seeded draws, seeds 3-7" in out
    assert "each figure is the p50, the p95 beside it in brackets" in out
    assert "(the draw of seed 3)" in out, "the picture is the first seed's draw"
    durations = re.findall(SPREAD, out)
    assert len(durations) >= 6, out
    assert all(_seconds(p50) <= _seconds(p95) for p50, p95 in durations), durations
    chip_hours = re.findall(r"([\d.]+) \(([\d.]+)\)", out)
    assert len(chip_hours) >= 9, out
    assert all(float(p50) <= float(p95) for p50, p95 in chip_hours), chip_hours


def test_whatif_prints_the_same_figures_for_the_same_seed_and_draws(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _whatif(tmp_path, capsys, "--seed", "2", "--draws", "3")
    assert _whatif(tmp_path, capsys, "--seed", "2", "--draws", "3") == first


def _recipe_lost(out: str) -> float:
    found = re.search(r"recipe: ([\d.]+) \([\d.]+\) chip-h lost", out)
    assert found, out
    return float(found.group(1))


def test_the_checkpoint_interval_flag_sets_the_work_lost_and_is_echoed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hourly = _whatif(tmp_path, capsys, "--draws", "2")
    assert "checkpoint interval 60m00s (default: the stack's mix carries no " in hourly
    often = _whatif(tmp_path, capsys, "--draws", "2", "--checkpoint-interval", "10m")
    assert "checkpoint interval 10m00s (from --checkpoint-interval)" in often
    assert _recipe_lost(often) < _recipe_lost(hourly), "at most 10 min of work since the last checkpoint"
    assert _whatif(tmp_path, capsys, "--draws", "2", "--checkpoint-interval", "600") == often, "or seconds"


def test_the_checkpoint_interval_comes_from_each_jobset_unless_the_flag_sets_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workloads = tmp_path / "jobs.yaml"
    workloads.write_text(JOBS)
    args = ["--at", "3000", "--workloads", str(workloads), "--draws", "1"]
    out = _whatif(tmp_path, capsys, *args)
    assert (
        "checkpoint interval default/sweep 10m00s, default/train 60m00s (from each JobSet's annotation "
        f"tpu-platform.dev/checkpoint-interval-seconds: checkpointSeconds in {workloads}, 60m00s where unset)"
    ) in out
    out = _whatif(tmp_path, capsys, *args, "--checkpoint-interval", "1h30m")
    assert "checkpoint interval 90m00s (from --checkpoint-interval)" in out


@pytest.mark.parametrize(
    ("flag", "value", "words"),
    [
        ("--checkpoint-interval", "10x", "'10x' is not a duration such as '30m'"),
        ("--checkpoint-interval", "1h30", "'1h30' is not a duration such as '30m'"),
        ("--checkpoint-interval", "0s", "'0s' is not longer than 0s"),
        ("--checkpoint-interval", "400d", "'400d' is not a duration"),
        ("--draws", "0", "expected a whole number of draws >= 1, got '0'"),
    ],
)
def test_a_bad_flag_value_is_a_usage_error_naming_the_flag(
    flag: str, value: str, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["whatif", "seed", flag, value])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: {words}" in err, err
    assert "Traceback" not in err


def test_p50_and_p95_interpolate_between_closest_ranks_as_the_metrics_do() -> None:
    values = [4.0, 1.0, 3.0, 2.0]
    assert p50_p95(values) == pytest.approx((percentile(values, 50), percentile(values, 95)))
    assert p50_p95(values) == pytest.approx((2.5, 3.85))
    assert p50_p95([7.0]) == (7.0, 7.0), "one draw is its own spread"


def test_the_fastest_and_slowest_draw_bracket_the_percentiles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A percentile hides a fast tail: each policy's fastest and slowest draw is printed too."""
    out = _whatif(tmp_path, capsys, "--draws", "8")
    row = next(line for line in out.splitlines() if line.startswith("  default/training-4x4-high "))
    (note,) = re.findall(r"default/training-4x4-high pods Running, fastest-slowest draw: (.*)\)", out)
    spans = [re.fullmatch(rf"(\w+) {DURATION}-{DURATION}", part) for part in note.split(", ")]
    cells = re.findall(SPREAD, row)
    assert len(cells) == len(spans) == 3
    for span, (p50, p95) in zip(spans, cells, strict=True):
        assert span is not None
        _, fastest, slowest = span.groups()
        assert _seconds(fastest) <= _seconds(p50) <= _seconds(p95) <= _seconds(slowest), (
            span.group(0),
            p50,
            p95,
        )
