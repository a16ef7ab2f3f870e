"""``tpu-platform``: the offline tools of a tpu-platform stack (``./dev <command>`` in this repository).

Every subcommand lives in its own module with ``HELP``, ``configure(parser)`` and ``run(args)``;
this module only builds the parser and maps outcomes to exit codes.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType

from . import __version__
from .config.problems import StackConfigError
from .project import ProjectError
from .terminal import silence_stdout

PROG = "tpu-platform"

# (name, module): the order of ``tpu-platform --help``.
COMMANDS: tuple[tuple[str, str], ...] = (
    ("plan", "tpu_platform.commands.plan"),
    ("validate", "tpu_platform.commands.validate"),
    ("lint", "tpu_platform.lint.command"),
    ("whatif", "tpu_platform.sim.whatif"),
    ("policy", "tpu_platform.commands.policy"),
    ("review", "tpu_platform.commands.review"),
    ("status", "tpu_platform.commands.status"),
)

# Modules an optional extra brings, and that extra (pyproject.toml [project.optional-dependencies]).
EXTRAS = {
    "celpy": "lint",
    "lark": "lint",
    "jsonschema": "lint",
    "kubernetes_validate": "lint",
    "matplotlib": "sim",
    "pulumi_policy": "policy",
    "kubernetes": "status",
}

EXIT_CODES = """exit codes:
  0    ok
  1    findings at --fail-on or worse (lint), stale plans (plan --check), violations (policy),
       a failed read (status)
  2    usage error or invalid input (a stack or manifest that does not validate)
  130  interrupted; a closed output pipe ends the command quietly with 141, as SIGPIPE would"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Offline tools for GKE TPU v6e platforms built with tpu-platform: plan, check and "
        "simulate a stack without a cloud account.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")
    for name, module_name in COMMANDS:
        module = importlib.import_module(module_name)
        command = sub.add_parser(
            name,
            help=module.HELP,
            description=_description(module),
            epilog=EXIT_CODES,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.configure(command)
        command.set_defaults(func=module.run)
    return parser


def _description(module: ModuleType) -> str:
    doc = (module.__doc__ or module.HELP).strip()
    return doc.replace("``", "")


def _missing_extra(err: ModuleNotFoundError, command: str) -> str | None:
    top = (err.name or "").split(".")[0]
    extra = EXTRAS.get(top)
    if extra is None:
        return None
    return (
        f"{PROG} {command}: needs the optional dependencies of '{extra}' (module {top} is missing): "
        f"pip install 'tpu-platform[{extra}]'"
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code = int(args.func(args))
        sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()
        return 141
    except KeyboardInterrupt:
        return 130
    except ProjectError as err:
        print(f"{PROG} {args.command}: {err}", file=sys.stderr)
        return 2
    except StackConfigError as err:
        for problem in err.problems:
            print(f"{PROG} {args.command}: {problem}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as err:
        message = _missing_extra(err, args.command)
        if message is None:
            raise
        print(message, file=sys.stderr)
        return 2
    return code


def console() -> None:
    """The ``tpu-platform`` console script."""
    sys.exit(main())
