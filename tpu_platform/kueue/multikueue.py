"""MultiKueue objects of a fleet: the manager's check and worker connections, and each worker's
least-privilege identity for the manager (Kueue v0.19.2).

Manager (``site/content/en/docs/tasks/manage/setup_multikueue.md``,
``site/static/examples/multikueue/multikueue-setup.yaml``):

- one ``MultiKueueCluster`` per worker, ``clusterSource.kubeConfig`` with ``locationType: Secret``:
  the Secret of that name in Kueue's namespace holds the worker's kubeconfig under ``kubeconfig``;
- a ``MultiKueueConfig`` listing the workers (the incremental dispatcher tries them in this order);
- an ``AdmissionCheck`` with controller ``kueue.x-k8s.io/multikueue`` naming that config, on every
  team ClusterQueue (``admissionChecksStrategy``, all flavors).

Worker (``site/static/examples/multikueue/create-multikueue-kubeconfig.sh``): a ServiceAccount in
``kueue-system`` bound to a ClusterRole with the rules that script grants, restricted to the
frameworks the platform's Kueue manages (``batch/job`` and JobSet): MultiKueue watches every
enabled integration's objects on each worker (``multikueuecluster.go``, one watch per adapter) and
creates, reads and deletes the JobSet and its Workload there (``jobset_multikueue_adapter.go``).
Nothing on Secrets, Pods or other frameworks.

The credential is a ``kubernetes.io/service-account-token`` Secret: Kueue reads a static kubeconfig
and rejects exec plugins, token files and auth providers (``multikueuecluster.go``,
``validateKubeconfig``/``validateRestConfig``), so gke-gcloud-auth-plugin cannot be used and a
TokenRequest token would expire with nothing on the manager to renew it. The token lives until its
Secret is deleted; rotation (``fleet.workers[].credentialsRotation``) renames the Secret, so Pulumi
creates the new token, rewrites the manager's kubeconfig Secret (Kueue watches Secrets and
reconnects: ``multikueuecluster.go``, ``secretHandler``), then deletes the old token Secret, which
revokes it. Pure functions; objects validate against ``../shared/crds/kueue-v0.19.2``.
"""

from __future__ import annotations

import json
from typing import Any

from .. import constants
from ..config.fleet import FleetConfig, FleetWorkerConfig
from ..constants import LABEL_MANAGED_BY, LABEL_PART_OF

KUEUE_API = "kueue.x-k8s.io/v1beta2"
KUEUE_NAMESPACE = constants.KUEUE_NAMESPACE
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
CHECK_NAME = "multikueue"
CONFIG_NAME = "tpu-fleet"
WORKER_SERVICE_ACCOUNT = "multikueue"
WORKER_ROLE = "tpu-platform-multikueue"
MANAGED_LABELS = {LABEL_MANAGED_BY: "tpu-platform", LABEL_PART_OF: "tpu-platform"}

_WATCHED = ["create", "delete", "get", "list", "watch"]

# Per framework the platform's Kueue manages: the rules create-multikueue-kubeconfig.sh grants.
FRAMEWORK_RULES: dict[str, list[dict[str, Any]]] = {
    "batch/job": [
        {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": _WATCHED},
        {"apiGroups": ["batch"], "resources": ["jobs/status"], "verbs": ["get"]},
    ],
    "jobset.x-k8s.io/jobset": [
        {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": _WATCHED},
        {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets/status"], "verbs": ["get"]},
    ],
}
KUEUE_RULES: list[dict[str, Any]] = [
    {
        "apiGroups": ["kueue.x-k8s.io"],
        "resources": ["workloads"],
        "verbs": [*_WATCHED, "update", "patch"],
    },
    {
        "apiGroups": ["kueue.x-k8s.io"],
        "resources": ["clusterqueues", "localqueues"],
        "verbs": ["get", "list", "watch"],
    },
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["get", "patch", "update"]},
]


def _metadata(name: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": dict(MANAGED_LABELS)}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def kubeconfig_secret_name(worker: FleetWorkerConfig) -> str:
    """The manager's Secret holding the worker's kubeconfig (``locationType: Secret``)."""
    return f"multikueue-{worker.name}"


def token_secret_name(worker: FleetWorkerConfig) -> str:
    """The worker's token Secret; its name carries the rotation so a rotation replaces it."""
    return f"{WORKER_SERVICE_ACCOUNT}-token-{worker.credentials_rotation}"


def multikueue_cluster(worker: FleetWorkerConfig) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE_API,
        "kind": "MultiKueueCluster",
        "metadata": _metadata(worker.name),
        "spec": {
            "clusterSource": {
                "kubeConfig": {"locationType": "Secret", "location": kubeconfig_secret_name(worker)}
            }
        },
    }


def multikueue_config(fleet: FleetConfig) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE_API,
        "kind": "MultiKueueConfig",
        "metadata": _metadata(CONFIG_NAME),
        "spec": {"clusters": [worker.name for worker in fleet.workers]},
    }


def admission_check() -> dict[str, Any]:
    return {
        "apiVersion": KUEUE_API,
        "kind": "AdmissionCheck",
        "metadata": _metadata(CHECK_NAME),
        "spec": {
            "controllerName": MULTIKUEUE_CONTROLLER,
            "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": CONFIG_NAME},
        },
    }


def with_multikueue_check(cluster_queue: dict[str, Any]) -> dict[str, Any]:
    """A manager ClusterQueue: every workload waits for MultiKueue (workers' own checks, such as
    DWS provisioning, run on the worker that admits it)."""
    spec = dict(cluster_queue["spec"])
    spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": CHECK_NAME}]}
    return {**cluster_queue, "spec": spec}


def worker_rules(frameworks: list[str]) -> list[dict[str, Any]]:
    """The ClusterRole rules for the frameworks the manager's Kueue manages; raises on one this
    module has no rules for (the stack checks reject it first)."""
    rules: list[dict[str, Any]] = []
    for framework in frameworks:
        rules.extend(FRAMEWORK_RULES[framework])
    return [*rules, *KUEUE_RULES]


def worker_access_objects(worker: FleetWorkerConfig, frameworks: list[str]) -> list[dict[str, Any]]:
    """ServiceAccount, ClusterRole, ClusterRoleBinding and token Secret on one worker."""
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": _metadata(WORKER_SERVICE_ACCOUNT, KUEUE_NAMESPACE),
            "automountServiceAccountToken": False,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": _metadata(WORKER_ROLE),
            "rules": worker_rules(frameworks),
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _metadata(WORKER_ROLE),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": WORKER_ROLE},
            "subjects": [
                {"kind": "ServiceAccount", "name": WORKER_SERVICE_ACCOUNT, "namespace": KUEUE_NAMESPACE}
            ],
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/service-account-token",
            "metadata": {
                **_metadata(token_secret_name(worker), KUEUE_NAMESPACE),
                "annotations": {"kubernetes.io/service-account.name": WORKER_SERVICE_ACCOUNT},
            },
        },
    ]


def worker_kubeconfig(worker: FleetWorkerConfig, server: str, token: str, ca_data: str | None) -> str:
    """The kubeconfig the manager's Kueue uses for one worker, in the form Kueue accepts: a
    server URL, CA data inline (none for GKE's DNS endpoint, whose certificate is publicly
    trusted), a bearer token and nothing else (no exec, token file or auth provider)."""
    if not server.startswith("https://"):
        raise ValueError(f"worker {worker.name}: server {server!r} must be an https:// URL")
    if not token:
        raise ValueError(f"worker {worker.name}: the service-account token is empty")
    cluster: dict[str, str] = {"server": server}
    if ca_data:
        cluster["certificate-authority-data"] = ca_data
    name = worker.name
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": WORKER_SERVICE_ACCOUNT}}],
        "current-context": name,
        "users": [{"name": WORKER_SERVICE_ACCOUNT, "user": {"token": token}}],
    }
    return json.dumps(doc, sort_keys=True)


def manager_objects(fleet: FleetConfig) -> list[dict[str, Any]]:
    """The manager's MultiKueue objects in creation order (clusters, config, check)."""
    return [*(multikueue_cluster(w) for w in fleet.workers), multikueue_config(fleet), admission_check()]
