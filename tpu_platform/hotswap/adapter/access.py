"""Every API call the adapter makes, as RBAC sees it: the one list the controller's roles are built from.

Each row is (API group, resource[/subresource], verbs) as the API server's request-info resolver names
a request. ``tests/hotswap/adapter/test_access.py`` runs the adapter against a loopback API server and
checks that the calls it really makes are exactly these. Where each call is made:
docs/hotswap-adapter.md, "access".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from tpu_platform.hotswap.adapter.client import JOBSET_GROUP


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
