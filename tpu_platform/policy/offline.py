"""Run the policy pack's rules over an offline plan, without the Pulumi CLI or a cloud account.

Takes what ``tpu_platform.plan.render`` returns (or any objects with ``urn``, ``type``,
``name``, ``parent``, ``dependencies`` and ``inputs``), so CI and forks without credentials
catch the same violations a real ``pulumi preview --policy-pack policy`` would.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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
