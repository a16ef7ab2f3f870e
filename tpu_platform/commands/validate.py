"""``tpu-platform validate``: check stack files with the program's own reader, rendering nothing."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..config import StackConfigError
from ..config.checks import stack_warnings
from ..plan.stacks import check_stack_file, list_stacks, problem_lines
from ..project import resolve_stack
from ..summary import summarize

HELP = "check stack files without rendering them (exit 2 on the first invalid one, after checking all)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "stacks",
        nargs="*",
        metavar="STACK",
        help="stack names, stack file paths, or - for a stack file on stdin (default: every stack)",
    )
    parser.add_argument("--stacks-dir", type=Path, help="folder of the stack files (default: the project's)")


def run(args: argparse.Namespace) -> int:
    status = 0
    for stack in args.stacks or list_stacks(args.stacks_dir):
        ref = resolve_stack(stack, args.stacks_dir)
        try:
            cfg = check_stack_file(ref.path)
        except StackConfigError as err:
            for line in problem_lines(err, ref.path):
                print(f"stack {ref.name}: {line}", file=sys.stderr)
            status = 2
            continue
        print(f"stack {ref.name}: ok")
        for line in stack_warnings(cfg).lines:
            print(f"stack {ref.name}: warning: {line}", file=sys.stderr)
        print(summarize(cfg).as_text())
    return status
