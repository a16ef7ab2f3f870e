"""The Kubernetes objects a rendered stack would send to the API server.

The offline plan records Pulumi inputs; three things differ from what pulumi-kubernetes
sends: numbers travel as floats (the provider writes whole ones as integers), an object
without ``metadata.name`` gets an auto-name from its logical name, and a secret field (a
Secret's ``stringData``, which the SDK always marks secret) is recorded as ``[secret]``: its
value is not known offline, so the field is left out of the check.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

REDACTED = "[secret]"  # tpu_platform.plan.harness.REDACTED
# Pulumi appends a random suffix; a fixed one keeps checks deterministic.
AUTONAME_SUFFIX = "-a1b2c3d4"
_SKIPPED_PREFIXES = ("kubernetes:helm.sh/", "kubernetes:yaml/", "kubernetes:kustomize/")


class Recorded(Protocol):
    """A resource as the offline plan records it (``tpu_platform.plan.harness.RecordedResource``)."""

    @property
    def type(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def inputs(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class RenderedObject:
    """One object and the Pulumi resource it came from."""

    label: str
    obj: dict[str, Any]


def _integers(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _integers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integers(v) for v in value]
    return value


def kubernetes_objects(resources: Iterable[Recorded]) -> list[RenderedObject]:
    """Every ``kubernetes:`` resource that is an object (apiVersion and kind); charts and files skipped."""
    found: list[RenderedObject] = []
    for resource in resources:
        if not resource.type.startswith("kubernetes:") or resource.type.startswith(_SKIPPED_PREFIXES):
            continue
        inputs = resource.inputs
        if not isinstance(inputs.get("apiVersion"), str) or not isinstance(inputs.get("kind"), str):
            continue
        obj = _integers({k: copy.deepcopy(v) for k, v in inputs.items() if v != REDACTED})
        meta = obj.setdefault("metadata", {})
        if isinstance(meta, dict) and not meta.get("name") and not meta.get("generateName"):
            meta["name"] = f"{resource.name}{AUTONAME_SUFFIX}"
        found.append(RenderedObject(f"{resource.type}::{resource.name}", obj))
    return found
