"""``tpu-platform plan``: render stacks offline into ``plans/<stack>.yaml``, or check them.

The program runs under Pulumi's own mocks from the project folder, as ``pulumi up`` runs it, so the
plan lists what a real preview would register: the built-in program, or the program of a project
that names its entry (``tpu_platform.entry``).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from ..config import StackConfigError
from ..config.checks.warnings import google_identity_steps
from ..entry import entry_here, stack_platform
from ..kubeconfig_check import kubeconfig_warnings
from ..plan import dump_plan, list_stacks, load_stack_config, plan_document, render
from ..plan.provider_rules import violations
from ..plan.review import check_plan
from ..plan.stacks import problem_lines
from ..project import Project, ProjectError, find_project, resolve_stack
from ..summary import summarize
from ..terminal import Progress

HELP = "render stacks offline into plans/<stack>.yaml (--check: exit 1 if a committed plan is stale)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "stacks", nargs="*", metavar="STACK", help="stack names or stack file paths (default: every stack)"
    )
    parser.add_argument("--all", action="store_true", help="every stack file of the project")
    parser.add_argument(
        "--check", action="store_true", help="compare with the committed plans instead of writing them"
    )
    parser.add_argument("--stacks-dir", type=Path, help="folder of the stack files (default: the project's)")
    parser.add_argument("--plans-dir", type=Path, help="folder of the plans (default: <project>/plans)")


def render_plan(stack: str, stacks_dir: Path | None = None) -> tuple[str, str]:
    """The plan text and the human summary of one stack; raises ``StackConfigError``."""
    text, summary, _warnings = _render(stack, stacks_dir)
    return text, summary


def _render(stack: str, stacks_dir: Path | None) -> tuple[str, str, list[str]]:
    """``render_plan``, and what the stack needs that the offline plan does without."""
    from ..components.program import stack_program

    ref = resolve_stack(stack, stacks_dir)
    entry = entry_here()
    config, cfg = stack_platform(ref.path, entry)
    summary = summarize(cfg)
    with contextlib.chdir(_program_folder()):  # Pulumi runs a program from its project folder
        if entry is None:
            rendering = render(stack_program, config, stack=ref.name)
        else:
            rendering = render(entry.run_program, config, project=entry.project.name, stack=ref.name)
        document = plan_document(ref.name, rendering, summary.as_dict())  # paths relative to it
    rejected = violations(document["resources"])
    if rejected:
        raise StackConfigError([f"the Google provider would reject {line}" for line in rejected])
    outside = [*kubeconfig_warnings(cfg, _program_folder()), *google_identity_steps(cfg).lines]
    return dump_plan(document), summary.as_text(), outside


def _program_folder() -> Path:
    try:
        return find_project().root
    except ProjectError:
        return Path.cwd()


def _folders(args: argparse.Namespace) -> tuple[Path, Path]:
    if args.stacks_dir is not None and args.plans_dir is not None:
        return args.stacks_dir, args.plans_dir
    project: Project = find_project()
    return args.stacks_dir or project.stacks_dir, args.plans_dir or project.plans_dir


def run(args: argparse.Namespace) -> int:
    stacks_dir, plans_dir = _folders(args)
    stacks: list[str] = list_stacks(stacks_dir) if args.all or not args.stacks else args.stacks
    stale: list[str] = []
    progress = Progress()
    for index, stack in enumerate(stacks, 1):
        ref = resolve_stack(stack, stacks_dir)
        progress.step(f"rendering {ref.name} ({index}/{len(stacks)}) ...")
        try:
            text, summary, warnings = _render(stack, stacks_dir)
        except StackConfigError as err:
            progress.done()
            for line in problem_lines(err, ref.path):
                print(f"stack {ref.name}: {line}", file=sys.stderr)
            return 2
        progress.done()
        for line in warnings:
            print(f"stack {ref.name}: warning: {line}", file=sys.stderr)
        target = plans_dir / f"{ref.name}.yaml"
        if args.check:
            current = target.read_text() if target.exists() else ""
            if current != text:
                stale.append(ref.name)
                review, _loses_slices = check_plan(ref.name, current, text, load_stack_config(ref.path))
                sys.stdout.write(review)
            continue
        plans_dir.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        print(f"== stack {ref.name} -> {target}")
        print(summary)
    if stale:
        print(
            f"stale plans: {', '.join(stale)}; run `tpu-platform plan --all` (./dev plan --all here) "
            "and commit plans/",
            file=sys.stderr,
        )
        return 1
    if args.check:
        print(
            f"{len(stacks)} plan(s) current: {', '.join(resolve_stack(s, stacks_dir).name for s in stacks)}"
        )
    return 0
