"""``tpu-platform review BASE HEAD``: what a change of plans replaces, creates, updates and deletes.

TPU slices that would be replaced or deleted come first; the exit status is 1 when a stack does not
acknowledge one under ``tpu-platform:acknowledgeReplacement``. CI runs it on the base branch's
plans and the pull request's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = "compare two folders of plans: replaced or deleted TPU slices first (exit 1 unless acknowledged)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("base", type=Path, help="folder of the base branch's plans/<stack>.yaml")
    parser.add_argument("head", type=Path, help="folder of the branch's plans/<stack>.yaml")
    parser.add_argument("--stacks-dir", type=Path, help="folder of the stack files (default: the project's)")


def run(args: argparse.Namespace) -> int:
    from ..plan.review import review_folders
    from ..project import find_project

    for role, folder in (("base", args.base), ("head", args.head)):
        if not folder.is_dir():
            print(
                f"review: {role} {folder}: no such folder of plans; pass the folder that holds "
                "<stack>.yaml plans (an empty folder if that side has none yet)",
                file=sys.stderr,
            )
            return 2
    stacks_dir = args.stacks_dir or find_project().stacks_dir
    text, status = review_folders(args.base, args.head, stacks_dir)
    sys.stdout.write(text)
    return status
