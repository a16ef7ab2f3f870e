"""The ``tpu-platform`` command line: help, version, stack names and paths, exit codes, closed pipes."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from tpu_platform import __version__, cli
from tpu_platform.project import ProjectError, find_project, resolve_stack

REPO_ROOT = Path(__file__).resolve().parents[1]


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"tpu-platform {__version__}"


def test_help_lists_every_subcommand_with_its_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    for name, _module in cli.COMMANDS:
        assert f"\n    {name} " in out, name
    assert "exit codes:" in out and "141" in out


@pytest.mark.parametrize("command", [name for name, _ in cli.COMMANDS])
def test_each_subcommand_has_its_own_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main([command, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: tpu-platform {command}")
    assert "python -m" not in out


def test_an_unknown_subcommand_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["deploy"])
    assert exit_.value.code == 2
    assert "invalid choice: 'deploy'" in capsys.readouterr().err


def test_validate_takes_a_path_a_name_and_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO_ROOT)
    assert cli.main(["validate", "stacks/Pulumi.dev.yaml"]) == 0
    assert capsys.readouterr().out.startswith("stack dev: ok")
    assert cli.main(["validate", "dev"]) == 0
    assert capsys.readouterr().out.startswith("stack dev: ok")
    monkeypatch.setattr(sys, "stdin", io.StringIO((REPO_ROOT / "stacks" / "Pulumi.prod.yaml").read_text()))
    assert cli.main(["validate", "-"]) == 0
    assert capsys.readouterr().out.startswith("stack stdin: ok")


def test_validate_warns_about_slices_without_teams(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO_ROOT)
    lonely = tmp_path / "Pulumi.lonely.yaml"
    lonely.write_text(
        "config:\n  gcp:project: my-project\n  gcp:region: us-east5\n  gcp:zone: us-east5-b\n"
        "  tpu-platform:cluster: {name: lonely}\n"
        "  tpu-platform:slicePools: [{name: p, topology: 4x4}]\n"
    )
    assert cli.main(["validate", str(lonely)]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("stack lonely: ok")
    assert "warning: tpu-platform:teams: no teams" in captured.err


def test_validate_of_a_missing_or_broken_file_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO_ROOT)
    assert cli.main(["validate", str(tmp_path / "Pulumi.nope.yaml")]) == 2
    assert "no such stack file" in capsys.readouterr().err
    broken = tmp_path / "Pulumi.bad.yaml"
    broken.write_text("config: [unclosed\n")
    assert cli.main(["validate", str(broken)]) == 2
    assert "not valid YAML" in capsys.readouterr().err


def test_stack_names_resolve_in_the_project_of_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "Pulumi.yaml").write_text("name: mine\nruntime: python\nstackConfigDir: envs\n")
    (tmp_path / "envs").mkdir()
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    project = find_project()
    assert (project.root, project.stacks_dir, project.plans_dir) == (
        tmp_path,
        tmp_path / "envs",
        tmp_path / "plans",
    )
    assert resolve_stack("dev").path == tmp_path / "envs" / "Pulumi.dev.yaml"
    assert resolve_stack("envs/Pulumi.x.yaml").name == "x"


def test_outside_a_project_a_stack_name_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ProjectError, match=r"no Pulumi\.yaml in"):
        find_project()
    assert cli.main(["validate", "dev"]) == 2
    assert "tpu-platform validate: no Pulumi.yaml" in capsys.readouterr().err


def test_a_missing_optional_dependency_names_its_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tpu_platform.commands import validate

    def run(_args: object) -> int:
        raise ModuleNotFoundError("No module named 'celpy'", name="celpy")

    monkeypatch.setattr(validate, "run", run)
    assert cli.main(["validate", "dev"]) == 2
    assert "pip install 'tpu-platform[lint]'" in capsys.readouterr().err


def test_an_unexpected_missing_module_is_not_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    from tpu_platform.commands import validate

    def run(_args: object) -> int:
        raise ModuleNotFoundError("No module named 'nowhere'", name="nowhere")

    monkeypatch.setattr(validate, "run", run)
    with pytest.raises(ModuleNotFoundError):
        cli.main(["validate", "dev"])


def test_a_closed_pipe_ends_quietly() -> None:
    """``tpu-platform validate | head -1`` when head has gone: no BrokenPipeError traceback, exit 141."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tpu_platform", "validate"],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before anything is written
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 141
    assert "Traceback" not in err and "BrokenPipe" not in err


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_only_on_a_terminal() -> None:
    from tpu_platform.terminal import Progress

    tty, pipe = _Tty(), io.StringIO()
    for stream in (tty, pipe):
        progress = Progress(stream)
        progress.step("rendering dev (1/3) ...")
        progress.done()
    assert "rendering dev (1/3) ..." in tty.getvalue() and tty.getvalue().endswith("\r")
    assert pipe.getvalue() == ""


def test_colour_only_on_a_terminal_and_never_with_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    from tpu_platform.terminal import paint

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert paint("error", "red", _Tty()) == "\033[31merror\033[0m"
    assert paint("error", "red", io.StringIO()) == "error"
    monkeypatch.setenv("NO_COLOR", "1")
    assert paint("error", "red", _Tty()) == "error"
