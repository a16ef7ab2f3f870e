"""Built-in Kubernetes objects, checked against the strict schemas kubernetes-validate ships.

``kubernetes_validate.validate`` stops at the first problem; the same schema files are
loaded here once per kind so that every problem is reported in one pass.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from importlib import resources
from typing import Any

import jsonschema
import kubernetes_validate
from referencing import Registry, Resource

# TPU v6e needs GKE 1.31.2 or later: objects are checked against the oldest version the
# platform supports, so they also load on every later one.
KUBERNETES_VERSION = "1.31"

_DEFINITIONS_ID = "https://kubernetes.io/api/_definitions.json"
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_UNSUFFIXED_GROUPS = frozenset({"apps", "batch", "autoscaling", "policy", "extensions"})


def split_api_version(api_version: str) -> tuple[str, str]:
    """``apps/v1`` -> (``apps``, ``v1``); ``v1`` -> (``""``, ``v1``)."""
    group, _, version = api_version.rpartition("/")
    return group, version


def _file_prefix(group: str) -> str:
    """How kubernetes-validate names a group in its file names: ``rbac.authorization.k8s.io`` -> ``rbac``."""
    return group.split(".", 1)[0]


@dataclass(frozen=True)
class CoreLookup:
    """The strict validator for one built-in kind, or why there is none."""

    validator: jsonschema.protocols.Validator | None
    known_group: bool
    served: tuple[str, ...] = ()


class KubernetesSchemas:
    """kubernetes-validate's strict schemas for one Kubernetes minor version."""

    def __init__(self, version: str = KUBERNETES_VERSION):
        available = [d.name for d in self._root().iterdir() if d.name.endswith("-local-strict")]
        matches = sorted(d for d in available if d.startswith(f"v{version}."))
        if not matches:
            raise ValueError(
                f"kubernetes-validate {kubernetes_validate.__version__} has no schemas for Kubernetes "
                f"{version}; it has {', '.join(sorted(available))}"
            )
        self.version = version
        self.folder = self._root() / matches[-1]
        self._validators: dict[tuple[str, str, str], jsonschema.protocols.Validator | None] = {}

    @staticmethod
    def _root() -> Any:
        return resources.files("kubernetes_validate") / "kubernetes-json-schema"

    @cached_property
    def _files(self) -> frozenset[str]:
        return frozenset(p.name for p in self.folder.iterdir())

    @cached_property
    def _registry(self) -> Registry:
        definitions = json.loads((self.folder / "_definitions.json").read_text())
        return Resource.from_contents(definitions) @ Registry()

    @cached_property
    def object_meta(self) -> jsonschema.protocols.Validator:
        """ObjectMeta exactly as the API server knows it, unknown fields rejected."""
        schema = {"$ref": f"{_DEFINITIONS_ID}#/$defs/{_OBJECT_META}"}
        return jsonschema.Draft202012Validator(schema, registry=self._registry)

    def is_builtin_group(self, group: str) -> bool:
        """Core groups: ``""``, the unsuffixed ones and ``*.k8s.io`` groups this version knows."""
        if group == "":
            return True
        if "." not in group:
            return group in _UNSUFFIXED_GROUPS
        prefix = _file_prefix(group)
        return group.endswith(".k8s.io") and any(f"-{prefix}-v" in name for name in self._files)

    def lookup(self, api_version: str, kind: str) -> CoreLookup:
        """The validator for ``kind`` in ``api_version``, checked against the schema's own GVK."""
        group, version = split_api_version(api_version)
        if not self.is_builtin_group(group):
            return CoreLookup(None, known_group=False)
        validator = self._validator(group, version, kind)
        if validator is not None:
            return CoreLookup(validator, known_group=True)
        return CoreLookup(None, known_group=True, served=tuple(self._served_versions(group, kind)))

    def _validator(self, group: str, version: str, kind: str) -> jsonschema.protocols.Validator | None:
        key = (group, version, kind)
        if key not in self._validators:
            self._validators[key] = self._load_validator(group, version, kind)
        return self._validators[key]

    def _load_validator(self, group: str, version: str, kind: str) -> jsonschema.protocols.Validator | None:
        name = f"{kind.lower()}-{_file_prefix(group) + '-' if group else ''}{version}.json"
        if name not in self._files:
            return None
        schema = json.loads((self.folder / name).read_text())
        if {"group": group, "version": version, "kind": kind} not in schema.get(
            "x-kubernetes-group-version-kind", []
        ):
            return None
        return jsonschema.Draft202012Validator(schema, registry=self._registry)

    def _served_versions(self, group: str, kind: str) -> list[str]:
        stem = kind.lower() + "-" + (f"{_file_prefix(group)}-" if group else "")
        pattern = re.compile(re.escape(stem) + r"(v\d+(?:(?:alpha|beta)\d+)?)\.json$")
        served = []
        for name in sorted(self._files):
            match = pattern.match(name)
            if match and self._validator(group, match.group(1), kind) is not None:
                served.append(f"{group}/{match.group(1)}" if group else match.group(1))
        return served


@lru_cache(maxsize=8)
def kubernetes_schemas(version: str = KUBERNETES_VERSION) -> KubernetesSchemas:
    """One shared, lazily loaded schema set per Kubernetes version."""
    return KubernetesSchemas(version)
