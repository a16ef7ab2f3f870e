"""A read-only view of a JobSet manifest that tolerates malformed input.

The schema check reports structure errors; the rules below only need the values, so every
accessor returns an empty mapping or list where the manifest has the wrong type.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..constants import LABEL_ACCELERATOR, LABEL_TOPOLOGY, TPU_RESOURCE
from ..schema.structural import join

JOBSET_API_GROUP = "jobset.x-k8s.io"


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def whole_number(value: Any) -> int | None:
    """A resource quantity or count as an int when it is a plain whole number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"[0-9]+", value.strip()):  # ASCII, as the API reads it
        return int(value.strip())
    return None


def is_jobset(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and doc.get("kind") == "JobSet"
        and str(doc.get("apiVersion", "")).split("/")[0] == JOBSET_API_GROUP
    )


@dataclass(frozen=True)
class Container:
    index: int
    path: str
    spec: dict[str, Any]

    @property
    def limits(self) -> dict[str, Any]:
        return as_dict(as_dict(self.spec.get("resources")).get("limits"))

    @property
    def requests(self) -> dict[str, Any]:
        return as_dict(as_dict(self.spec.get("resources")).get("requests"))


@dataclass(frozen=True)
class ReplicatedJob:
    """One entry of ``spec.replicatedJobs`` with the paths the rules report against."""

    index: int
    raw: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.raw.get("name", f"#{self.index}"))

    @property
    def path(self) -> str:
        return f"spec.replicatedJobs[{self.index}]"

    @property
    def replicas(self) -> int:
        value = whole_number(self.raw.get("replicas", 1))
        return 1 if value is None else value

    @property
    def job_meta(self) -> dict[str, Any]:
        return as_dict(as_dict(self.raw.get("template")).get("metadata"))

    @property
    def job_meta_path(self) -> str:
        return f"{self.path}.template.metadata"

    @property
    def job_spec(self) -> dict[str, Any]:
        return as_dict(as_dict(self.raw.get("template")).get("spec"))

    @property
    def job_path(self) -> str:
        return f"{self.path}.template.spec"

    @property
    def pod_meta(self) -> dict[str, Any]:
        return as_dict(as_dict(self.job_spec.get("template")).get("metadata"))

    @property
    def pod_meta_path(self) -> str:
        return f"{self.job_path}.template.metadata"

    @property
    def pod_spec(self) -> dict[str, Any]:
        return as_dict(as_dict(self.job_spec.get("template")).get("spec"))

    @property
    def pod_path(self) -> str:
        return f"{self.job_path}.template.spec"

    @property
    def parallelism(self) -> int | None:
        return whole_number(self.job_spec.get("parallelism", 1))

    @property
    def completions(self) -> int | None:
        return whole_number(self.job_spec.get("completions"))

    def containers(self, *, init: bool = False) -> list[Container]:
        key = "initContainers" if init else "containers"
        return [
            Container(i, f"{self.pod_path}.{key}[{i}]", c)
            for i, c in enumerate(as_list(self.pod_spec.get(key)))
            if isinstance(c, dict)
        ]

    def node_selection(self, key: str) -> tuple[str | None, str]:
        """The value the pods require for a node label, from nodeSelector or required node affinity."""
        selector = as_dict(self.pod_spec.get("nodeSelector"))
        if key in selector:
            return str(selector[key]), join(f"{self.pod_path}.nodeSelector", key)
        affinity = as_dict(as_dict(as_dict(self.pod_spec.get("affinity")).get("nodeAffinity")))
        required = as_dict(affinity.get("requiredDuringSchedulingIgnoredDuringExecution"))
        for t, term in enumerate(as_list(required.get("nodeSelectorTerms"))):
            for e, raw in enumerate(as_list(as_dict(term).get("matchExpressions"))):
                expr = as_dict(raw)
                values = as_list(expr.get("values"))
                if expr.get("key") == key and expr.get("operator") == "In" and len(values) == 1:
                    path = (
                        f"{self.pod_path}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                        f".nodeSelectorTerms[{t}].matchExpressions[{e}]"
                    )
                    return str(values[0]), path
        return None, f"{self.pod_path}.nodeSelector"

    @property
    def tpu_limit(self) -> int | None:
        """``google.com/tpu`` the pod asks for (sum over containers); None when none does."""
        values = [c.limits[TPU_RESOURCE] for c in self.containers() if TPU_RESOURCE in c.limits]
        if not values:
            return None
        numbers = [whole_number(v) for v in values]
        return sum(n for n in numbers if n is not None) if all(n is not None for n in numbers) else -1

    @property
    def wants_tpu(self) -> bool:
        """Requests TPU chips or selects TPU nodes."""
        asks = any(TPU_RESOURCE in c.limits or TPU_RESOURCE in c.requests for c in self.containers())
        selects = any(self.node_selection(k)[0] is not None for k in (LABEL_ACCELERATOR, LABEL_TOPOLOGY))
        return asks or selects


@dataclass(frozen=True)
class JobSetView:
    """The parts of a JobSet the rules read."""

    manifest: dict[str, Any]
    default_namespace: str = "default"

    @property
    def meta(self) -> dict[str, Any]:
        return as_dict(self.manifest.get("metadata"))

    @property
    def name(self) -> str:
        return str(self.meta.get("name") or self.meta.get("generateName") or "")

    @property
    def namespace(self) -> str:
        return str(self.meta.get("namespace") or self.default_namespace)

    @property
    def labels(self) -> dict[str, Any]:
        return as_dict(self.meta.get("labels"))

    @property
    def annotations(self) -> dict[str, Any]:
        return as_dict(self.meta.get("annotations"))

    @property
    def spec(self) -> dict[str, Any]:
        return as_dict(self.manifest.get("spec"))

    @property
    def failure_policy(self) -> dict[str, Any]:
        return as_dict(self.spec.get("failurePolicy"))

    @property
    def replicated_jobs(self) -> list[ReplicatedJob]:
        return [
            ReplicatedJob(i, rj)
            for i, rj in enumerate(as_list(self.spec.get("replicatedJobs")))
            if isinstance(rj, dict)
        ]
