"""Run the policy pack's rules over an offline plan, without the Pulumi CLI or a cloud account.

Takes what ``tpu_platform.plan.render`` returns (or any objects with ``urn``, ``type``,
``name``, ``parent``, ``dependencies`` and ``inputs``), so CI and forks without credentials
catch the same violations a real ``pulumi preview --policy-pack policy`` would.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from . import replacement
from .resources import Resource, Stack, Violation
from .rules import evaluate, rule_config


class Recorded(Protocol):
    """The fields of ``tpu_platform.plan.RecordedResource`` the rules need."""

    @property
    def urn(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def parent(self) -> str | None: ...
    @property
    def dependencies(self) -> tuple[str, ...]: ...
    @property
    def inputs(self) -> dict[str, Any]: ...


class HasResources(Protocol):
    @property
    def resources(self) -> list[Any]: ...


def from_recorded(recorded: Recorded) -> Resource:
    return Resource(
        urn=recorded.urn,
        type=recorded.type,
        name=recorded.name,
        props=recorded.inputs,
        parent=recorded.parent,
        dependencies=tuple(recorded.dependencies),
    )


def check_resources(
    resources: Iterable[Recorded], config: Mapping[str, Any] | None = None
) -> list[Violation]:
    return evaluate([from_recorded(r) for r in resources], config)


def check_rendering(rendering: HasResources, config: Mapping[str, Any] | None = None) -> list[Violation]:
    """Every violation in a ``tpu_platform.plan.Rendering``; an empty list means the stack complies."""
    return check_resources(rendering.resources, config)


def check_replacement(
    rendering: HasResources, baseline_plan: Path, stack_file: Path | None
) -> list[Violation]:
    """``tpu-pool-replacement`` over a rendering, against the plan of what is deployed."""
    settings = replacement.prepare(
        rule_config(replacement.RULE, {replacement.NAME: {"baselinePlan": str(baseline_plan)}}), stack_file
    )
    stack = Stack(from_recorded(r) for r in rendering.resources)
    return replacement.check_tpu_pool_replacement(stack, settings)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tpu_platform.policy.offline [stack...] [--baseline DIR]``: every stack's plan, checked.

    Renders each stack of this repository under Pulumi's mocks (no credentials needed, so it
    also runs for pull requests from forks) and exits 1 on any violation. With ``--baseline``
    (a folder of deployed plans, e.g. the base branch's ``plans/``) ``tpu-pool-replacement`` runs too.
    """
    from tpu_platform.components.program import stack_program
    from tpu_platform.plan import list_stacks, load_stack_config, render, stack_file

    parser = argparse.ArgumentParser(prog="python -m tpu_platform.policy.offline")
    parser.add_argument("stacks", nargs="*")
    parser.add_argument(
        "--baseline", type=Path, default=None, help="folder of the deployed plans/<stack>.yaml"
    )
    args = parser.parse_args(list(argv) if argv is not None else None)
    stacks = args.stacks or list_stacks()
    failed = 0
    for stack in stacks:
        rendering = render(stack_program, load_stack_config(stack_file(stack)), stack=stack)
        violations = check_rendering(rendering)
        baseline = args.baseline / f"{stack}.yaml" if args.baseline else None
        if baseline is not None and baseline.is_file():
            violations += check_replacement(rendering, baseline, stack_file(stack))
        print(f"stack {stack}: {len(violations) or 'no'} violation{'' if len(violations) == 1 else 's'}")
        for violation in violations:
            print(f"  - {violation}")
        failed += bool(violations)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
