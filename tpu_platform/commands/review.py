"""``tpu-platform review``: what a change replaces, creates, updates and deletes, stack by stack.

``review STACK... [--base REF]`` (or ``--all``) compares each stack's freshly rendered plan with the
plan rendered at a git ref (default: the merge base of HEAD with ``main``), the base rendered from
git's own copy of that commit. ``review BASE_DIR HEAD_DIR`` compares two folders of plans.

TPU slices that would be replaced or deleted come first; the exit status is 1 when a stack does not
acknowledge one under ``tpu-platform:acknowledgeReplacement``, 2 when the review cannot be trusted
(a type or field no provider source covers, an acknowledged name that is no TPU slice pool).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = (
    "review stacks against a git ref (default: the merge base with main), or two folders of plans: "
    "replaced or deleted TPU slices first (exit 1 unless acknowledged)"
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "targets",
        nargs="*",
        metavar="STACK",
        help="stack names; or two folders, BASE_DIR HEAD_DIR, of <stack>.yaml plans",
    )
    parser.add_argument("--all", action="store_true", help="every stack file of the project")
    parser.add_argument(
        "--base", metavar="REF", help="git ref to compare with (default: merge-base HEAD main)"
    )
    parser.add_argument("--stacks-dir", type=Path, help="folder of the stack files (default: the project's)")


def _folders(args: argparse.Namespace) -> tuple[Path, Path] | None:
    """The two folders of the folder form: two arguments, either a path (a stack is named by name)."""
    if args.all or args.base is not None or len(args.targets) != 2:
        return None
    base, head = (Path(t) for t in args.targets)
    return (base, head) if any(p.is_dir() or len(p.parts) > 1 for p in (base, head)) else None


def _review_folders(base: Path, head: Path, stacks_dir: Path | None) -> int:
    from ..plan.review import review_folders
    from ..project import find_project

    text, status = review_folders(base, head, stacks_dir or find_project().stacks_dir)
    sys.stdout.write(text)
    return status


def _review_stacks(args: argparse.Namespace) -> int:
    from ..config import StackConfigError
    from ..plan import list_stacks, load_stack_config
    from ..plan.base import BaseError, render_at, repository_root, resolve_base
    from ..plan.review import render_outcome, review_stack
    from ..plan.stacks import problem_lines
    from ..project import find_project, resolve_stack
    from .plan import render_plan

    project = find_project()
    stacks_dir = args.stacks_dir or project.stacks_dir
    refs = [resolve_stack(s, stacks_dir) for s in (list_stacks(stacks_dir) if args.all else args.targets)]
    try:
        repo = repository_root(project.root)
        base = resolve_base(repo, args.base)
        if base.note:
            print(f"review: {base.note}", file=sys.stderr)
        old = render_at(repo, project.root, stacks_dir, base.commit, [r.name for r in refs])
    except BaseError as err:
        print(f"review: {err}", file=sys.stderr)
        return 2
    print(f"review: against {base.described} ({base.commit[:12]})")
    status = 0
    for ref in refs:
        try:
            new, _summary = render_plan(
                str(ref.path) if ref.path.parent != stacks_dir else ref.name, stacks_dir
            )
            config = load_stack_config(ref.path)
        except StackConfigError as err:
            for line in problem_lines(err, ref.path):
                print(f"stack {ref.name}: {line}", file=sys.stderr)
            status = 2
            continue
        outcome = review_stack(ref.name, old[ref.name], new, config, str(ref.path))
        sys.stdout.write(render_outcome(outcome))
        status = max(status, outcome.status)
    return status


def run(args: argparse.Namespace) -> int:
    folders = _folders(args)
    if folders is not None:
        for role, folder in zip(("base", "head"), folders, strict=True):
            if not folder.is_dir():
                print(
                    f"review: {role} {folder}: no such folder of plans; pass the folder that holds "
                    "<stack>.yaml plans (an empty folder if that side has none yet)",
                    file=sys.stderr,
                )
                return 2
        return _review_folders(*folders, args.stacks_dir)
    if not args.targets and not args.all:
        print("review: name a stack (or --all), or two folders of plans", file=sys.stderr)
        return 2
    return _review_stacks(args)
