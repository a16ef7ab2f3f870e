"""Classify every resource between two plans as create, update, replace or delete.

A plan lists each resource's type, name, parent and inputs (``tpu_platform.plan.document``).
Comparing two of them tells what ``pulumi up`` would do, and which fields decide it:

- a resource only in the new plan is created, only in the old one deleted;
- a new parent changes the URN, which Pulumi carries out as a delete and a create (a replace);
- an input change replaces the resource when the provider marks that field as forcing a new
  resource (``force_new.json``: the Google provider's ``ForceNew`` fields, pulumi-kubernetes'
  replacement table), and for a TPU slice pool also when GKE recreates every VM of the slice
  (its zone, its topology); any other input change is an in-place update.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

from ..tpu_pools import NODE_POOL, is_tpu_node_pool
from .force_new import load

Action = Literal["create", "update", "replace", "delete"]
KUBERNETES_PREFIX = "kubernetes:"


@dataclass(frozen=True)
class FieldChange:
    """One changed input: its dotted path, old and new value, and why it forces a replacement."""

    path: str
    old: Any
    new: Any
    replaces: str = ""


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


@dataclass(frozen=True)
class Review:
    """Every change between two plans of one stack; unchanged resources are counted only."""

    stack: str
    changes: tuple[Change, ...] = ()
    unchanged: int = 0
    acknowledged: frozenset[str] = field(default_factory=frozenset)
    installs: tuple[FieldChange, ...] = ()

    def by_action(self, action: Action) -> list[Change]:
        return [c for c in self.changes if c.action == action]

    @property
    def tpu_losses(self) -> list[Change]:
        """TPU slice pools that would be replaced or deleted: their running jobs are killed."""
        return [c for c in self.changes if c.tpu_slice and c.action in ("replace", "delete")]

    @property
    def unacknowledged_losses(self) -> list[Change]:
        return [c for c in self.tpu_losses if c.pool_name not in self.acknowledged]


@lru_cache(maxsize=1)
def _tables() -> dict[str, Any]:
    return load()


def _split_type(token: str) -> str:
    """``kubernetes:batch/v1:Job`` -> ``batch/v1:Job`` (core objects are ``core/v1:Kind``)."""
    return token.removeprefix(KUBERNETES_PREFIX)


def replacement_paths(resource_type: str, tpu_slice: bool = False) -> dict[str, str]:
    """Input paths (camelCase, dotted) whose change replaces a resource, with the reason for each."""
    tables = _tables()
    gke = tables["gke"]
    source = f"{gke['repository']} {gke['tag']}"
    found = {path: f"ForceNew in {source}" for path in gke["resources"].get(resource_type, [])}
    if resource_type == NODE_POOL and tpu_slice:
        found.update(tables["tpuSlice"]["fields"])
    if resource_type.startswith(KUBERNETES_PREFIX):
        k8s = tables["kubernetes"]
        where = f"{k8s['repository']} provider/pkg/provider/diff.go"
        kind = _split_type(resource_type)
        for path in (*k8s["always"], *k8s["kinds"].get(kind, ())):
            found[path] = f"immutable for pulumi-kubernetes ({where})"
    return found


def changed_paths(old: Any, new: Any, prefix: str = "") -> Iterator[tuple[str, Any, Any]]:
    """Leaf differences as (dotted path with [i] indexes, old, new); a missing side is None."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in sorted(set(old) | set(new), key=str):
            path = f"{prefix}.{key}" if prefix else str(key)
            yield from changed_paths(old.get(key), new.get(key), path)
        return
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            yield from changed_paths(a, b, f"{prefix}[{index}]")
        return
    if old != new:
        yield prefix, old, new


def _schema_path(path: str) -> str:
    """Drop list indexes: ``nodeConfig.reservationAffinity.values[0]`` -> ``...values``."""
    out = []
    for part in path.split("."):
        out.append(part.split("[", 1)[0])
    return ".".join(out)


def _values_at(value: Any, parts: Sequence[str]) -> Iterator[Any]:
    """Every value at a dotted schema path below ``value`` (list items all count)."""
    if isinstance(value, list):
        for item in value:
            yield from _values_at(item, parts)
        return
    if not parts:
        yield value
        return
    if isinstance(value, Mapping) and parts[0] in value:
        yield from _values_at(value[parts[0]], parts[1:])


def _forcing(change: tuple[str, Any, Any], table: Mapping[str, str], provider_kubernetes: bool) -> str:
    """Why a changed path replaces the resource ('' when it does not).

    Google provider fields force a new resource by their own flag (exact path). A block added or
    removed as a whole also forces one when a field inside it does and is set: the SDK diffs each
    nested field against the empty side. pulumi-kubernetes matches its table by prefix, in both
    directions (a whole ``spec`` swapped covers ``spec.template``).
    """
    path, old, new = change
    bare = _schema_path(path)
    if bare in table:
        return table[bare]
    if provider_kubernetes:
        for forced, why in table.items():
            if bare.startswith(forced + ".") or forced.startswith(bare + "."):
                return why
        return ""
    present = new if old is None else old if new is None else None
    if present is None:
        return ""
    for forced, why in table.items():
        if forced.startswith(bare + "."):
            rest = forced[len(bare) + 1 :].split(".")
            if any(v is not None for v in _values_at(present, rest)):
                return why
    return ""


def _is_tpu_slice(entry: Mapping[str, Any]) -> bool:
    return is_tpu_node_pool(str(entry.get("type")), entry.get("inputs") or {})


def classify(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> Change | None:
    """The change from one plan entry to another (either may be absent); None when nothing changes."""
    entry = new or old
    if entry is None:
        return None
    resource_type, name = str(entry.get("type")), str(entry.get("name"))
    tpu_slice = _is_tpu_slice(entry) or (old is not None and _is_tpu_slice(old))
    pool = str((entry.get("inputs") or {}).get("name") or entry.get("name")) if tpu_slice else ""
    if old is None or new is None:
        return Change("create" if old is None else "delete", resource_type, name, (), tpu_slice, pool)
    fields: list[FieldChange] = []
    if old.get("parent") != new.get("parent"):
        fields.append(
            FieldChange(
                "parent",
                old.get("parent"),
                new.get("parent"),
                "a new parent is a new URN: Pulumi deletes the old resource and creates a new one",
            )
        )
    if old.get("provider") != new.get("provider"):
        fields.append(
            FieldChange(
                "provider",
                old.get("provider"),
                new.get("provider"),
                "another provider instance owns the resource: it is deleted and created again",
            )
        )
    table = replacement_paths(resource_type, tpu_slice)
    kubernetes = resource_type.startswith(KUBERNETES_PREFIX)
    for path, a, b in changed_paths(old.get("inputs") or {}, new.get("inputs") or {}):
        fields.append(FieldChange(path, a, b, _forcing((path, a, b), table, kubernetes)))
    if not fields:
        return None
    action: Action = "replace" if any(f.replaces for f in fields) else "update"
    return Change(action, resource_type, name, tuple(fields), tpu_slice, pool)


def _keyed(plan: Mapping[str, Any] | None) -> dict[tuple[str, str], Mapping[str, Any]]:
    resources = (plan or {}).get("resources") or []
    return {(str(r.get("type")), str(r.get("name"))): r for r in resources if isinstance(r, Mapping)}


_ORDER: dict[str, int] = {"replace": 0, "delete": 1, "create": 2, "update": 3}


def review(
    stack: str,
    old_plan: Mapping[str, Any] | None,
    new_plan: Mapping[str, Any] | None,
    acknowledged: Sequence[str] = (),
) -> Review:
    """Every change from ``old_plan`` (committed, or the base branch's) to ``new_plan`` (fresh)."""
    old, new = _keyed(old_plan), _keyed(new_plan)
    changes: list[Change] = []
    unchanged = 0
    for key in sorted(set(old) | set(new)):
        change = classify(old.get(key), new.get(key))
        if change is None:
            unchanged += 1
        else:
            changes.append(change)
    changes.sort(key=lambda c: (_ORDER[c.action], c.type, c.name))
    installs = tuple(
        FieldChange(f"installs.{path}", a, b)
        for path, a, b in changed_paths(
            (old_plan or {}).get("installs") or {}, (new_plan or {}).get("installs") or {}
        )
    )
    return Review(stack, tuple(changes), unchanged, frozenset(acknowledged), installs)
