"""Every command on bad input: one line per problem naming the input, exit 2, never a traceback or a
silent success; a stack named by its path needs no Pulumi project."""

from __future__ import annotations

from pathlib import Path

import pytest

from tpu_platform import cli

REPO_ROOT = Path(__file__).resolve().parents[1]
DEV = REPO_ROOT / "stacks" / "Pulumi.dev.yaml"
JOBSET = REPO_ROOT / "examples" / "jobsets" / "high-jax-trillium.yaml"


@pytest.fixture
def outside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory in no Pulumi project, with one invalid stack file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "Pulumi.bad.yaml").write_text("config:\n  tpu-platform:cluster: 3\n")
    return tmp_path


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err.splitlines()


@pytest.mark.parametrize(
    "argv",
    [
        ["validate", "{bad}"],
        ["policy", "{bad}"],
        ["whatif", "{bad}"],
        ["lint", str(JOBSET), "--no-schema", "--stack", "{bad}"],
    ],
    ids=["validate", "policy", "whatif", "lint"],
)
def test_an_invalid_stack_is_one_line_per_problem_naming_the_file(
    argv: list[str], outside: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = str(outside / "Pulumi.bad.yaml")
    code, lines = _run([a.replace("{bad}", bad) for a in argv], capsys)
    assert code == 2
    problems = [line for line in lines if "tpu-platform:cluster" in line]
    assert len(problems) == 1, lines
    assert "must be a mapping" in problems[0] and "change the value" in problems[0]
    assert all(argv[0] in line or bad in line for line in lines), lines


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["review", "/nonexistent-base", str(REPO_ROOT / "plans")], "no such folder of plans"),
        (["validate", "--stacks-dir", "/nonexistent-stacks"], "no such folder of stack files"),
        (["validate", "--stacks-dir", "{here}"], "no Pulumi.<stack>.yaml stack file here"),
        (["whatif", "{here}/Pulumi.nope.yaml"], "no such stack file"),
    ],
    ids=["review-missing-base", "validate-missing-dir", "validate-empty-dir", "whatif-missing-file"],
)
def test_a_missing_file_or_folder_is_an_error_not_an_empty_success(
    argv: list[str], words: str, outside: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (outside / "Pulumi.bad.yaml").unlink()
    code, lines = _run([a.replace("{here}", str(outside)) for a in argv], capsys)
    assert code == 2
    assert len(lines) == 1 and words in lines[0], lines


def test_a_stack_path_and_a_stacks_dir_work_outside_any_project(
    outside: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--stack path/to/Pulumi.dev.yaml`` and ``--stack dev --stacks-dir DIR`` mean the same stack."""
    by_path = cli.main(["lint", str(JOBSET), "--no-schema", "--stack", str(DEV)])
    out_path = capsys.readouterr()
    by_name = cli.main(
        ["lint", str(JOBSET), "--no-schema", "--stack", "dev", "--stacks-dir", str(DEV.parent)]
    )
    out_name = capsys.readouterr()
    assert by_path == by_name != 2
    assert out_path.out == out_name.out and out_path.err == out_name.err == ""


def test_whatif_names_its_picture_after_the_stack_not_its_path(
    outside: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["whatif", str(DEV), "--out", str(outside)]) == 0
    assert (outside / "whatif-dev.png").is_file()
    assert f"timeline: {outside / 'whatif-dev.png'}" in capsys.readouterr().out
