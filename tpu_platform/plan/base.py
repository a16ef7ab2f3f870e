"""The plans of stacks as they were at a git ref, rendered from that commit's own tree.

``tpu-platform review STACK`` compares a stack's fresh plan with the plan the same tool renders at
the base: the merge base with ``main`` by default. The base's files come from ``git archive`` into a
temporary folder (the working tree is never touched), the base's own ``tpu_platform`` renders them
(``python -m tpu_platform plan`` run there, so the base's code, components and stack files make the
base's plan), and the folder is removed after.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

DEFAULT_BRANCHES = ("main", "origin/main")


class BaseError(RuntimeError):
    """The base cannot be found or rendered; ``str(err)`` says why and what to do."""


@dataclass(frozen=True)
class Base:
    """A resolved base: its commit, how it was chosen, and a note when it was a fallback."""

    commit: str
    described: str
    note: str = ""


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=False)


def _commit(repo: Path, ref: str) -> str | None:
    out = _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    return out.stdout.decode().strip() if out.returncode == 0 else None


def repository_root(folder: Path) -> Path:
    out = _git(folder, "rev-parse", "--show-toplevel")
    if out.returncode != 0:
        raise BaseError(
            f"{folder} is not in a git repository: review a stack against a ref needs git history"
        )
    return Path(out.stdout.decode().strip())


def resolve_base(repo: Path, ref: str | None) -> Base:
    """``ref`` as a commit; without one, the merge base of HEAD with ``main`` (or ``origin/main``),
    and HEAD itself, said clearly, when neither branch exists."""
    if ref is not None:
        commit = _commit(repo, ref)
        if commit is None:
            raise BaseError(f"--base {ref}: no such commit in {repo}")
        return Base(commit, ref)
    for branch in DEFAULT_BRANCHES:
        if _commit(repo, branch) is None:
            continue
        out = _git(repo, "merge-base", "HEAD", branch)
        if out.returncode != 0:
            raise BaseError(f"HEAD and {branch} have no common commit: pass --base REF")
        return Base(out.stdout.decode().strip(), f"merge-base HEAD {branch}")
    head = _commit(repo, "HEAD")
    if head is None:
        raise BaseError(f"{repo} has no commit yet: pass --base REF once it has one")
    return Base(
        head,
        "HEAD",
        f"no branch {' or '.join(DEFAULT_BRANCHES)}: reviewing against HEAD (the last commit); "
        "pass --base REF to choose the base",
    )


def _extract(repo: Path, commit: str, into: Path) -> None:
    out = _git(repo, "archive", "--format=tar", commit)
    if out.returncode != 0:
        raise BaseError(f"git archive {commit}: {out.stderr.decode().strip()}")
    with tarfile.open(fileobj=io.BytesIO(out.stdout)) as archive:
        archive.extractall(into, filter="data")


def _link_package_dirs(project: Path) -> None:
    """Make the extracted tree importable as the package it is: a subpackage the project maps to
    another folder (``tpu_platform.components`` = ``components`` in pyproject.toml) is linked there."""
    pyproject = project / "pyproject.toml"
    if not pyproject.is_file():
        return
    mapping = (
        tomllib.loads(pyproject.read_text()).get("tool", {}).get("setuptools", {}).get("package-dir", {})
    )
    for package, folder in mapping.items():
        target = project / package.replace(".", "/")
        if package and not target.exists() and (project / folder).is_dir():
            target.symlink_to((project / folder).resolve(), target_is_directory=True)


def render_at(
    repo: Path, project: Path, stacks_dir: Path, commit: str, stacks: Sequence[str]
) -> dict[str, str]:
    """Each stack's plan text at ``commit`` ('' for a stack the commit has no stack file for)."""
    project_rel = project.resolve().relative_to(repo.resolve())
    stacks_rel = stacks_dir.resolve().relative_to(project.resolve())
    with tempfile.TemporaryDirectory(prefix="tpu-platform-base-") as tmp:
        tree = Path(tmp) / "tree"
        tree.mkdir()
        _extract(repo, commit, tree)
        base_project = tree / project_rel
        base_stacks = base_project / stacks_rel
        present = [s for s in stacks if (base_stacks / f"Pulumi.{s}.yaml").is_file()]
        out_dir = Path(tmp) / "plans"
        if present:
            _link_package_dirs(base_project)
            env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
            cmd = [sys.executable, "-m", "tpu_platform", "plan", *present]
            cmd += ["--stacks-dir", str(base_stacks), "--plans-dir", str(out_dir)]
            done = subprocess.run(cmd, cwd=base_project, env=env, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise BaseError(
                    f"the plan of {', '.join(present)} at {commit[:12]} does not render: "
                    f"{(done.stderr or done.stdout).strip()}"
                )
        return {s: (out_dir / f"{s}.yaml").read_text() if s in present else "" for s in stacks}
