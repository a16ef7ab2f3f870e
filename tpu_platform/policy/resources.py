"""Plain resource records the rules read, whichever way the resources were produced.

A real ``pulumi preview`` (through pulumi-policy) and the offline plan (``tpu_platform.plan``)
both reduce to these records, so one set of pure rules serves both.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


class Unknown:
    """A value the engine will only know after the update (shown as ``[computed]`` in plans)."""

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = Unknown()

# How the offline plan writes values it cannot know.
PLAN_UNKNOWN = "[computed]"


def is_unknown(value: Any) -> bool:
    return isinstance(value, Unknown) or value == PLAN_UNKNOWN


@dataclass(frozen=True)
class Resource:
    """One resource: URN, type token, logical name, properties, parent URN and dependency URNs."""

    urn: str
    type: str
    name: str
    props: Mapping[str, Any] = field(default_factory=dict)
    parent: str | None = None
    dependencies: tuple[str, ...] = ()

    def get(self, *path: str | int) -> Any:
        """The value at ``path`` (keys and list indexes), or None when any step is missing."""
        return dig(self.props, *path)

    @property
    def display(self) -> str:
        """``Kind 'name'`` for messages: the Kubernetes kind for Kubernetes objects."""
        kind = self.type.rsplit(":", 1)[-1]
        metadata_name = self.get("metadata", "name")
        if isinstance(metadata_name, str) and metadata_name != self.name:
            return f"{kind} {metadata_name!r} (resource {self.name!r})"
        return f"{kind} {self.name!r}"


@dataclass(frozen=True)
class Violation:
    """A broken invariant: which policy, what is wrong and how to fix it, and where."""

    policy: str
    message: str
    urn: str | None = None

    def __str__(self) -> str:
        where = f" ({self.urn})" if self.urn else ""
        return f"[{self.policy}] {self.message}{where}"


def dig(value: Any, *path: str | int) -> Any:
    """Walk nested mappings and lists; None as soon as a step does not exist."""
    for step in path:
        if isinstance(step, int):
            if not isinstance(value, Sequence) or isinstance(value, str) or step >= len(value):
                return None
            value = value[step]
        else:
            if not isinstance(value, Mapping):
                return None
            value = value.get(step)
    return value


def as_list(value: Any) -> list[Any]:
    """A property that should be a list, as a list (missing or malformed: empty)."""
    if isinstance(value, Sequence) and not isinstance(value, str):
        return list(value)
    return []


def urn_types(urn: str) -> list[str]:
    """Type tokens of a URN's parent chain, outermost first, ending with the resource's own type."""
    parts = urn.split("::")
    if len(parts) < 4:
        return []
    return parts[2].split("$")


def urn_name(urn: str) -> str:
    parts = urn.split("::", 3)
    return parts[3] if len(parts) == 4 else urn


class Stack:
    """All resources of one stack, indexed by URN, with parent and dependency look-ups."""

    def __init__(self, resources: Iterable[Resource]) -> None:
        self.resources: list[Resource] = list(resources)
        self.by_urn: dict[str, Resource] = {r.urn: r for r in self.resources}

    def __iter__(self) -> Iterator[Resource]:
        return iter(self.resources)

    def of_type(self, *types: str) -> list[Resource]:
        return [r for r in self.resources if r.type in types]

    def ancestors(self, resource: Resource) -> list[Resource]:
        """Parent, grandparent, ... as far as the stack knows them."""
        chain: list[Resource] = []
        seen: set[str] = {resource.urn}
        parent = resource.parent
        while parent and parent in self.by_urn and parent not in seen:
            seen.add(parent)
            found = self.by_urn[parent]
            chain.append(found)
            parent = found.parent
        return chain

    def dependencies(self, resource: Resource) -> list[Resource]:
        return [self.by_urn[urn] for urn in resource.dependencies if urn in self.by_urn]


Config = Mapping[str, Any]
"""A policy's configuration (the pack's per-policy config map)."""
