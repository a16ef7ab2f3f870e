"""``tpu-platform review STACK [--base REF]``: a stack's fresh plan against the plan rendered at a git
ref by that commit's own code, in a throwaway repository (a copy of this one, a change on a branch)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tpu_platform.cli import main

REPO_ROOT = Path(__file__).resolve().parents[2]
COPIED = ("tpu_platform", "components", "stacks", "Pulumi.yaml", "pyproject.toml", "__main__.py")
SCRAPE = Path("tpu_platform/monitoring/scrape.py")
PART_OF = 'LABELS = {LABEL_PART_OF: "tpu-platform"}'
BORROWING = "          slices: 1\n          borrowingLimitSlices: 1\n"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="no git")


def _git(repo: Path, *args: str) -> str:
    cmd = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """main: this project with the monitoring label changed in code; branch ``change``: the label back
    as this checkout has it, and a team's borrowing limit lowered in the dev stack file."""
    root = tmp_path_factory.mktemp("repo")
    for name in COPIED:
        source = REPO_ROOT / name
        if source.is_dir():
            shutil.copytree(source, root / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, root / name)
    scrape = root / SCRAPE
    original = scrape.read_text()
    assert PART_OF in original
    _git(root, "init", "-q", "-b", "main")
    scrape.write_text(original.replace(PART_OF, PART_OF.replace('"tpu-platform"', '"tpu-platform-old"')))
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "base")
    _git(root, "checkout", "-q", "-b", "change")
    scrape.write_text(original)
    dev = root / "stacks" / "Pulumi.dev.yaml"
    assert BORROWING in dev.read_text()
    dev.write_text(dev.read_text().replace(BORROWING, BORROWING.replace("Slices: 1", "Slices: 0"), 1))
    _git(root, "commit", "-q", "-am", "change")
    yield root


def _review(
    repo: Path, argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    monkeypatch.chdir(repo)
    status = main(["review", *argv])
    out = capsys.readouterr()
    return status, out.out, out.err


def test_a_branch_is_reviewed_against_its_merge_base_with_main(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = _review(repo, ["dev"], monkeypatch, capsys)
    assert status == 0, out
    base = _git(repo, "merge-base", "HEAD", "main").strip()
    assert f"review: against merge-base HEAD main ({base[:12]})" in out
    assert "update  kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue::" in out
    assert "borrowingLimit" in out
    # the base was rendered by the base's own code: its label, not this checkout's
    assert "app.kubernetes.io/part-of: tpu-platform-old -> tpu-platform" in out
    assert _git(repo, "status", "--porcelain") == ""  # the working tree is untouched


def test_an_explicit_base(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = _review(repo, ["dev", "--base", "HEAD"], monkeypatch, capsys)
    assert status == 0 and "0 create, 0 update, 0 replace, 0 delete" in out
    status, _, err = _review(repo, ["dev", "--base", "no-such-ref"], monkeypatch, capsys)
    assert status == 2 and "--base no-such-ref: no such commit" in err


def test_without_main_the_review_says_it_compares_with_head(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "-q", "--branch", "change", "--single-branch", str(repo), str(clone)], check=True
    )
    _git(clone, "branch", "-q", "-m", "change", "trunk")
    _git(clone, "remote", "remove", "origin")
    status, out, err = _review(clone, ["dev"], monkeypatch, capsys)
    assert status == 0
    assert "no branch main or origin/main: reviewing against HEAD" in err
    assert "0 create, 0 update, 0 replace, 0 delete" in out


def test_the_folder_form_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    plans = REPO_ROOT / "plans"
    status, out, _ = _review(REPO_ROOT, [str(plans), str(plans)], monkeypatch, capsys)
    assert status == 0 and out.count("== stack ") == len(list(plans.glob("*.yaml")))
