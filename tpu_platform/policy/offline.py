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


def from_plan_document(document: Mapping[str, Any]) -> list[Resource]:
    """The resources of a committed plan (``plans/<stack>.yaml``), with URNs rebuilt from each
    entry's parent chain and its ``dependsOn`` labels resolved to them, as a preview would give them."""
    stack = str(document.get("stack") or "plan")
    entries = [e for e in document.get("resources") or [] if isinstance(e, Mapping)]
    by_label = {f"{e.get('type')}::{e.get('name')}": e for e in entries}

    def urn(label: str) -> str:
        types: list[str] = []
        seen: set[str] = set()
        current: str | None = label
        while current is not None and current not in seen:
            seen.add(current)
            types.insert(0, current.split("::", 1)[0])
            parent = (by_label.get(current) or {}).get("parent")
            current = str(parent) if parent else None
        return f"urn:pulumi:{stack}::plan::{'$'.join(types)}::{label.split('::', 1)[1]}"

    return [
        Resource(
            urn=urn(f"{e.get('type')}::{e.get('name')}"),
            type=str(e.get("type")),
            name=str(e.get("name")),
            props=e.get("inputs") or {},
            parent=urn(str(e["parent"])) if e.get("parent") else None,
            dependencies=tuple(urn(str(d)) for d in e.get("dependsOn") or []),
        )
        for e in entries
    ]


def check_plan_document(
    document: Mapping[str, Any], config: Mapping[str, Any] | None = None
) -> list[Violation]:
    """Every violation in a committed plan; an empty list means the stack it records complies."""
    return evaluate(from_plan_document(document), config)


def check_replacement(
    rendering: HasResources, baseline_plan: Path, stack_file: Path | None
) -> list[Violation]:
    """``tpu-pool-replacement`` over a rendering, against the plan of what is deployed."""
    settings = replacement.prepare(
        rule_config(replacement.RULE, {replacement.NAME: {"baselinePlan": str(baseline_plan)}}), stack_file
    )
    stack = Stack(from_recorded(r) for r in rendering.resources)
    return replacement.check_tpu_pool_replacement(stack, settings)
