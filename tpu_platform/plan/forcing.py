"""Which changed input paths replace a resource, under its provider's rules and its resource options.

Paths are dotted plan paths: a list of mappings named by a key (``name``, ``key``, ...) is compared
item by item as ``[name=x]``; ``schema_path`` drops those for the providers' tables. A Google field
forces a new resource by its own flag (exact path; below a map or a list of plain values too), and
a block added or removed whole forces one when a field inside it does and is set; pulumi-kubernetes
replaces on a change at or below a listed path; ``replaceOnChanges`` replaces on a change at or
below one of its paths (``*`` matches any one step, alone any change); a resource whose provider is
replaced is replaced with it (the engine's ``providerChanged``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from . import knowledge
from .change import Change, FieldChange
from .knowledge import Rules

# Keys that name an item of a list of mappings (containers, env, ports, rules by name; labels by key).
LIST_KEYS = ("name", "key", "id", "type", "displayName", "topology")
_INDEX = re.compile(r"\[[^\]]*\]")
_STEP = re.compile(r"\[[^\]]*\]|[^.\[\]]+")
OPTION_PREFIX = "replaceOnChanges "


def _list_key(old: list[Any], new: list[Any]) -> str | None:
    """The key that names every item of two lists of mappings, uniquely on each side, if one does."""
    items = old + new
    if not items or not all(isinstance(item, Mapping) for item in items):
        return None
    for key in LIST_KEYS:
        for side in (old, new):
            values = [item.get(key) for item in side]
            if not all(isinstance(v, str | int) and not isinstance(v, bool) for v in values):
                break
            if len(set(values)) != len(values):
                break
        else:
            return key
    return None


def changed_paths(old: Any, new: Any, prefix: str = "") -> Iterator[tuple[str, Any, Any]]:
    """Leaf differences as (dotted path, old, new); a missing side is None. A list of mappings named
    by a key (``name``, ``key``, ...) is compared item by item as ``[name=x]``, so an insertion shows
    as one item added, not as every later item changed; other lists compare by index."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in sorted(set(old) | set(new), key=str):
            path = f"{prefix}.{key}" if prefix else str(key)
            yield from changed_paths(old.get(key), new.get(key), path)
        return
    if isinstance(old, list) and isinstance(new, list) and old != new:
        key = _list_key(old, new)
        if key is not None:
            olds = {item[key]: item for item in old}
            news = {item[key]: item for item in new}
            for name in [*olds, *(n for n in news if n not in olds)]:
                yield from changed_paths(olds.get(name), news.get(name), f"{prefix}[{key}={name}]")
            return
        if len(old) == len(new):
            for index, (a, b) in enumerate(zip(old, new, strict=True)):
                yield from changed_paths(a, b, f"{prefix}[{index}]")
            return
    if old != new:
        yield prefix, old, new


def schema_path(path: str) -> str:
    """Drop list indexes and item names: ``spec.containers[name=a].image`` -> ``spec.containers.image``."""
    return _INDEX.sub("", path)


def values_at(value: Any, parts: Sequence[str]) -> Iterator[Any]:
    """Every value at a dotted schema path below ``value`` (list items all count)."""
    if isinstance(value, list):
        for item in value:
            yield from values_at(item, parts)
        return
    if not parts:
        yield value
        return
    if isinstance(value, Mapping) and parts[0] in value:
        yield from values_at(value[parts[0]], parts[1:])


def _inside(forced: str, bare: str, present: Any) -> bool:
    """Whether a block added or removed whole (``present``) sets the field at ``forced``, below ``bare``."""
    if present is None or not forced.startswith(bare + "."):
        return False
    rest = forced[len(bare) + 1 :].split(".")
    return any(v is not None for v in values_at(present, rest))


def _conditional(why: str, old: Any, new: Any) -> str:
    """A ``CustomizeDiff`` condition on a field: ``isBeenEnabled`` (true to false) is exact; any other
    condition is taken as a replacement, saying so."""
    if "isBeenEnabled" in why:
        return f"disabled after being enabled: {why}" if old is True and new is not True else ""
    return f"may replace (read the condition): {why}"


def forcing(change: tuple[str, Any, Any], found: Rules) -> str:
    """Why a changed path replaces the resource ('' when it does not).

    Google provider fields force a new resource by their own flag (exact path; below a map or a list
    of plain values too). A block added or removed as a whole also forces one when a field inside it
    does and is set: the SDK diffs each nested field against the empty side. pulumi-kubernetes
    replaces on a change at or below a listed path, or a whole block holding one.
    """
    path, old, new = change
    bare = schema_path(path)
    present = new if old is None else old if new is None else None
    if bare in found.paths:
        return found.paths[bare]
    for forced, why in found.paths.items():
        below = found.prefixes or forced in found.below
        if below and bare.startswith(forced + "."):
            return why
        if _inside(forced, bare, present if not found.prefixes else (new if new is not None else old)):
            return why
    for forced, why in found.conditional.items():
        if bare == forced or bare.startswith(forced + "."):
            return _conditional(why, old, new)
    return ""


def unknown_effect(path: str, found: Rules | None, resource_type: str) -> str:
    """Why the effect of a changed path is unknown ('' when the rules tell it)."""
    if found is None:
        return knowledge.missing_knowledge(resource_type)
    bare = schema_path(path)
    for field_path in found.unknown:
        if bare == field_path or bare.startswith(field_path + "."):
            return (
                f"{field_path} is in the pinned SDK but not in the provider source read "
                f"({knowledge.COMMAND}): its effect is unknown"
            )
    return ""


def _steps(path: str) -> list[str]:
    return _STEP.findall(path)


def _step_matches(pattern: str, step: str) -> bool:
    if pattern in ("*", "[*]") or pattern == step:
        return True
    return pattern.startswith("[") and step.startswith("[") and pattern.strip("[]\"'") == step.strip("[]\"'")


def replaced_on_change(path: str, replace_on_changes: Sequence[str]) -> str:
    """The ``replaceOnChanges`` path a change at ``path`` falls at or below ('' when none)."""
    steps = _steps(path)
    for option in replace_on_changes:
        pattern = _steps(option)
        if option == "*" or (
            len(pattern) <= len(steps)
            and all(_step_matches(p, s) for p, s in zip(pattern, steps, strict=False))
        ):
            return option
    return ""


def unknown_forces(key: str, found: Rules, replace_on_changes: Sequence[str]) -> str:
    """Why an input made unknown whole (``key``, a top-level input) replaces the resource: a path at
    or below it replaces on any change, or ``replaceOnChanges`` covers it ('' when neither)."""
    for forced, why in found.paths.items():
        if forced == key or forced.startswith(key + "."):
            return why
    for forced, why in found.conditional.items():
        if forced == key or forced.startswith(key + "."):
            return f"may replace (read the condition): {why}"
    return option_forces(key, replace_on_changes)


def option_forces(path: str, replace_on_changes: Sequence[str]) -> str:
    """Why ``replaceOnChanges`` replaces on a change at ``path`` ('' when it does not)."""
    option = replaced_on_change(path, replace_on_changes)
    return f"{OPTION_PREFIX}{option}: {knowledge.engine_rule('replaceOnChanges')}" if option else ""


def with_replaced_provider(
    change: Change | None, resource_type: str, name: str, provider: str, replaced: Mapping[str, str]
) -> Change | None:
    """A resource in both plans whose provider is replaced is replaced too (``replaced``: the
    replaced providers' labels, with why)."""
    if provider not in replaced:
        return change
    rule = knowledge.engine_rule("providerChange")
    why = f"its provider {provider} is replaced ({replaced[provider]}); {rule}"
    forced = FieldChange("provider", provider, provider, why)
    if change is None:
        return Change("replace", resource_type, name, (forced,))
    if change.action in ("create", "delete"):
        return change
    return Change(
        "replace", change.type, change.name, (forced, *change.fields), change.tpu_slice, change.pool_name
    )
