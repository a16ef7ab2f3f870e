"""``tpu-platform policy``: the policy pack's rules over each stack's offline plan, without Pulumi.

Renders each stack under Pulumi's mocks (no credentials needed, so it also runs for pull requests
from forks) and checks the recording with the same rules a real ``pulumi preview --policy-pack
policy`` enforces. A project that names its entry (``tpu_platform.entry``) renders its own program.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

HELP = "run the policy pack's rules over stacks' offline plans (exit 1 on a violation)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "stacks", nargs="*", metavar="STACK", help="stack names or stack file paths (default: every stack)"
    )
    parser.add_argument("--stacks-dir", type=Path, help="folder of the stack files (default: the project's)")
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="DIR",
        help="folder of the deployed plans/<stack>.yaml (e.g. the base branch's): also run "
        "tpu-pool-replacement, which denies replacing or deleting an unacknowledged TPU slice",
    )


def run(args: argparse.Namespace) -> int:
    from ..components.program import stack_program
    from ..config import StackConfigError
    from ..entry import entry_here, stack_platform
    from ..plan import list_stacks, render
    from ..plan.stacks import problem_lines
    from ..policy.offline import check_rendering, check_replacement
    from ..project import resolve_stack

    failed = 0
    invalid = False
    entry = entry_here()
    for stack in args.stacks or list_stacks(args.stacks_dir):
        ref = resolve_stack(stack, args.stacks_dir)
        try:
            config, _cfg = stack_platform(ref.path, entry)
        except StackConfigError as err:
            for line in problem_lines(err, ref.path):
                print(f"stack {ref.name}: {line}", file=sys.stderr)
            invalid = True
            continue
        if entry is None:
            rendering = render(stack_program, config, stack=ref.name)
        else:
            with contextlib.chdir(entry.project.root):  # Pulumi runs a program from its project folder
                rendering = render(entry.run_program, config, project=entry.project.name, stack=ref.name)
        violations = check_rendering(rendering)
        baseline = args.baseline / f"{ref.name}.yaml" if args.baseline else None
        if baseline is not None and baseline.is_file():
            violations += check_replacement(rendering, baseline, ref.path)
        count = len(violations)
        print(f"stack {ref.name}: {count or 'no'} violation{'' if count == 1 else 's'}")
        for violation in violations:
            print(f"  - {violation}")
        failed += bool(violations)
    return 2 if invalid else 1 if failed else 0
