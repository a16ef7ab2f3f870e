"""What replaces a resource of a given type, from the committed derivation (``data/force_new.json``).

One lookup for every type a plan can hold: a Google type's ``ForceNew`` fields (exact paths, plus
the fields a ``CustomizeDiff`` forces a new resource on, and the SDK fields the pinned provider
source does not have, whose effect is unknown); pulumi-kubernetes' rules for any Kubernetes kind
(prefixes); the Kubernetes provider's own ``DiffConfig`` fields; pulumi-docker-build's Image (none);
components, which the engine never replaces. A type with none of these has no knowledge, and the
review refuses to guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..tpu_pools import NODE_POOL
from .force_new import COMMAND, load

KUBERNETES_PREFIX = "kubernetes:"
KUBERNETES_PROVIDER = "pulumi:providers:kubernetes"
PROJECT_COMPONENTS = "tpu-platform:"


@dataclass(frozen=True)
class Rules:
    """How one resource's changed input paths decide update or replace."""

    paths: Mapping[str, str] = field(default_factory=dict)  # path -> why it replaces
    prefixes: bool = False  # pulumi-kubernetes: a change at or below a path replaces
    below: frozenset[str] = frozenset()  # Google maps and plain lists: a change below them replaces too
    conditional: Mapping[str, str] = field(default_factory=dict)  # path -> the CustomizeDiff condition
    unknown: tuple[str, ...] = ()  # paths whose effect no source read tells
    component: str = ""  # why the engine never replaces it (a component), else ""


@lru_cache(maxsize=1)
def tables() -> dict[str, Any]:
    return load()


def _google(resource_type: str) -> tuple[dict[str, Any], str] | None:
    data = tables()
    for section in ("gke", "google"):
        entry = data[section]["resources"].get(resource_type)
        if entry is not None:
            return entry, f"{data[section]['repository']} {data[section]['tag']} ({entry['terraform']})"
    return None


def _kubernetes_paths(kind: str, inputs: Mapping[str, Any], flags: Mapping[str, Any]) -> list[str]:
    """``forceNewProperties`` of pulumi-kubernetes for one object (provider flags and ``immutable``)."""
    k8s = tables()["kubernetes"]
    paths = list(k8s["always"])
    mutable_object = inputs.get("immutable") is not True
    kinds = k8s["kinds"]
    if kind == "core/v1:Secret" and not (flags.get(k8s["secret"]["mutableWith"]) is True and mutable_object):
        return paths + k8s["secret"]["fields"]
    if kind in kinds:
        return paths + kinds[kind]
    if kind == "core/v1:ConfigMap" and not (
        flags.get(k8s["configMap"]["mutableWith"]) is True and mutable_object
    ):
        return paths + k8s["configMap"]["fields"]
    return paths


def rules(
    resource_type: str,
    inputs: Mapping[str, Any] | None = None,
    provider_inputs: Mapping[str, Any] | None = None,
    tpu_slice: bool = False,
) -> Rules | None:
    """The replacement rules of a resource, or None when nothing derived covers its type."""
    data = tables()
    if resource_type.startswith(PROJECT_COMPONENTS):
        return Rules(component=f"a component of this project: {data['engine']['component']}")
    if resource_type in data["kubernetes"]["components"]:
        return Rules(component=f"a pulumi-kubernetes component: {data['engine']['component']}")
    if resource_type == KUBERNETES_PROVIDER:
        why = data["kubernetes"]["provider"]["why"]
        return Rules({path: f"{why[path]} (pulumi-kubernetes provider.go DiffConfig)" for path in why})
    if resource_type in data["dockerBuild"]["resources"]:
        return Rules({})
    if resource_type.startswith(KUBERNETES_PREFIX):
        kind = resource_type.removeprefix(KUBERNETES_PREFIX)
        k8s = data["kubernetes"]
        where = f"immutable for {k8s['repository']} {k8s['tag']} (diff.go forceNewProperties)"
        if kind.endswith("Patch"):
            return Rules({p: where for p in data["kubernetes"]["patchResources"]}, prefixes=True)
        immutable = _kubernetes_paths(kind, inputs or {}, provider_inputs or {})
        return Rules({p: where for p in immutable}, prefixes=True)
    google = _google(resource_type)
    if google is None:
        return None
    entry, source = google
    paths = {path: f"ForceNew in {source}" for path in entry["forceNew"]}
    if resource_type == NODE_POOL and tpu_slice:
        paths.update(data["tpuSlice"]["fields"])
    conditional = {path: f"{why} in {source}" for path, why in entry.get("conditional", {}).items()}
    return Rules(
        paths,
        below=frozenset(entry.get("forceNewBelow", ())),
        conditional=conditional,
        unknown=tuple(entry.get("sdkOnly", ())),
    )


def missing_knowledge(resource_type: str) -> str:
    """The fix for a type nothing derived covers."""
    return (
        f"{resource_type}: no replacement knowledge is derived for this type, so the review cannot tell "
        f"an update from a replacement; add it to tpu_platform/plan/force_new.py and run {COMMAND}"
    )


def engine_rule(name: str) -> str:
    """One of the engine's rules as derived (``componentInputs``, ``providerChange``, ``dependents``...)."""
    return str(tables()["engine"][name])


def kubernetes_rule(name: str) -> Any:
    """One of pulumi-kubernetes' rules as derived (``deleteBeforeReplace``, ``provider``...)."""
    return tables()["kubernetes"][name]
