"""``tpu-platform validate``: check stack files with the program's own reader, rendering nothing.

A project that names its entry (``tpu_platform.entry``) is read through it; a ``cluster.mode:
kubeconfig`` stack's kubeconfig file and context are checked as its provider will read them
(``tpu_platform.config.checks.kubeconfig_file``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..config import StackConfigError
from ..config.checks import stack_warnings
from ..entry import check_platform, entry_here
from ..kubeconfig_check import cluster_problems, platform_cluster, project_folder, stack_file_cluster
from ..plan.stacks import list_stacks, problem_lines
from ..project import StackRef, resolve_stack
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
    entry = entry_here()
    root = project_folder()
    for stack in args.stacks or list_stacks(args.stacks_dir):
        ref = resolve_stack(stack, args.stacks_dir)
        try:
            cfg = check_platform(ref.path, entry)
        except StackConfigError as err:
            cluster = stack_file_cluster(ref.path) if entry is None and str(ref.path) != "-" else None
            _report(ref, err.problems + cluster_problems(cluster, root).lines)
            status = 2
            continue
        problems = cluster_problems(platform_cluster(cfg), root).lines
        if problems:
            _report(ref, problems)
            status = 2
            continue
        print(f"stack {ref.name}: ok")
        for line in stack_warnings(cfg).lines:
            print(f"stack {ref.name}: warning: {line}", file=sys.stderr)
        print(summarize(cfg).as_text())
    return status


def _report(ref: StackRef, problems: list[str]) -> None:
    for line in problem_lines(StackConfigError(problems), ref.path):
        print(f"stack {ref.name}: {line}", file=sys.stderr)
