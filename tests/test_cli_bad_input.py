"""Every command on bad input: one line per problem naming the input, exit 2, never a traceback or a
silent success; a stack named by its path needs no Pulumi project."""

from __future__ import annotations

import subprocess
import sys
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


BLOCK_EXTRAS = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"jsonschema", "celpy", "lark", "kubernetes_validate", "matplotlib",
                                  "kubernetes"}:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Block())
from tpu_platform import cli
sys.exit(cli.main(sys.argv[1:]))
"""


def _without_extras(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCK_EXTRAS, *argv],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        check=False,
    )


def test_lint_without_schema_needs_no_extra_and_with_it_names_the_extra() -> None:
    plain = _without_extras("lint", str(JOBSET), "--stack", "dev", "--no-schema")
    assert plain.returncode == 1 and "queue-not-found" in plain.stdout, plain.stderr
    schema = _without_extras("lint", str(JOBSET), "--stack", "dev")
    assert schema.returncode == 2
    assert schema.stderr.strip() == (
        "tpu-platform lint: needs the optional dependencies of 'lint' (module jsonschema is missing): "
        "pip install 'tpu-platform[lint]'"
    )


def test_status_names_its_extra_and_without_a_kubeconfig_says_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "pip install 'tpu-platform[status]'" in _without_extras("status").stderr
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert cli.main(["status"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert f"looked in the in-cluster service account, then {tmp_path}/.kube/config" in err[1]
    assert "gcloud container clusters get-credentials CLUSTER" in err[2]
