"""Kueue objects and PriorityClasses in a manifest: schema findings and Kueue's own semantics.

The schema (``tpu_platform.schema``) finds deprecated versions, unknown fields and CEL failures;
this module names them (``api-version``, ``unknown-field`` with what to write instead) and adds
what Kueue 0.19.2 does with a valid object that the schema cannot see:

- a ClusterQueue without ``namespaceSelector`` admits no namespace: the selector "defaults to
  null which is a nothing selector (no namespaces eligible)" (kubernetes-sigs/kueue v0.19.2,
  ``apis/kueue/v1beta2/clusterqueue_types.go``; ``pkg/cache/scheduler/clusterqueue.go`` turns it
  into a selector with ``metav1.LabelSelectorAsSelector``, which matches nothing for nil);
- a LocalQueue whose ClusterQueue does not exist, and a ClusterQueue whose ResourceFlavor does
  not exist, keep every workload pending (the ClusterQueue is inactive).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..constants import TPU_RESOURCE
from ..schema import SchemaIssue
from .findings import Finding, Severity
from .jobset import as_dict, as_list, whole_number

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_KINDS = frozenset(
    {"ClusterQueue", "LocalQueue", "ResourceFlavor", "Cohort", "WorkloadPriorityClass", "AdmissionCheck"}
)


# Fields that no version of the kind has, and what to write instead.
FIELD_HINTS: dict[str, str] = {
    "reclaimOutOfCohort": (
        "reclaimOutOfCohort exists in no Kueue version. To take back quota lent to the cohort use "
        "spec.preemption.reclaimWithinCohort (Never | LowerPriority | Any); to preempt lower-priority "
        "work while borrowing use spec.preemption.borrowWithinCohort.policy: LowerPriority"
    ),
    "cohort": "v1beta2 names the cohort with spec.cohortName (spec.cohort was v1beta1)",
    "parent": "v1beta2 Cohorts name their parent with spec.parentName",
}


def api_group(obj: Mapping[str, Any]) -> str:
    api_version = obj.get("apiVersion")
    return api_version.split("/")[0] if isinstance(api_version, str) and "/" in api_version else ""


def is_kueue(obj: Mapping[str, Any]) -> bool:
    kind = obj.get("kind")
    return api_group(obj) == KUEUE_GROUP and isinstance(kind, str) and kind in KUEUE_KINDS


def is_priority_class(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "PriorityClass" and api_group(obj) == "scheduling.k8s.io"


def name_of(obj: Mapping[str, Any]) -> str:
    meta = as_dict(obj.get("metadata"))
    name = meta.get("name")
    return name if isinstance(name, str) else ""


def schema_finding(issue: SchemaIssue, jobset: bool, kind: str = "") -> Finding:
    """One schema issue as a finding: version and unknown-field issues get their own rules."""
    last = issue.path.rsplit(".", 1)[-1]
    if issue.code == "version":
        return Finding(
            "api-version", "error", issue.path, issue.message, "change apiVersion as the message says"
        )
    if issue.code == "unknown-field":
        hint = FIELD_HINTS.get(last)
        return Finding(
            "unknown-field",
            "error",
            issue.path,
            f"{issue.message}: no version of {kind or 'the kind'} has it, so the API server rejects it",
            hint or "remove the field or fix its spelling",
        )
    rule = "jobset-schema" if jobset else "object-schema"
    severity: Severity = "error" if issue.severity == "error" else "warning"
    fix = "make the field match the kind's schema" if issue.code != "cel" else "make the validation rule hold"
    return Finding(rule, severity, issue.path, issue.message, fix)


@dataclass
class RunIndex:
    """The Kueue objects and priorities defined by every document of one lint run."""

    cluster_queues: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    local_queues: dict[tuple[str, str], str] = field(default_factory=dict)
    flavors: set[str] = field(default_factory=set)
    priority_classes: dict[str, int] = field(default_factory=dict)
    workload_priority_classes: dict[str, int] = field(default_factory=dict)

    def add(self, obj: Mapping[str, Any], default_namespace: str) -> None:
        name = name_of(obj)
        if not name:
            return
        kind = obj.get("kind")
        spec = as_dict(obj.get("spec"))
        if is_priority_class(obj) and isinstance(obj.get("value"), int):
            self.priority_classes[name] = int(obj["value"])
        if not is_kueue(obj):
            return
        if kind == "ClusterQueue":
            self.cluster_queues[name] = spec
        elif kind == "LocalQueue" and isinstance(spec.get("clusterQueue"), str):
            namespace = as_dict(obj.get("metadata")).get("namespace") or default_namespace
            self.local_queues[(str(namespace), name)] = spec["clusterQueue"]
        elif kind == "ResourceFlavor":
            self.flavors.add(name)
        elif kind == "WorkloadPriorityClass" and isinstance(obj.get("value"), int):
            self.workload_priority_classes[name] = int(obj["value"])


def flavor_names(spec: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(path, flavor name) of every flavor a ClusterQueue spec lists."""
    for g, group in enumerate(as_list(spec.get("resourceGroups"))):
        for f, flavor in enumerate(as_list(as_dict(group).get("flavors"))):
            name = as_dict(flavor).get("name")
            if isinstance(name, str):
                yield f"spec.resourceGroups[{g}].flavors[{f}].name", name


def tpu_nominal(spec: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """(nominal, borrowing limit) of google.com/tpu over every flavor; None when not whole numbers."""
    nominal, borrowing = 0, 0
    unlimited = False
    for group in as_list(spec.get("resourceGroups")):
        for flavor in as_list(as_dict(group).get("flavors")):
            for resource in as_list(as_dict(flavor).get("resources")):
                res = as_dict(resource)
                if res.get("name") != TPU_RESOURCE:
                    continue
                quota = whole_number(res.get("nominalQuota"))
                if quota is None:
                    return None, None
                nominal += quota
                limit = whole_number(res.get("borrowingLimit"))
                if limit is None:
                    unlimited = True
                else:
                    borrowing += limit
    return nominal, None if unlimited else borrowing


def kueue_rules(
    obj: Mapping[str, Any], run: RunIndex, known_cluster_queues: set[str], known_flavors: set[str]
) -> Iterator[Finding]:
    """Kueue semantics of one object, against what this run and the context define."""
    kind = obj.get("kind")
    spec = as_dict(obj.get("spec"))
    if kind == "ClusterQueue":
        if spec.get("namespaceSelector") is None:
            yield Finding(
                "cluster-queue-no-namespaces",
                "error",
                "spec.namespaceSelector" if "namespaceSelector" in spec else "spec",
                "no namespaceSelector: Kueue reads a missing selector as one that matches no namespace, so "
                "this ClusterQueue admits no workload from any LocalQueue",
                "add spec.namespaceSelector: {} for every namespace, or matchLabels for some",
            )
        flavors = run.flavors | known_flavors
        for path, name in flavor_names(spec):
            if name not in flavors:
                yield Finding(
                    "cluster-queue-flavor",
                    "error",
                    path,
                    f"no ResourceFlavor {name!r} in this manifest or the cluster: the ClusterQueue stays "
                    "inactive and admits nothing",
                    "create the ResourceFlavor or use one that exists"
                    + (f" ({', '.join(sorted(flavors))})" if flavors else ""),
                )
        for path, key in (("spec.resourceGroups", "nominalQuota"),):
            nominal, _ = tpu_nominal(spec)
            if nominal is not None and nominal < 0:
                yield Finding(
                    "count-invalid", "error", path, f"{key} of google.com/tpu is negative", "use 0 or more"
                )
    elif kind == "LocalQueue":
        target = spec.get("clusterQueue")
        queues = set(run.cluster_queues) | known_cluster_queues
        if isinstance(target, str) and target not in queues:
            yield Finding(
                "local-queue-target",
                "error",
                "spec.clusterQueue",
                f"no ClusterQueue {target!r} in this manifest or the cluster: workloads in this LocalQueue "
                "stay pending for good",
                "name an existing ClusterQueue" + (f" ({', '.join(sorted(queues))})" if queues else ""),
            )
