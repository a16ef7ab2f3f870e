"""The Kubernetes objects of the queueing setup, as plain dicts (``kueue.x-k8s.io/v1beta2`` only).

Pure functions of a validated ``PlatformConfig``: the Pulumi components register exactly
these dicts, the tests and the schema checks read them, and nothing here talks to a cluster.
Flavors and every quota come from the stack's quota/queue plan (``tpu_platform.quota``).

- one ResourceFlavor per slice shape the pools provide, whose node labels are the labels GKE
  puts on that shape's nodes (accelerator and topology), so a flavor's quota can only be
  used by pods that land on slices of that shape;
- per team: its namespaces (created unless they already exist, like ``default``), one
  ClusterQueue whose ``namespaceSelector`` admits exactly those namespaces (a null selector
  admits none, ``{}`` admits all), and its LocalQueues;
- one Cohort object per declared cohort (hierarchical cohorts via ``parentName``);
- per priority, a PriorityClass and a WorkloadPriorityClass with the same name and value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import catalog
from ..config import CohortConfig, NamespaceConfig, PlatformConfig, PriorityConfig, TeamConfig
from ..constants import (
    EXISTING_CHIPS_ANNOTATION,
    LABEL_INSTANCE_TYPE,
    LABEL_MANAGED_BY,
    LABEL_NAMESPACE_NAME,
    LABEL_PART_OF,
    LABEL_TEAM,
    OVERCOMMIT_ANNOTATION,
    TPU_RESOURCE,
)
from ..hotswap.formats.quantity import parse_quantity, split_quantity
from ..quota import FlavorQuota, QuotaLayout, quota_layout
from .provisioning import with_admission_checks

KUEUE_API = "kueue.x-k8s.io/v1beta2"
SCHEDULING_API = "scheduling.k8s.io/v1"
MANAGED_LABELS = {LABEL_MANAGED_BY: "tpu-platform", LABEL_PART_OF: "tpu-platform"}


def _metadata(name: str, namespace: str | None = None, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["labels"] = dict(sorted({**MANAGED_LABELS, **labels}.items()))
    return meta


def _quantity(weight: str) -> int | str:
    """Fair-sharing weights: one written as a plain whole number is rendered as that integer, any
    other stays the quantity string the stack wrote (the API server reads either)."""
    return int(parse_quantity(weight)) if split_quantity(weight).is_plain_integer else weight


# --------------------------------------------------------------------------- flavors


@dataclass(frozen=True)
class Flavor:
    """The ResourceFlavor of one slice shape and how many slices of it the pools provide."""

    name: str
    shape: catalog.SliceShape
    slices: int
    node_labels: dict[str, str]

    @property
    def chips(self) -> int:
        return self.slices * self.shape.chips


def flavor_node_labels(shape: catalog.SliceShape) -> dict[str, str]:
    """Labels GKE puts on every node of the shape; 2x4's two forms also differ by machine type."""
    labels = catalog.node_labels(shape)
    if len([s for s in catalog.all_shapes() if s.topology == shape.topology]) > 1:
        labels[LABEL_INSTANCE_TYPE] = shape.machine_type
    return dict(sorted(labels.items()))


def flavors(cfg: PlatformConfig, plan: QuotaLayout | None = None) -> list[Flavor]:
    """One flavor per slice shape in the pools, smallest shape first (the plan's flavors)."""
    plan = plan or quota_layout(cfg)
    return [Flavor(f.name, f.shape, f.slices, flavor_node_labels(f.shape)) for f in plan.flavors]


def resource_flavor(flavor: Flavor, *, existing_pools: bool = False) -> dict[str, Any]:
    """``existing_pools``: the node pools are not the stack's (kubeconfig mode), so the flavor says
    how many chips the stack declares behind it, for the policy pack's capacity check."""
    metadata = _metadata(flavor.name)
    if existing_pools:
        metadata["annotations"] = {EXISTING_CHIPS_ANNOTATION: str(flavor.chips)}
    return {
        "apiVersion": KUEUE_API,
        "kind": "ResourceFlavor",
        "metadata": metadata,
        "spec": {"nodeLabels": dict(flavor.node_labels)},
    }


# --------------------------------------------------------------------------- quota


def _resource_quota(quota: FlavorQuota) -> dict[str, Any]:
    """Quantities as the strings the API server stores (k8s.io/apimachinery
    ``pkg/api/resource/quantity.go``: ``Quantity.MarshalJSON`` writes a string): a number here
    differed from the live object, and the real engine previewed every queue as an update on any
    change (``tests/live/test_pulumi_engine.py``)."""
    entry: dict[str, Any] = {"name": TPU_RESOURCE, "nominalQuota": str(quota.nominal_chips)}
    if quota.borrowing_limit_chips is not None:
        entry["borrowingLimit"] = str(quota.borrowing_limit_chips)
    if quota.lending_limit_chips is not None:
        entry["lendingLimit"] = str(quota.lending_limit_chips)
    return entry


def resource_groups(quotas: list[FlavorQuota]) -> list[dict[str, Any]]:
    """One group covering google.com/tpu, one flavor per shape, quantities in chips."""
    if not quotas:
        return []
    return [
        {
            "coveredResources": [TPU_RESOURCE],
            "flavors": [{"name": q.flavor, "resources": [_resource_quota(q)]} for q in quotas],
        }
    ]


# --------------------------------------------------------------------------- cohorts, queues, namespaces


def cohort(cfg: PlatformConfig, config: CohortConfig, plan: QuotaLayout | None = None) -> dict[str, Any]:
    plan = plan or quota_layout(cfg)
    spec: dict[str, Any] = {}
    if config.parent_name is not None:
        spec["parentName"] = config.parent_name
    if config.fair_sharing_weight is not None:
        spec["fairSharing"] = {"weight": _quantity(config.fair_sharing_weight)}
    groups = resource_groups(plan.tree.cohorts[config.name].ordered())
    if groups:
        spec["resourceGroups"] = groups
    return {"apiVersion": KUEUE_API, "kind": "Cohort", "metadata": _metadata(config.name), "spec": spec}


def namespace_selector(namespaces: list[str]) -> dict[str, Any]:
    """Admits exactly these namespaces, existing or created, by their built-in name label."""
    return {
        "matchExpressions": [
            {"key": LABEL_NAMESPACE_NAME, "operator": "In", "values": sorted(set(namespaces))},
        ]
    }


def cluster_queue(cfg: PlatformConfig, team: TeamConfig, plan: QuotaLayout | None = None) -> dict[str, Any]:
    plan = plan or quota_layout(cfg)
    preemption: dict[str, Any] = {
        "withinClusterQueue": team.preemption.within_cluster_queue,
        "reclaimWithinCohort": team.preemption.reclaim_within_cohort,
    }
    borrow = team.preemption.borrow_within_cohort
    if borrow is not None:
        rendered: dict[str, Any] = {"policy": borrow.policy}
        threshold = borrow.max_priority_threshold
        if threshold is not None:
            values = {p.name: p.value for p in cfg.priorities}
            rendered["maxPriorityThreshold"] = values[threshold] if isinstance(threshold, str) else threshold
        preemption["borrowWithinCohort"] = rendered
    spec: dict[str, Any] = {}
    if team.cohort_name is not None:
        spec["cohortName"] = team.cohort_name
    spec["namespaceSelector"] = namespace_selector(team.namespace_names())
    spec["queueingStrategy"] = team.queueing_strategy
    spec["preemption"] = preemption
    if team.fair_sharing_weight is not None:
        spec["fairSharing"] = {"weight": _quantity(team.fair_sharing_weight)}
    if team.stop_policy is not None:
        spec["stopPolicy"] = team.stop_policy
    spec["resourceGroups"] = resource_groups(plan.queue_of(team.name).ordered())
    metadata = _metadata(team.cluster_queue, **{LABEL_TEAM: team.name})
    if cfg.kueue.allow_overcommit:
        # Declares the overcommit to the policy pack, which otherwise holds quotas to capacity.
        metadata["annotations"] = {OVERCOMMIT_ANNOTATION: "true"}
    return {"apiVersion": KUEUE_API, "kind": "ClusterQueue", "metadata": metadata, "spec": spec}


def local_queue(team: TeamConfig, namespace: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE_API,
        "kind": "LocalQueue",
        "metadata": _metadata(name, namespace, **{LABEL_TEAM: team.name}),
        "spec": {"clusterQueue": team.cluster_queue},
    }


def namespace(team: TeamConfig, config: NamespaceConfig) -> dict[str, Any]:
    labels = {**config.labels, LABEL_TEAM: team.name}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": _metadata(config.name, **labels)}


# --------------------------------------------------------------------------- priorities


def priority_class(priority: PriorityConfig) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": SCHEDULING_API,
        "kind": "PriorityClass",
        "metadata": _metadata(priority.name),
        "value": priority.value,
        "globalDefault": priority.global_default,
        "preemptionPolicy": priority.preemption_policy,
    }
    if priority.description:
        doc["description"] = priority.description
    return doc


def workload_priority_class(priority: PriorityConfig) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": KUEUE_API,
        "kind": "WorkloadPriorityClass",
        "metadata": _metadata(priority.name),
        "value": priority.value,
    }
    if priority.description:
        doc["description"] = priority.description
    return doc


# --------------------------------------------------------------------------- everything


@dataclass(frozen=True)
class LocalQueueObject:
    team: str
    namespace: str
    name: str
    body: dict[str, Any]


@dataclass(frozen=True)
class QueueObjects:
    """Every queueing object of a stack, grouped in creation order."""

    namespaces: list[dict[str, Any]]
    resource_flavors: list[dict[str, Any]]
    cohorts: list[dict[str, Any]]
    cluster_queues: dict[str, dict[str, Any]]  # team -> ClusterQueue
    local_queues: list[LocalQueueObject]

    def all(self) -> list[dict[str, Any]]:
        return [
            *self.namespaces,
            *self.resource_flavors,
            *self.cohorts,
            *self.cluster_queues.values(),
            *(lq.body for lq in self.local_queues),
        ]


def queue_objects(cfg: PlatformConfig) -> QueueObjects:
    """Namespaces, ResourceFlavors, Cohorts, ClusterQueues and LocalQueues of a validated stack."""
    plan = quota_layout(cfg)
    namespaces = [namespace(team, ns) for team in cfg.teams for ns in team.namespace_list() if ns.created]
    return QueueObjects(
        namespaces=namespaces,
        resource_flavors=[
            resource_flavor(f, existing_pools=cfg.cluster.reached_by_kubeconfig) for f in flavors(cfg, plan)
        ],
        cohorts=[cohort(cfg, c, plan) for c in cfg.cohorts],
        cluster_queues={
            team.name: with_admission_checks(cfg, cluster_queue(cfg, team, plan)) for team in cfg.teams
        },
        local_queues=[
            LocalQueueObject(team.name, ns, name, local_queue(team, ns, name))
            for team in cfg.teams
            for ns, name in team.local_queue_list()
        ],
    )


def priority_objects(cfg: PlatformConfig) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """``(PriorityClass, WorkloadPriorityClass)`` per priority, lowest value first."""
    return [
        (priority_class(p), workload_priority_class(p)) for p in sorted(cfg.priorities, key=lambda p: p.value)
    ]
