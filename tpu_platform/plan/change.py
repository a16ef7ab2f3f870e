"""What happens to one resource between two plans, and the fields that decide it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Action = Literal["create", "update", "replace", "delete"]


@dataclass(frozen=True)
class FieldChange:
    """One changed input: its dotted path, old and new value, why it forces a replacement, and why
    its effect is unknown (a field the provider source read does not have)."""

    path: str
    old: Any
    new: Any
    replaces: str = ""
    unknown: str = ""


@dataclass(frozen=True)
class Change:
    """What happens to one resource, and the fields that decide it."""

    action: Action
    type: str
    name: str
    fields: tuple[FieldChange, ...] = ()
    tpu_slice: bool = False
    pool_name: str = ""

    @property
    def label(self) -> str:
        return f"{self.type}::{self.name}"

    @property
    def deciding(self) -> tuple[FieldChange, ...]:
        """The fields that force the replacement, or every changed field of an update."""
        forced = tuple(f for f in self.fields if f.replaces)
        return forced or self.fields

    @property
    def unknown(self) -> tuple[FieldChange, ...]:
        return tuple(f for f in self.fields if f.unknown)
