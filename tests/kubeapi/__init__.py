"""A strict loopback Kubernetes API double for tests and benchmarks.

The real ``kubernetes`` client (or anything speaking HTTP) talks to it as to kube-apiserver::

    with ApiDouble() as api:
        seed = Seeder(api)
        seed.node(node_obj("tpu-a-0", "pool-a"))
        client = kubernetes.client.ApiClient(kubernetes.client.Configuration(host=api.url))

See :mod:`tests.kubeapi.store` for the API semantics it enforces (resourceVersion and UID
preconditions, selectors, patches, evictions under PDBs), :mod:`tests.kubeapi.server` for watch
semantics and :mod:`tests.kubeapi.faults` for the faults it injects.
"""

from __future__ import annotations

from typing import Any

from tests.kubeapi.faults import Fault, Faults, Request
from tests.kubeapi.objects import job_for_pod
from tests.kubeapi.server import ApiDouble, Served, identity_of
from tests.kubeapi.store import ApiStatus, Kind, Store, kind_named

JSON = dict[str, Any]


class Seeder:
    """Create, change and delete objects directly in the double's store (as other actors would)."""

    def __init__(self, api: ApiDouble) -> None:
        self.store = api.store

    def create(self, plural: str, obj: JSON) -> JSON:
        kind = kind_named(plural)
        namespace = (obj.get("metadata") or {}).get("namespace", "") if kind.namespaced else ""
        return self.store.create(kind, namespace or ("default" if kind.namespaced else ""), obj)

    def node(self, obj: JSON) -> JSON:
        return self.create("nodes", obj)

    def pod(self, obj: JSON, *, with_job: bool = True) -> JSON:
        """Create the pod, and the Job it names as its controller (as its JobSet created it) if that
        does not exist yet, unless ``with_job`` is False."""
        job = job_for_pod(obj) if with_job else None
        if job is not None:
            meta = job["metadata"]
            known = {j["metadata"]["name"] for j in self.list("jobs", meta["namespace"])}
            if meta["name"] not in known:
                self.create("jobs", job)
        return self.create("pods", obj)

    def job(self, obj: JSON) -> JSON:
        return self.create("jobs", obj)

    def jobset(self, obj: JSON) -> JSON:
        return self.create("jobsets", obj)

    def lease(self, obj: JSON) -> JSON:
        return self.create("leases", obj)

    def event(self, obj: JSON) -> JSON:
        return self.create("events", obj)

    def pdb(self, obj: JSON) -> JSON:
        return self.create("poddisruptionbudgets", obj)

    def kueue(self, plural: str, obj: JSON) -> JSON:
        """Workloads, localqueues, clusterqueues, resourceflavors, workloadpriorityclasses."""
        return self.create(plural, obj)

    def get(self, plural: str, name: str, namespace: str = "") -> JSON:
        kind = kind_named(plural)
        return self.store.get(kind, namespace if kind.namespaced else "", name)

    def list(self, plural: str, namespace: str = "") -> list[JSON]:
        return self.store.list_items(kind_named(plural), namespace)[0]

    def update(self, plural: str, obj: JSON) -> JSON:
        """Replace unconditionally (the current resourceVersion is taken)."""
        kind = kind_named(plural)
        meta = dict(obj["metadata"])
        meta.pop("resourceVersion", None)
        return self.store.replace(
            kind,
            meta.get("namespace", "") if kind.namespaced else "",
            meta["name"],
            {**obj, "metadata": meta},
        )

    def delete(self, plural: str, name: str, namespace: str = "", *, grace: int | None = 0) -> None:
        kind = kind_named(plural)
        self.store.delete(kind, namespace if kind.namespaced else "", name, {"gracePeriodSeconds": grace})

    def set_node_ready(self, name: str, status: str, since: float) -> JSON:
        """Flip a node's Ready condition (what the node lifecycle controller does)."""
        from tests.kubeapi.store import rfc3339

        node = self.get("nodes", name)
        for c in node["status"]["conditions"]:
            if c["type"] == "Ready" and c["status"] != status:
                c["status"] = status
                c["lastTransitionTime"] = rfc3339(since)
        return self.update("nodes", node)


__all__ = [
    "ApiDouble",
    "ApiStatus",
    "Fault",
    "Faults",
    "Kind",
    "Request",
    "Seeder",
    "Served",
    "Store",
    "identity_of",
    "kind_named",
]
