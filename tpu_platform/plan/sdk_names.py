"""Terraform field paths as the Pulumi property paths a plan shows, read from the pinned Python SDK.

pulumi-gcp names each Terraform field in camelCase and gives a list or set block that is not
``MaxItems: 1`` a plural name (``allow`` -> ``allows``, ``guest_accelerator`` ->
``guestAccelerators``; a ``MaxItems: 1`` block becomes one object). Rather than re-implement the
bridge's inflector, each name is matched against the input types of the installed SDK
(``FirewallArgs``, ``FirewallAllowArgs``, ...): the Terraform name in camelCase, or one of its plural
forms when the field is such a list. What the SDK has and the provider source does not is reported,
so a field whose replacement behaviour is unknown is never taken for an in-place update.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from pulumi._types import input_type_py_to_pulumi_names

from .go_schema import Field

_ARGS_REF = re.compile(r"ForwardRef\('(\w+Args)'\)")


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def plural_forms(name: str) -> list[str]:
    """English plurals of a snake_case name's last word (the forms the bridge's inflector yields
    for the provider's field names), the name itself last (already plural: ``source_ranges``)."""
    head, _, last = name.rpartition("_")
    stem = f"{head}_" if head else ""
    forms = [last + "s", last + "es"]
    if last.endswith("y"):
        forms.insert(0, last[:-1] + "ies")
    if last.endswith("f"):
        forms.append(last[:-1] + "ves")
    if last.endswith("fe"):
        forms.append(last[:-2] + "ves")
    return [stem + form for form in forms] + [name]


def args_class(token: str, package: str) -> type:
    """``gcp:compute/firewall:Firewall`` -> ``pulumi_gcp.compute.FirewallArgs``."""
    _, module, name = token.split(":")
    found: type = getattr(importlib.import_module(f"{package}.{module.split('/')[0]}"), f"{name}Args")
    return found


def _nested(cls: type, python_name: str) -> type | None:
    """The input type a property holds (``FirewallAllowArgs`` for ``allows``), if it holds one."""
    prop = getattr(cls, python_name, None)
    getter = getattr(prop, "fget", None)
    if getter is None:
        return None
    match = _ARGS_REF.search(str(inspect.signature(getter).return_annotation))
    if match is None:
        return None
    found = getattr(importlib.import_module(cls.__module__), match.group(1), None)
    return found if isinstance(found, type) else None


@dataclass
class Names:
    """Pulumi paths of Terraform paths, and what one side has that the other does not."""

    paths: dict[tuple[str, ...], str] = field(default_factory=dict)
    sdk_only: list[str] = field(default_factory=list)
    unmatched_inputs: list[str] = field(default_factory=list)


def resolve(fields: Mapping[str, Field], cls: type) -> Names:
    """Match every Terraform field to the SDK's property at the same place, recursively."""
    names = Names()
    _level(fields, cls, (), "", names)
    return names


def _level(
    fields: Mapping[str, Field], cls: type, tf_prefix: tuple[str, ...], prefix: str, names: Names
) -> None:
    py_to_pulumi = input_type_py_to_pulumi_names(cls)
    pulumi_to_py = {pulumi: py for py, pulumi in py_to_pulumi.items()}
    matched: set[str] = set()
    for tf_name, spec in sorted(fields.items()):
        candidates = [*plural_forms(tf_name)] if spec.is_block_list else [tf_name]
        hit = next((camel(c) for c in candidates if camel(c) in pulumi_to_py), None)
        if hit is None and camel(tf_name) in pulumi_to_py:
            hit = camel(tf_name)
        path = (*tf_prefix, tf_name)
        if hit is None:
            if spec.is_input:
                names.unmatched_inputs.append(".".join(path))
            continue
        matched.add(hit)
        pulumi_path = f"{prefix}.{hit}" if prefix else hit
        names.paths[path] = pulumi_path
        nested = _nested(cls, pulumi_to_py[hit])
        if spec.fields and nested is not None:
            _level(spec.fields, nested, path, pulumi_path, names)
    for pulumi_name in sorted(set(pulumi_to_py) - matched):
        names.sdk_only.append(f"{prefix}.{pulumi_name}" if prefix else pulumi_name)


def iter_force_new(fields: Mapping[str, Field], names: Names) -> Iterator[tuple[str, bool]]:
    """The Pulumi path of every input field that is ``ForceNew``, and whether a change below it
    (a key of a map, an item of a list of plain values) replaces too: only a block's children keep
    their own flag."""
    stack: list[tuple[tuple[str, ...], Field]] = [((name,), spec) for name, spec in fields.items()]
    while stack:
        path, spec = stack.pop()
        if spec.force_new and path in names.paths:
            yield names.paths[path], spec.type in ("TypeMap", "TypeList", "TypeSet") and not spec.fields
        stack.extend(((*path, name), child) for name, child in spec.fields.items())
