"""``python -m tpu_platform``: offline tools for a stack (plan, validate)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence
from pathlib import Path

from .config import StackConfigError
from .plan import dump_plan, list_stacks, load_stack_config, parse_stack_config, plan_document, render
from .plan.review import check_plan
from .plan.stacks import PLANS_DIR, REPO_ROOT, STACKS_DIR, stack_file
from .summary import summarize


def render_plan(stack: str, stacks_dir: Path = STACKS_DIR) -> tuple[str, str]:
    """The plan text and the human summary of one stack; raises ``StackConfigError``."""
    from tpu_platform.components.program import stack_program

    config = load_stack_config(stack_file(stack, stacks_dir))
    cfg = parse_stack_config(config)
    summary = summarize(cfg)
    with contextlib.chdir(REPO_ROOT):  # Pulumi runs a program from its project folder
        rendering = render(stack_program, config, stack=stack)
    return dump_plan(plan_document(stack, rendering, summary.as_dict())), summary.as_text()


def _cmd_plan(args: argparse.Namespace) -> int:
    stacks = list_stacks(args.stacks_dir) if args.all or not args.stacks else args.stacks
    plans_dir: Path = args.plans_dir
    stale: list[str] = []
    for stack in stacks:
        try:
            text, summary = render_plan(stack, args.stacks_dir)
        except StackConfigError as err:
            print(f"stack {stack}: {err}", file=sys.stderr)
            return 2
        target = plans_dir / f"{stack}.yaml"
        if args.check:
            current = target.read_text() if target.exists() else ""
            if current != text:
                stale.append(stack)
                config = load_stack_config(stack_file(stack, args.stacks_dir))
                sys.stdout.write(check_plan(stack, current, text, config)[0])
            continue
        plans_dir.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        print(f"== stack {stack} -> {target}")
        print(summary)
    if stale:
        print(
            f"stale plans: {', '.join(stale)}; run `python -m tpu_platform plan --all` and commit plans/",
            file=sys.stderr,
        )
        return 1
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    status = 0
    for stack in args.stacks or list_stacks(args.stacks_dir):
        try:
            cfg = parse_stack_config(load_stack_config(stack_file(stack, args.stacks_dir)))
        except StackConfigError as err:
            print(f"stack {stack}: {err}", file=sys.stderr)
            status = 2
            continue
        print(f"stack {stack}: ok")
        print(summarize(cfg).as_text())
    return status


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tpu_platform", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    plan = sub.add_parser("plan", help="render stacks offline into plans/<stack>.yaml")
    plan.add_argument("stacks", nargs="*", help="stack names (default: every stack file)")
    plan.add_argument("--all", action="store_true", help="every stack in the stacks folder")
    plan.add_argument("--check", action="store_true", help="fail if a committed plan is stale")
    plan.add_argument("--stacks-dir", type=Path, default=STACKS_DIR)
    plan.add_argument("--plans-dir", type=Path, default=PLANS_DIR)
    plan.set_defaults(func=_cmd_plan)

    validate = sub.add_parser("validate", help="check stack files without rendering")
    validate.add_argument("stacks", nargs="*")
    validate.add_argument("--stacks-dir", type=Path, default=STACKS_DIR)
    validate.set_defaults(func=_cmd_validate)

    from .lint import command as lint_command

    lint = sub.add_parser("lint", help=lint_command.HELP)
    lint_command.configure(lint)
    lint.set_defaults(func=lint_command.run)

    from tpu_platform.sim import whatif as whatif_command

    whatif = sub.add_parser("whatif", help=whatif_command.HELP)
    whatif_command.configure(whatif)
    whatif.set_defaults(func=whatif_command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))
