"""MultiKueue objects of a fleet: the manager's check and worker connections, and each worker's
least-privilege identity for the manager (Kueue v0.19.2).

Manager (``site/content/en/docs/tasks/manage/setup_multikueue.md``,
``site/static/examples/multikueue/multikueue-setup.yaml``):

- one ``MultiKueueCluster`` per worker, ``clusterSource.kubeConfig`` with ``locationType: Secret``:
  the Secret of that name in Kueue's namespace holds the worker's kubeconfig under ``kubeconfig``;
- a ``MultiKueueConfig`` listing the workers (the incremental dispatcher tries them in this order);
- an ``AdmissionCheck`` with controller ``kueue.x-k8s.io/multikueue`` naming that config, on every
  team ClusterQueue (``admissionChecksStrategy``, all flavors).

Worker: a ServiceAccount in ``kueue-system`` with the rules of the ClusterRole ``multikueue-sa-role``
in ``site/static/examples/multikueue/create-multikueue-kubeconfig.sh`` (kueue v0.19.2), restricted to
the frameworks the platform's Kueue manages (``batch/job`` and JobSet), nothing on Secrets, Pods or
other frameworks. The script binds them cluster-wide; here they are split in two so that writes
reach only the team namespaces:

- ``tpu-platform-multikueue``, a role template with every verb except list and watch (create,
  get and delete of the Job or JobSet, create, update, patch and delete of its Workload and its
  status: ``jobset_multikueue_adapter.go``, ``workload.go``), bound by one RoleBinding in each team
  namespace, and in no namespace of Kubernetes, GKE, Kueue, JobSet or the hotswap controller;
- ``tpu-platform-multikueue-watch``, list and watch of the same kinds and the script's read of
  ClusterQueues and LocalQueues, bound cluster-wide: MultiKueue opens one watch per kind on each
  worker across all namespaces (``multikueuecluster.go``, ``establishWatch``: ``client.Watch`` with
  only the origin label selector), which a RoleBinding cannot grant, and ClusterQueues are
  cluster-scoped. Without it the MultiKueueCluster never becomes Active.

The credential is a ``kubernetes.io/service-account-token`` Secret: Kueue reads a static kubeconfig
and rejects exec plugins, token files and auth providers (``multikueuecluster.go``,
``validateKubeconfig``/``validateRestConfig``), so gke-gcloud-auth-plugin cannot be used and a
TokenRequest token would expire with nothing on the manager to renew it. The token lives until its
Secret is deleted (Kubernetes docs, "Delete/invalidate a ServiceAccount token",
``reference/access-authn-authz/service-accounts-admin``); rotation
(``fleet.workers[].credentialsRotation``) renames the Secret, so Pulumi creates the new token,
rewrites the manager's kubeconfig Secret (Kueue watches Secrets and reconnects:
``multikueuecluster.go``, ``secretHandler``), then deletes the old token Secret, which revokes it.
Pure functions; objects validate against ``../shared/crds/kueue-v0.19.2``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .. import constants
from ..config.fleet import FleetConfig, FleetWorkerConfig
from ..config.teams import TeamConfig
from ..constants import LABEL_MANAGED_BY, LABEL_PART_OF

KUEUE_API = "kueue.x-k8s.io/v1beta2"
KUEUE_NAMESPACE = constants.KUEUE_NAMESPACE
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
CHECK_NAME = "multikueue"
CONFIG_NAME = "tpu-fleet"
WORKER_SERVICE_ACCOUNT = "multikueue"
WORKER_ROLE = "tpu-platform-multikueue"
WORKER_WATCH_ROLE = "tpu-platform-multikueue-watch"
RBAC_API = "rbac.authorization.k8s.io/v1"
MANAGED_LABELS = {LABEL_MANAGED_BY: "tpu-platform", LABEL_PART_OF: "tpu-platform"}

_WATCHED = ["create", "delete", "get", "list", "watch"]
# Verbs the cluster-wide watch role carries; every other verb is granted per team namespace.
WATCH_VERBS = frozenset({"list", "watch"})
# Read wholly through the watch role: ClusterQueues are cluster-scoped, so no RoleBinding grants them.
QUEUE_RESOURCES = frozenset({"clusterqueues", "localqueues"})

# The rules of the ClusterRole multikueue-sa-role in kubernetes-sigs/kueue v0.19.2
# site/static/examples/multikueue/create-multikueue-kubeconfig.sh, verbatim, for the frameworks
# a fleet's Kueue may manage (the script also grants pods, statefulsets, LeaderWorkerSets,
# Kubeflow, Ray and AppWrapper kinds, for integrations a fleet rejects).
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
    """The worker's token Secret; its name carries ``credentialsRotation``, so raising it makes a
    new Secret (a new token) and the old one is deleted, which revokes its token."""
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


def upstream_rules(frameworks: list[str]) -> list[dict[str, Any]]:
    """Kueue's worker rules for these frameworks, as the script lists them; raises on a framework
    this module has no rules for (the stack checks reject it first)."""
    rules: list[dict[str, Any]] = []
    for framework in frameworks:
        rules.extend(FRAMEWORK_RULES[framework])
    return [*rules, *KUEUE_RULES]


def _split(frameworks: list[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Kueue's rules as (per team namespace, cluster-wide watch); together exactly the script's."""
    namespaced: list[dict[str, Any]] = []
    watch: list[dict[str, Any]] = []
    for rule in upstream_rules(frameworks):
        if QUEUE_RESOURCES & set(rule["resources"]):
            watch.append(dict(rule))
            continue
        writes = [verb for verb in rule["verbs"] if verb not in WATCH_VERBS]
        reads = [verb for verb in rule["verbs"] if verb in WATCH_VERBS]
        if writes:
            namespaced.append({**rule, "verbs": writes})
        if reads:
            watch.append({**rule, "verbs": reads})
    return namespaced, watch


def worker_rules(frameworks: list[str]) -> list[dict[str, Any]]:
    """The role template bound in each team namespace: everything but list and watch."""
    return _split(frameworks)[0]


def watch_rules(frameworks: list[str]) -> list[dict[str, Any]]:
    """The cluster-wide role: list and watch of the synced kinds, reads of the queues."""
    return _split(frameworks)[1]


def binding_namespaces(teams: Iterable[TeamConfig]) -> list[str]:
    """The team namespaces the worker role is bound in, each once, in stack order."""
    return list(dict.fromkeys(ns for team in teams for ns in team.namespace_names()))


def _subject() -> list[dict[str, str]]:
    return [{"kind": "ServiceAccount", "name": WORKER_SERVICE_ACCOUNT, "namespace": KUEUE_NAMESPACE}]


def _role_ref(name: str) -> dict[str, str]:
    return {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name}


@dataclass(frozen=True)
class WorkerAccessObjects:
    """One worker's identity for the manager's Kueue, in creation order."""

    service_account: dict[str, Any]
    role: dict[str, Any]
    watch_role: dict[str, Any]
    watch_binding: dict[str, Any]
    role_bindings: list[dict[str, Any]]
    token: dict[str, Any]

    def all(self) -> list[dict[str, Any]]:
        return [
            self.service_account,
            self.role,
            self.watch_role,
            self.watch_binding,
            *self.role_bindings,
            self.token,
        ]


def worker_access_objects(
    worker: FleetWorkerConfig,
    frameworks: list[str],
    namespaces: list[str],
    never_bound: frozenset[str],
) -> WorkerAccessObjects:
    """ServiceAccount, both ClusterRoles, the watch ClusterRoleBinding, a RoleBinding per team
    namespace and the token Secret; raises on a namespace in ``never_bound`` (the stack checks
    reject it first, at its ``teams[i].namespaces[j]``)."""
    refused = sorted(set(namespaces) & never_bound)
    if refused:
        raise ValueError(f"worker {worker.name}: the MultiKueue role is never bound in {', '.join(refused)}")
    return WorkerAccessObjects(
        service_account={
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": _metadata(WORKER_SERVICE_ACCOUNT, KUEUE_NAMESPACE),
            "automountServiceAccountToken": False,
        },
        role={
            "apiVersion": RBAC_API,
            "kind": "ClusterRole",
            "metadata": _metadata(WORKER_ROLE),
            "rules": worker_rules(frameworks),
        },
        watch_role={
            "apiVersion": RBAC_API,
            "kind": "ClusterRole",
            "metadata": _metadata(WORKER_WATCH_ROLE),
            "rules": watch_rules(frameworks),
        },
        watch_binding={
            "apiVersion": RBAC_API,
            "kind": "ClusterRoleBinding",
            "metadata": _metadata(WORKER_WATCH_ROLE),
            "roleRef": _role_ref(WORKER_WATCH_ROLE),
            "subjects": _subject(),
        },
        role_bindings=[
            {
                "apiVersion": RBAC_API,
                "kind": "RoleBinding",
                "metadata": _metadata(WORKER_ROLE, namespace),
                "roleRef": _role_ref(WORKER_ROLE),
                "subjects": _subject(),
            }
            for namespace in dict.fromkeys(namespaces)
        ],
        token={
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/service-account-token",
            "metadata": {
                **_metadata(token_secret_name(worker), KUEUE_NAMESPACE),
                "annotations": {"kubernetes.io/service-account.name": WORKER_SERVICE_ACCOUNT},
            },
        },
    )


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
