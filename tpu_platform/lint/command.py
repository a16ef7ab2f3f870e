"""``tpu-platform lint``: lint manifests (JobSets, Kueue objects, priorities) against a cluster."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, TextIO

from ..terminal import paint
from .context import ContextError, LintContext, load_context
from .findings import SEVERITY_ORDER, Finding

if TYPE_CHECKING:
    from ..schema.validate import SchemaValidator

HELP = (
    "lint manifests: will Kueue manage and admit the JobSets, are the Kueue objects right, can hotswap help?"
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", type=Path, help="YAML manifests ('-' reads stdin)")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--context",
        type=Path,
        help="YAML/JSON file with queues, priorities and TPU slices (see examples/jobsets/seed-context.yaml)",
    )
    source.add_argument("--stack", help="take queues, priorities and slices from stacks/Pulumi.<STACK>.yaml")
    parser.add_argument("--stacks-dir", type=Path, default=None, help="folder of the stack files")
    parser.add_argument(
        "--namespace", "-n", help="namespace of manifests that set none (default: the context's)"
    )
    parser.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    parser.add_argument(
        "--fail-on",
        choices=("error", "warning"),
        default="error",
        help="exit 1 when a finding is at least this severe (default: error)",
    )
    parser.add_argument("--no-schema", action="store_true", help="skip the CRD and Kubernetes schema check")
    parser.add_argument(
        "--crds",
        type=Path,
        default=None,
        help="folder with the Kueue v0.19.2 and JobSet v0.12.0 CRD files (default: $TPU_PLATFORM_CRDS, "
        "the pinned files in the user cache, fetched on first use)",
    )


def _stack_context(stack: str, stacks_dir: Path | None) -> LintContext:
    """The context of a stack file: its queues, nominal quotas, priorities and slices (through the
    project's entry, if it names one)."""
    from ..config import StackConfigError
    from ..entry import entry_here, stack_platform
    from ..plan.stacks import stack_file
    from .stack import context_from_stack

    try:
        _config, cfg = stack_platform(stack_file(stack, stacks_dir), entry_here())
    except StackConfigError as err:
        raise ContextError("\n".join(f"stack {stack}: {problem}" for problem in err.problems)) from err
    return context_from_stack(cfg)


def read_input(path: Path, stdin: BinaryIO | None = None) -> bytes:
    """The bytes of a manifest; ``-`` is stdin (read as bytes, so binary input is recognised)."""
    if str(path) == "-":
        return (stdin or sys.stdin.buffer).read()
    return path.read_bytes()


def _where(source: str, f: Finding) -> str:
    name = "<stdin>" if source in ("", "-") else source
    return f"{name}:{f.line}:{f.column}" if f.line else name


_STYLE = {"error": "red", "warning": "yellow", "info": "dim"}


def _text(results: list[tuple[str, list[Finding]]], out: TextIO) -> None:
    for source, findings in results:
        if not findings:
            print(f"{source}: ok", file=out)
            continue
        current: tuple[int, str] | None = None
        for f in findings:
            if (f.document, f.name) != current:
                current = (f.document, f.name)
                label = f" {f.kind} {f.name}" if f.name else (f" {f.kind}" if f.kind else "")
                print(f"{source} #{f.document}{label}" if label else source, file=out)
            severity = paint(f"{f.severity:<7}", _STYLE.get(f.severity, "dim"), out)
            print(f"  {severity} {f.rule}  {f.path}".rstrip(), file=out)
            print(f"          at {_where(source, f)}: {f.message}", file=out)
            if f.fix:
                print(f"          fix: {f.fix}", file=out)
    totals = {s: sum(1 for _, fs in results for f in fs if f.severity == s) for s in SEVERITY_ORDER}
    print(
        f"{len(results)} file(s): {totals['error']} error(s), {totals['warning']} warning(s), "
        f"{totals['info']} info",
        file=out,
    )


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Lint every file as one run; exit 0 (clean), 1 (findings at --fail-on or worse), 2 (bad input)."""
    from ..schema import CrdsUnavailable
    from ..schema.crds import locate_crds
    from .linter import CRDS_HELP, has_input_problem, lint_files
    from .sarif import to_sarif

    out = out or sys.stdout
    try:
        ctx = _stack_context(args.stack, args.stacks_dir) if args.stack else load_context(args.context)
    except (ContextError, ImportError) as err:
        for line in str(err).splitlines():
            print(f"lint: {line}", file=sys.stderr)
        return 2
    if args.namespace:
        ctx = replace(ctx, default_namespace=args.namespace)
    validator: SchemaValidator | None = None
    if not args.no_schema:
        from ..schema.validate import SchemaValidator  # the lint extra

        try:
            validator = SchemaValidator(locate_crds(getattr(args, "crds", None)))
        except CrdsUnavailable as err:
            print(
                f"lint: the schema check needs the pinned CRDs: {err}\n  to get them: {CRDS_HELP}",
                file=sys.stderr,
            )
            return 2
    files: list[tuple[str, str | bytes]] = []
    for path in args.files:
        try:
            files.append((str(path), read_input(path)))
        except OSError as err:
            print(f"lint: {path}: {err.strerror or err}", file=sys.stderr)
            return 2
    results = lint_files(files, ctx, check_schema=not args.no_schema, validator=validator)
    if args.format == "json":
        rows = [{"file": source, **f.as_dict()} for source, findings in results for f in findings]
        json.dump(rows, out, indent=2)
        out.write("\n")
    elif args.format == "sarif":
        json.dump(to_sarif(results), out, indent=2)
        out.write("\n")
    else:
        _text(results, out)
    if has_input_problem(results):
        return 2
    threshold = SEVERITY_ORDER[args.fail_on]
    failed = any(SEVERITY_ORDER[f.severity] <= threshold for _, fs in results for f in fs)
    return 1 if failed else 0
