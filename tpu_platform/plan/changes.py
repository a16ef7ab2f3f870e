"""Classify every resource between two plans as create, update, replace or delete.

A plan lists each resource's type, name, parent and inputs (``tpu_platform.plan.document``).
Comparing two of them tells what ``pulumi up`` would do, and which fields decide it:

- a resource only in the new plan is created, only in the old one deleted;
- a new parent changes the URN, which Pulumi carries out as a delete and a create (a replace);
- an input change replaces the resource when its provider says so (``tpu_platform.plan.knowledge``:
  the Google provider's ``ForceNew`` fields, pulumi-kubernetes' rules, the Kubernetes provider's
  ``DiffConfig`` read in ``tpu_platform.plan.kube_provider``), when its ``replaceOnChanges`` option
  covers it, and for a TPU slice pool also when GKE recreates every VM of the slice (its zone, its
  topology); a resource whose provider is replaced is replaced with it, and so is a dependent a
  delete-before-replace takes with it (``tpu_platform.plan.dependents``); any other input change is
  an in-place update;
- a component's input change is no engine step: it is listed apart, with what its inputs change
  (a Chart's children, from what the pinned chart renders: ``tpu_platform.plan.chart_children``);
- a type no derivation covers, or a field the pinned provider source does not have, is reported
  as unknown: the review never calls it an update.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..tpu_pools import NODE_POOL, is_tpu_node_pool
from . import knowledge
from .change import Action, Change, FieldChange
from .chart_children import child_changes
from .dependents import deletes_first, dependents
from .forcing import changed_paths, forcing, option_forces, unknown_effect, with_replaced_provider
from .knowledge import KUBERNETES_PROVIDER
from .kube_provider import provider_fields

__all__ = [
    "Action",
    "Change",
    "FieldChange",
    "Review",
    "changed_paths",
    "classify",
    "replacement_paths",
    "review",
]


@dataclass(frozen=True)
class Review:
    """Every change between two plans of one stack; unchanged resources are counted only."""

    stack: str
    changes: tuple[Change, ...] = ()
    unchanged: int = 0
    acknowledged: frozenset[str] = field(default_factory=frozenset)
    installs: tuple[FieldChange, ...] = ()
    unknown_types: tuple[str, ...] = ()
    tpu_pools: frozenset[str] = frozenset()  # every TPU slice pool of either plan, by node pool name
    components: tuple[Change, ...] = ()  # components whose inputs change: no engine step of their own
    untold_children: tuple[str, ...] = ()  # changed Charts whose rendered children no plan section holds

    def by_action(self, action: Action) -> list[Change]:
        return [c for c in self.changes if c.action == action]

    @property
    def tpu_losses(self) -> list[Change]:
        """TPU slice pools that would be replaced or deleted: their running jobs are killed."""
        return [c for c in self.changes if c.tpu_slice and c.action in ("replace", "delete")]

    @property
    def unacknowledged_losses(self) -> list[Change]:
        return [c for c in self.tpu_losses if c.pool_name not in self.acknowledged]

    @property
    def unclassified(self) -> list[Change]:
        """Changes whose update-or-replace no derived source tells (of a known type)."""
        return [c for c in self.changes if c.unknown and c.type not in self.unknown_types]

    @property
    def trustworthy(self) -> bool:
        """Whether every change is classified from a provider's own rules."""
        return not self.unknown_types and not self.unclassified and not self.untold_children


def replacement_paths(resource_type: str, tpu_slice: bool = False) -> dict[str, str]:
    """Input paths (camelCase, dotted) whose change replaces a resource, with the reason for each."""
    found = knowledge.rules(resource_type, tpu_slice=tpu_slice)
    return dict(found.paths) if found is not None else {}


def _is_tpu_slice(entry: Mapping[str, Any]) -> bool:
    return is_tpu_node_pool(str(entry.get("type")), entry.get("inputs") or {})


def _input_fields(
    resource_type: str,
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    provider_inputs: Mapping[str, Any],
    tpu_slice: bool,
) -> list[FieldChange]:
    old_inputs, new_inputs = old.get("inputs") or {}, new.get("inputs") or {}
    on_changes = [str(p) for p in (new.get("options") or {}).get("replaceOnChanges") or []]
    if resource_type == KUBERNETES_PROVIDER:
        decided = provider_fields(old_inputs, new_inputs)
        return [
            FieldChange(path, a, b, *decided.get(path.split(".", 1)[0].split("[", 1)[0], ("", "")))
            for path, a, b in changed_paths(old_inputs, new_inputs)
        ]
    found = knowledge.rules(
        resource_type, new_inputs if isinstance(new_inputs, Mapping) else {}, provider_inputs, tpu_slice
    )
    fields = []
    for path, a, b in changed_paths(old_inputs, new_inputs):
        why = forcing((path, a, b), found) if found is not None else ""
        why = why or option_forces(path, on_changes)
        fields.append(FieldChange(path, a, b, why, "" if why else unknown_effect(path, found, resource_type)))
    return fields


def classify(
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any] | None,
    provider_inputs: Mapping[str, Any] | None = None,
) -> Change | None:
    """The change from one plan entry to another (either may be absent); None when nothing changes.
    ``provider_inputs`` are the inputs of the entry's Kubernetes provider (its mutability flags)."""
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
    fields += _input_fields(resource_type, old, new, provider_inputs or {}, tpu_slice)
    if not fields:
        return None
    action: Action = "replace" if any(f.replaces for f in fields) else "update"
    return Change(action, resource_type, name, tuple(fields), tpu_slice, pool)


def _keyed(plan: Mapping[str, Any] | None) -> dict[tuple[str, str], Mapping[str, Any]]:
    resources = (plan or {}).get("resources") or []
    return {(str(r.get("type")), str(r.get("name"))): r for r in resources if isinstance(r, Mapping)}


_ORDER: dict[str, int] = {"replace": 0, "delete": 1, "create": 2, "update": 3}


def _provider_inputs(resources: Mapping[tuple[str, str], Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Each Kubernetes provider's inputs by the label resources name it with."""
    return {
        f"{kind}::{name}": entry.get("inputs") or {}
        for (kind, name), entry in resources.items()
        if kind == KUBERNETES_PROVIDER and isinstance(entry.get("inputs") or {}, Mapping)
    }


def _tpu_pools(*plans: Mapping[tuple[str, str], Mapping[str, Any]]) -> frozenset[str]:
    return frozenset(
        str((entry.get("inputs") or {}).get("name") or name)
        for plan in plans
        for (kind, name), entry in plan.items()
        if kind == NODE_POOL and _is_tpu_slice(entry)
    )


def _is_component(resource_type: str) -> bool:
    found = knowledge.rules(resource_type)
    return found is not None and bool(found.component)


def _is_component_update(change: Change) -> bool:
    return change.action == "update" and _is_component(change.type)


def _with_dependents(
    classified: dict[tuple[str, str], Change | None],
    old: Mapping[tuple[str, str], Mapping[str, Any]],
    new: Mapping[tuple[str, str], Mapping[str, Any]],
) -> None:
    """Replace, in place, what each delete-before-replace takes with it (on the old plan's graph)."""
    old_providers = _provider_inputs(old)
    for key, change in list(classified.items()):
        if change is None or change.action != "replace" or key not in old or key not in new:
            continue
        why_first = deletes_first(change, old[key], new[key])
        if not why_first:
            continue
        for dependent, forced in dependents(key, why_first, old, new, old_providers).items():
            own = classified.get(dependent)
            paths = {f.path for f in forced}
            rest = tuple(f for f in own.fields if f.path not in paths) if own is not None else ()
            kind, name = dependent
            base = own or Change("replace", kind, name)
            classified[dependent] = Change(
                "replace", kind, name, (*forced, *rest), base.tpu_slice, base.pool_name
            )


def _installs(plan: Mapping[str, Any] | None) -> dict[str, Any]:
    """A plan's install section without the children's digests (the review lists the children)."""
    section = (plan or {}).get("installs") or {}
    return {
        key: {k: v for k, v in value.items() if k != "children"} if isinstance(value, Mapping) else value
        for key, value in section.items()
    }


def review(
    stack: str,
    old_plan: Mapping[str, Any] | None,
    new_plan: Mapping[str, Any] | None,
    acknowledged: Sequence[str] = (),
) -> Review:
    """Every change from ``old_plan`` (committed, or the base branch's) to ``new_plan`` (fresh)."""
    old, new = _keyed(old_plan), _keyed(new_plan)
    providers = _provider_inputs(new)
    classified = {
        key: classify(old.get(key), new.get(key), providers.get(str((new.get(key) or {}).get("provider"))))
        for key in sorted(set(old) | set(new))
    }
    replaced = {
        f"{kind}::{name}": "; ".join(f.replaces for f in change.deciding)
        for (kind, name), change in classified.items()
        if change is not None and kind == KUBERNETES_PROVIDER and change.action == "replace"
    }
    for key, change in classified.items():
        if key in old and key in new and not _is_component(key[0]):
            classified[key] = with_replaced_provider(change, *key, str(new[key].get("provider")), replaced)
    _with_dependents(classified, old, new)
    changes: list[Change] = []
    components: list[Change] = []
    unchanged = 0
    for change in classified.values():
        if change is None:
            unchanged += 1
        elif _is_component_update(change):
            components.append(change)
        else:
            changes.append(change)
    children, untold = child_changes(old_plan, new_plan, providers, replaced)
    changes += children
    changes.sort(key=lambda c: (_ORDER[c.action], c.type, c.name))
    installs = tuple(
        FieldChange(f"installs.{path}", a, b)
        for path, a, b in changed_paths(_installs(old_plan), _installs(new_plan))
    )
    unknown_types = tuple(sorted({kind for kind, _ in (*old, *new) if knowledge.rules(kind) is None}))
    return Review(
        stack,
        tuple(changes),
        unchanged,
        frozenset(acknowledged),
        installs,
        unknown_types,
        _tpu_pools(old, new),
        tuple(components),
        tuple(untold),
    )
