"""Every API call the adapter makes, as RBAC sees it: the one list the controller's roles are built from.

Each row is (API group, resource[/subresource], verbs) as the API server's request-info resolver
names a request (k8s.io/apiserver ``pkg/endpoints/request/requestinfo.go``: GET on a collection is
``list``, with ``watch=true`` it is ``watch``, GET on a name ``get``, POST ``create``, PUT ``update``,
PATCH ``patch``, DELETE ``delete``; ``/pods/NAME/eviction`` is ``pods/eviction``). Where each call
is made:

- ``kube.KubernetesApi.list_objects`` / ``watch_objects``: nodes, pods, jobsets and the JobSets'
  Jobs (the ownership chain) cluster-wide,
  node Leases in ``kube-node-lease`` (only with ``lease_stale_seconds`` on);
- ``patch_node`` (JSON Patch), ``patch_jobset`` (merge patch), ``evict_pod`` (policy/v1 Eviction),
  ``delete_pod`` (stuck pods), ``create_event`` (events.k8s.io/v1, in the object's namespace or the
  node event namespace);
- ``get_lease`` / ``create_lease`` / ``replace_lease``: leader election in the controller's own namespace.

``tests/hotswap/test_hotswap_access.py`` runs the adapter against a loopback API server and checks
that the calls it really makes are exactly these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from tpu_platform.hotswap.adapter.api import JOBSET_GROUP


@dataclass(frozen=True, slots=True)
class Access:
    group: str
    resource: str
    verbs: tuple[str, ...]


CLUSTER_ACCESS: Final = (
    Access("", "nodes", ("list", "watch", "patch")),
    Access("", "pods", ("list", "watch", "delete")),
    Access("", "pods/eviction", ("create",)),
    Access(JOBSET_GROUP, "jobsets", ("list", "watch", "patch")),
    Access("batch", "jobs", ("list", "watch")),
    Access("events.k8s.io", "events", ("create",)),
)
"""Cluster-wide: the watched collections and the writes on the objects in them (any namespace)."""

LEADER_ACCESS: Final = (Access("coordination.k8s.io", "leases", ("get", "create", "update")),)
"""In the controller's own namespace: the leader-election Lease."""

NODE_LEASE_ACCESS: Final = (Access("coordination.k8s.io", "leases", ("list", "watch")),)
"""In ``kube-node-lease``, only with ``lease_stale_seconds`` on: the kubelets' heartbeats."""
