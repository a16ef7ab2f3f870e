"""Read files of an upstream repository at a tag from a bare clone, and write a derived data file.

Shared by the scripts that derive committed data from upstream sources (``force_new``,
``installs``, ``provider_rules``), with the error they raise when a source changed shape.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

DATA_DIR = Path(__file__).with_name("data")


class DerivationError(ValueError):
    """The upstream source no longer has the shape its reader knows: read it again before trusting it."""


def _git(git_dir: Path, *args: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True, text=True
    ).stdout


def git_show(git_dir: Path, tag: str, path: str) -> str:
    """The text of ``path`` at ``tag``."""
    return _git(git_dir, "show", f"{tag}:{path}")


def git_ls(git_dir: Path, tag: str, prefix: str) -> list[str]:
    """Every file path under ``prefix`` at ``tag``, sorted."""
    return sorted(_git(git_dir, "ls-tree", "-r", "--name-only", tag, prefix).split())


def write_or_print(text: str, data_file: str, write: bool) -> None:
    """``--write``: replace ``tpu_platform/plan/data/<data_file>``; otherwise print the new text."""
    if write:
        DATA_DIR.joinpath(data_file).write_text(text)
    else:
        sys.stdout.write(text)
