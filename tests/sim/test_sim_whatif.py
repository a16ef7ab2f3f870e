"""``tpu-platform whatif``: prints MTTRs and lost work, writes the timeline PNG."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tpu_platform.cli import main

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
DURATION = r"(\d+m\d\ds|\d+s)"


def test_whatif_on_the_seed_stack_prints_mttrs_and_writes_a_timeline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["whatif", "seed", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    row = re.search(rf"default/training-4x4-high\s+{DURATION}\s+{DURATION}\s+{DURATION}", out)
    assert row, out
    seconds = [
        int(m) * 60 + int(s) if m else int(s)
        for m, s in (re.fullmatch(r"(?:(\d+)m)?(\d+)s", d).groups() for d in row.groups())  # type: ignore[union-attr]
    ]
    recipe, kueue_tas, hotswap = seconds
    assert recipe > kueue_tas > hotswap, "on a dead node: the controller, then Kueue's own recovery"
    assert "default/training-4x4-low-0" in out, "the preempted low-priority JobSet and its lost work"
    assert "floor 87s = NotReady 50s" in out, "the seed stack runs Kubernetes 1.32 or later"
    assert "training back where it was" in out
    png = tmp_path / "whatif-seed.png"
    assert png.read_bytes()[:8] == PNG_SIGNATURE
    assert png.stat().st_size > 20_000
    assert f"timeline: {png}" in out


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
    assert re.search(rf"default/train\s+{DURATION}\s+{DURATION}\s+{DURATION}", out), out
    # JobSet recreates the Job only once the pod stuck on the dead node is gone (jobset
    # ``shouldCreateJob``), and that pod's anti-affinity keeps other Jobs off the slice until then.
    for policy in ("recipe", "kueue_tas", "hotswap"):
        assert re.search(rf"{policy}: .* 0 leader\(s\) placed on a broken slice", out), out


def test_whatif_fails_the_named_pool(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workloads = tmp_path / "jobs.yaml"
    workloads.write_text(JOBS)
    args = ["whatif", "seed", "--fail", "seed-4x4-1", "--at", "3000", "--after", "1800"]
    assert main([*args, "--workloads", str(workloads), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "node seed-4x4-1-n3 of slice seed-4x4-1 fails at t=3000s" in out
    high_hit = re.search(rf"default/train\s+{DURATION}\s+{DURATION}\s+{DURATION}", out) is not None
    low_hit = re.search(r"default/sweep\s+[\d.]+ failure\s+[\d.]+ \w+\s+[\d.]+ failure", out) is not None
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
