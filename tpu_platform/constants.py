"""Names more than one layer of the platform uses: namespaces, label, annotation and taint keys.

Keys the hotswap controller reads are defined in ``tpu_platform.hotswap.core.constants``
(its image ships only ``tpu_platform/hotswap``) and taken from there; everything else in
the platform takes them from here. GKE's node labels and taints are GKE's: see
https://cloud.google.com/kubernetes-engine/docs/concepts/plan-tpus (``cloud.google.com/gke-tpu-*``,
``google.com/tpu``); Kueue's job labels are ``kueue.x-k8s.io/queue-name`` and
``kueue.x-k8s.io/priority-class`` (Kueue 0.19.2 ``pkg/controller/constants/constants.go``).
"""

from __future__ import annotations

from typing import Final

from .hotswap.core import constants as _controller

# --------------------------------------------------------------------------- namespaces

KUEUE_NAMESPACE: Final = "kueue-system"
JOBSET_NAMESPACE: Final = "jobset-system"
NODE_LEASE_NAMESPACE: Final = _controller.NODE_LEASE_NAMESPACE
# Google Managed Prometheus' own namespace: its collectors read PodMonitoring secrets from there.
GMP_NAMESPACE: Final = "gmp-system"
# Namespaces every cluster has: a team may queue work there, but the platform never creates or owns them.
BUILTIN_NAMESPACES: Final = frozenset({"default"})
# Namespaces that belong to Kubernetes, GKE or the platform's controllers: never a team's, never the
# hotswap controller's.
RESERVED_NAMESPACES: Final = frozenset(
    {
        "kube-system",
        "kube-public",
        NODE_LEASE_NAMESPACE,
        KUEUE_NAMESPACE,
        JOBSET_NAMESPACE,
        "gke-managed-system",
        "gke-gmp-system",
        GMP_NAMESPACE,
        "gmp-public",
    }
)

# --------------------------------------------------------------------------- GKE nodes

TPU_RESOURCE: Final = _controller.TPU_RESOURCE
TPU_TAINT_KEY: Final = "google.com/tpu"
LABEL_NODEPOOL: Final = _controller.NODEPOOL_LABEL
LABEL_ACCELERATOR: Final = _controller.TPU_ACCELERATOR_LABEL
LABEL_TOPOLOGY: Final = _controller.TPU_TOPOLOGY_LABEL
LABEL_SPOT: Final = "cloud.google.com/gke-spot"
LABEL_INSTANCE_TYPE: Final = "node.kubernetes.io/instance-type"
LABEL_NAMESPACE_NAME: Final = "kubernetes.io/metadata.name"

# --------------------------------------------------------------------------- Kubernetes and Kueue

LABEL_APP_NAME: Final = "app.kubernetes.io/name"
LABEL_MANAGED_BY: Final = "app.kubernetes.io/managed-by"
LABEL_PART_OF: Final = "app.kubernetes.io/part-of"
QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL: Final = "kueue.x-k8s.io/priority-class"

# --------------------------------------------------------------------------- the platform's own

DOMAIN: Final = _controller.DOMAIN
LABEL_SLICE_GROUP: Final = f"{DOMAIN}/slice-group"
LABEL_TEAM: Final = f"{DOMAIN}/team"
LABEL_CAPACITY: Final = f"{DOMAIN}/capacity"
OVERCOMMIT_ANNOTATION: Final = f"{DOMAIN}/tpu-overcommit"
EXISTING_CHIPS_ANNOTATION: Final = f"{DOMAIN}/existing-tpu-chips"
"""On a ResourceFlavor of a ``cluster.mode: kubeconfig`` stack: the chips of the cluster's existing
node pools of its shape, as the stack's ``slicePools`` declare them (no node pool is in the program)."""
HOTSWAP_OPT_IN_LABEL: Final = _controller.OPT_IN_LABEL
HOTSWAP_OPT_IN_VALUE: Final = _controller.OPT_IN_VALUE
HOTSWAP_REPORTING_CONTROLLER: Final = _controller.REPORTING_CONTROLLER
