"""The fleet part of ``tpu-platform status`` on a MultiKueue manager: each worker's connection and
the workloads dispatched to it.

A MultiKueueCluster's ``Active`` condition says whether the manager's Kueue is connected to that
worker (reason and message say why not, e.g. ``BadKubeConfig`` or ``InsecureKubeConfig``); a
Workload's ``status.clusterName`` names the worker it was dispatched to (kueue v0.19.2
``apis/kueue/v1beta2/multikueue_types.go`` and ``workload_types.go``;
``pkg/controller/admissionchecks/multikueue/multikueuecluster.go``). Pure: fetched objects in,
views out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class WorkerView:
    """One MultiKueueCluster: connected or not, why, since when, and what runs there."""

    name: str
    active: bool | None  # None: Kueue has not reported yet
    reason: str
    message: str
    since: str | None
    secret: str | None
    workloads: int


def _active(cluster: Mapping[str, Any]) -> Mapping[str, Any]:
    status = cluster.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    for condition in conditions if isinstance(conditions, list) else []:
        if isinstance(condition, Mapping) and condition.get("type") == "Active":
            return condition
    return {}


def _secret(cluster: Mapping[str, Any]) -> str | None:
    spec = cluster.get("spec")
    source = spec.get("clusterSource") if isinstance(spec, Mapping) else None
    kubeconfig = source.get("kubeConfig") if isinstance(source, Mapping) else None
    if isinstance(kubeconfig, Mapping) and isinstance(kubeconfig.get("location"), str):
        return str(kubeconfig["location"])
    return None


def dispatched(workloads: Iterable[Mapping[str, Any]]) -> Counter[str]:
    """Workloads per worker they were dispatched to (``status.clusterName``)."""
    counts: Counter[str] = Counter()
    for wl in workloads:
        status = wl.get("status")
        name = status.get("clusterName") if isinstance(status, Mapping) else None
        if isinstance(name, str) and name:
            counts[name] += 1
    return counts


def worker_views(
    clusters: Iterable[Mapping[str, Any]], workloads: Iterable[Mapping[str, Any]]
) -> list[WorkerView]:
    """Every MultiKueueCluster by name, with its connection and its dispatched workloads."""
    counts = dispatched(workloads)
    views = []
    for cluster in clusters:
        meta = cluster.get("metadata")
        name = str(meta.get("name", "")) if isinstance(meta, Mapping) else ""
        condition = _active(cluster)
        state = condition.get("status")
        views.append(
            WorkerView(
                name=name,
                active=True if state == "True" else False if state == "False" else None,
                reason=str(condition.get("reason") or ""),
                message=str(condition.get("message") or ""),
                since=str(condition["lastTransitionTime"]) if condition.get("lastTransitionTime") else None,
                secret=_secret(cluster),
                workloads=counts.get(name, 0),
            )
        )
    return sorted(views, key=lambda v: v.name)
