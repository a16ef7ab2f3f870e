"""The dependents a delete-before-replace takes with it, as the engine decides them.

When the engine deletes a resource before replacing it, each resource whose inputs take that
resource's outputs could not keep them: it makes those inputs unknown in the resource's old inputs,
asks its provider's ``Diff``, applies its ``replaceOnChanges``, and replaces it too when a
replacement comes out, or when its provider is the resource replaced; then the same for the
dependents of what it added (pulumi ``step_generator.go``, ``calculateDependentReplacements``, on
the old state's dependency graph). A resource is deleted first when its ``deleteBeforeReplace``
option says so, else when its provider asks: pulumi-kubernetes for an object replaced under the same
name and namespace (``provider.go`` ``Diff``). The Google provider's own choice (the Terraform
bridge's, for names set by hand) is not modelled: its replacements count as create-first.

In the plan, ``propertyDependencies`` names the inputs that take another resource's outputs, and
``options`` the resource options: an input made unknown replaces when a path at or below it replaces
on any change, or ``replaceOnChanges`` covers it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import knowledge
from .change import Change, FieldChange
from .forcing import OPTION_PREFIX, unknown_forces
from .knowledge import KUBERNETES_PREFIX, KUBERNETES_PROVIDER
from .kube_provider import IDENTIFIER, RENDER_DIR, SOURCE

Keyed = Mapping[tuple[str, str], Mapping[str, Any]]
_NOT_OWN = ("parent", "provider")


def _label(key: tuple[str, str]) -> str:
    return f"{key[0]}::{key[1]}"


def _metadata(entry: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = (entry.get("inputs") or {}).get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def deletes_first(change: Change, old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    """Why a replaced resource is deleted before its replacement is created ('' when it is not)."""
    option = (new.get("options") or {}).get("deleteBeforeReplace")
    if option is not None:
        return f"deleteBeforeReplace: true: {knowledge.engine_rule('deleteBeforeReplace')}" if option else ""
    found = knowledge.rules(change.type)
    kubernetes = change.type.startswith(KUBERNETES_PREFIX) and found is not None and not found.component
    by_provider = any(
        f.replaces and f.path not in _NOT_OWN and not f.replaces.startswith(OPTION_PREFIX)
        for f in change.fields
    )
    if not kubernetes or not by_provider:
        return ""
    before, after = _metadata(old), _metadata(new)
    named = bool(after.get("name")) and after.get("name") == before.get("name")
    if named and after.get("namespace") == before.get("namespace"):
        return str(knowledge.kubernetes_rule("deleteBeforeReplace"))
    return ""


def _unknown_input_forces(entry: Mapping[str, Any], key: str, flags: Mapping[str, Any]) -> str:
    """Why making input ``key`` of an entry unknown replaces it ('' when it does not)."""
    resource_type = str(entry.get("type"))
    options = entry.get("options") or {}
    on_changes = [str(p) for p in options.get("replaceOnChanges") or []]
    if resource_type == KUBERNETES_PROVIDER:
        provider = knowledge.kubernetes_rule("provider")
        if key in (*provider["activeCluster"], IDENTIFIER, RENDER_DIR):
            return f"unknown {key}: {provider['activeClusterRule']} ({SOURCE})"
        return ""
    inputs = entry.get("inputs") or {}
    found = knowledge.rules(resource_type, inputs if isinstance(inputs, Mapping) else {}, flags)
    if found is None or found.component:
        return ""
    return unknown_forces(key, found, on_changes)


def _forced(
    entry: Mapping[str, Any],
    new_inputs: Mapping[str, Any],
    replace_set: set[str],
    why_first: str,
    flags: Mapping[str, Any],
) -> tuple[FieldChange, ...]:
    """The inputs of an old entry that a replacement in ``replace_set`` makes replace it."""
    rule = knowledge.engine_rule("dependents")
    provider = str(entry.get("provider") or "")
    if provider in replace_set:
        why = f"its provider {provider} is deleted before it is replaced; {rule}"
        return (FieldChange("provider", provider, provider, why),)
    fields = []
    for name, deps in sorted((entry.get("propertyDependencies") or {}).items()):
        taken = sorted(set(deps) & replace_set)
        forced = _unknown_input_forces(entry, name, flags) if taken else ""
        if forced:
            why = (
                f"takes an output of {', '.join(taken)}, deleted before it is replaced ({why_first}), "
                f"so it is unknown and {forced}; {rule}"
            )
            fields.append(FieldChange(name, (entry.get("inputs") or {}).get(name), new_inputs.get(name), why))
    return tuple(fields)


def dependents(
    root: tuple[str, str], why_first: str, old: Keyed, new: Keyed, providers: Mapping[str, Mapping[str, Any]]
) -> dict[tuple[str, str], tuple[FieldChange, ...]]:
    """The resources (in both plans) a delete-before-replace of ``root`` replaces, each with the inputs
    that decide it."""
    replace_set = {_label(root)}
    out: dict[tuple[str, str], tuple[FieldChange, ...]] = {}
    grew = True
    while grew:
        grew = False
        for key, entry in old.items():
            found = knowledge.rules(key[0])
            if key in out or key == root or key not in new or found is None or found.component:
                continue  # the engine replaces no component as a dependent
            flags = providers.get(str(entry.get("provider") or "")) or {}
            fields = _forced(entry, new[key].get("inputs") or {}, replace_set, why_first, flags)
            if fields:
                out[key] = fields
                replace_set.add(_label(key))
                grew = True
    return out
