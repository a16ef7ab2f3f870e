"""Raw API objects as the API server would hold them, for seeding the double and for fakes.

Shapes follow the upstream types: core/v1 Node and Pod, coordination.k8s.io/v1 Lease, JobSet
v1alpha2 (jobset v0.12.0 ``api/jobset/v1alpha2/jobset_types.go``), policy/v1 PodDisruptionBudget and
Kueue v1beta2 objects (kueue v0.19.2 ``apis/kueue/v1beta2``).
"""

from __future__ import annotations

from typing import Any

from tpu_platform.hotswap.core import constants as k

JSON = dict[str, Any]


# --- raw objects ----------------------------------------------------------------------------------
def ts(t: float) -> str:
    from tpu_platform.hotswap.core import format_time

    return format_time(t)


def node_obj(
    name: str,
    pool: str,
    *,
    ready: str = "True",
    since: float = 0.0,
    topology: str = "4x4",
    taints: list[JSON] | None = None,
    annotations: dict[str, str] | None = None,
) -> JSON:
    meta: JSON = {
        "name": name,
        "uid": f"uid-{name}",
        "creationTimestamp": ts(0),
        "labels": {
            k.NODEPOOL_LABEL: pool,
            k.TPU_ACCELERATOR_LABEL: "tpu-v6e-slice",
            k.TPU_TOPOLOGY_LABEL: topology,
            "node.kubernetes.io/instance-type": "ct6e-standard-4t",
        },
    }
    if annotations is not None:
        meta["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta,
        "spec": {
            "taints": taints
            if taints is not None
            else [{"key": k.TPU_RESOURCE, "value": "present", "effect": "NoSchedule"}]
        },
        "status": {
            "capacity": {k.TPU_RESOURCE: "4"},
            "conditions": [
                {"type": "MemoryPressure", "status": "False", "lastTransitionTime": ts(0)},
                {"type": "Ready", "status": ready, "lastTransitionTime": ts(since)},
            ],
        },
    }


def node_lease_obj(node: str, renewed: float | None, *, namespace: str = k.NODE_LEASE_NAMESPACE) -> JSON:
    """The Lease a kubelet keeps for its node (renewTime None: a Lease never renewed)."""
    spec: JSON = {"holderIdentity": node, "leaseDurationSeconds": 40}
    if renewed is not None:
        spec["renewTime"] = ts(renewed)
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": node, "namespace": namespace},
        "spec": spec,
    }


def pod_obj(
    name: str,
    jobset: str,
    *,
    job: str,
    node: str | None,
    priority: int,
    namespace: str = "default",
    phase: str = "Running",
    started: float | None = 0.0,
    unschedulable_since: float | None = None,
    deletion: float | None = None,
    jobset_uid: str | None = None,
    owned: bool = True,
) -> JSON:
    """A pod as a JobSet's Job creates it: JobSet v0.12.0 labels the Job's pod template with the
    JobSet's name and UID (``pkg/controllers/jobset_controller.go``, ``labelAndAnnotateObject``),
    and the Job controller makes the Job its controller owner. ``owned=False`` gives a bare pod
    with the same labels and no owner."""
    labels = {
        k.JOBSET_NAME_LABEL: jobset,
        k.JOBSET_UID_LABEL: jobset_uid if jobset_uid is not None else f"uid-js-{jobset}",
        k.JOB_NAME_LABEL: job,
    }
    meta: JSON = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{name}",
        "creationTimestamp": ts(0),
        "labels": labels,
    }
    if owned:
        meta["ownerReferences"] = [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": job,
                "uid": f"uid-job-{job}",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    if deletion is not None:
        meta["deletionTimestamp"] = ts(deletion)
    status: JSON = {"phase": phase}
    if started is not None and node is not None:
        status["startTime"] = ts(started)
    if unschedulable_since is not None:
        status["conditions"] = [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "lastTransitionTime": ts(unschedulable_since),
            }
        ]
    spec: JSON = {
        "priority": priority,
        "priorityClassName": "some-class",
        "containers": [{"name": "jax", "resources": {"limits": {k.TPU_RESOURCE: "4"}}}],
    }
    if node is not None:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def job_obj(name: str, jobset: str, *, namespace: str = "default", jobset_uid: str | None = None) -> JSON:
    """A child Job as the JobSet controller creates it: named ``<jobset>-<replicatedJob>-<index>``,
    labelled with the JobSet's name, and with the JobSet as its controller owner (JobSet v0.12.0
    ``pkg/controllers/jobset_controller.go``, ``constructJob`` and ``ctrl.SetControllerReference``)."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-job-{name}",
            "creationTimestamp": ts(0),
            "labels": {k.JOBSET_NAME_LABEL: jobset},
            "ownerReferences": [
                {
                    "apiVersion": "jobset.x-k8s.io/v1alpha2",
                    "kind": "JobSet",
                    "name": jobset,
                    "uid": jobset_uid if jobset_uid is not None else f"uid-js-{jobset}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {"parallelism": 4, "completions": 4, "template": {"spec": {"containers": []}}},
    }


def job_for_pod(pod: JSON) -> JSON | None:
    """The Job a pod made by :func:`pod_obj` names as its controller, as its JobSet created it; None
    for a pod with no controlling Job."""
    meta = pod["metadata"]
    refs = [r for r in meta.get("ownerReferences") or () if r.get("controller") and r.get("kind") == "Job"]
    labels = meta.get("labels") or {}
    if not refs or k.JOBSET_NAME_LABEL not in labels:
        return None
    job = job_obj(
        refs[0]["name"],
        labels[k.JOBSET_NAME_LABEL],
        namespace=meta.get("namespace", "default"),
        jobset_uid=labels.get(k.JOBSET_UID_LABEL),
    )
    job["metadata"]["uid"] = refs[0]["uid"]
    return job


def jobset_obj(
    name: str,
    *,
    namespace: str = "default",
    replicas: int = 1,
    managed: bool = True,
    topology: str = "4x4",
    ignore_disruptions: bool = False,
    annotations: dict[str, str] | None = None,
    status: JSON | None = None,
) -> JSON:
    ann = {k.EXCLUSIVE_TOPOLOGY_ANNOTATION: k.NODEPOOL_LABEL, **(annotations or {})}
    labels = {k.OPT_IN_LABEL: k.OPT_IN_VALUE} if managed else {}
    job_spec: JSON = {
        "backoffLimit": 0,
        "completions": 4,
        "parallelism": 4,
        "template": {
            "spec": {
                "nodeSelector": {k.TPU_ACCELERATOR_LABEL: "tpu-v6e-slice", k.TPU_TOPOLOGY_LABEL: topology},
                "priorityClassName": "high-priority-job",
                "containers": [{"name": "jax", "resources": {"limits": {k.TPU_RESOURCE: 4}}}],
            }
        },
    }
    policy: JSON = {"maxRestarts": 10, "restartStrategy": "BlockingRecreate"}
    if ignore_disruptions:
        job_spec["podFailurePolicy"] = {
            "rules": [{"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget"}]}]
        }
        policy["rules"] = [
            {
                "name": "disruptions",
                "action": "RestartJobSetAndIgnoreMaxRestarts",
                "onJobFailureReasons": ["PodFailurePolicy"],
            }
        ]
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-js-{name}",
            "creationTimestamp": ts(0),
            "labels": labels,
            "annotations": ann,
        },
        "spec": {
            "failurePolicy": policy,
            "replicatedJobs": [{"name": "slice", "replicas": replicas, "template": {"spec": job_spec}}],
        },
        "status": status or {"restarts": 0},
    }


def pdb_obj(name: str, match_labels: dict[str, str], *, namespace: str = "default", allowed: int = 0) -> JSON:
    """A policy/v1 PodDisruptionBudget with its status as the disruption controller would set it."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": match_labels}, "maxUnavailable": allowed},
        "status": {
            "disruptionsAllowed": allowed,
            "currentHealthy": 1,
            "desiredHealthy": 1,
            "expectedPods": 1,
        },
    }


def lease_obj(name: str, namespace: str, holder: str, renewed: float, *, duration: int = 15) -> JSON:
    """A leader-election Lease held by ``holder``, renewed at ``renewed`` (epoch seconds)."""
    from datetime import UTC, datetime

    stamp = datetime.fromtimestamp(renewed, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": duration,
            "acquireTime": stamp,
            "renewTime": stamp,
            "leaseTransitions": 0,
        },
    }


def event_obj(
    regarding: JSON, reason: str, note: str, *, namespace: str = "default", type_: str = "Normal"
) -> JSON:
    """An events.k8s.io/v1 Event about ``regarding`` (an object reference)."""
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"generateName": f"{regarding.get('name', 'x')}-", "namespace": namespace},
        "eventTime": "2030-01-01T00:00:00.000000Z",
        "reportingController": "test",
        "reportingInstance": "test",
        "action": reason,
        "reason": reason,
        "note": note,
        "type": type_,
        "regarding": regarding,
    }


def resource_flavor_obj(name: str, node_labels: dict[str, str]) -> JSON:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": {"nodeLabels": node_labels},
    }


def cluster_queue_obj(name: str, flavor: str, chips: int, *, cohort: str = "") -> JSON:
    spec: JSON = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": [k.TPU_RESOURCE],
                "flavors": [{"name": flavor, "resources": [{"name": k.TPU_RESOURCE, "nominalQuota": chips}]}],
            }
        ],
    }
    if cohort:
        spec["cohortName"] = cohort
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": spec,
    }


def local_queue_obj(name: str, cluster_queue: str, *, namespace: str = "default") -> JSON:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cluster_queue},
    }


def workload_obj(
    name: str, queue: str, *, namespace: str = "default", chips: int = 16, admitted: bool = False
) -> JSON:
    """A Kueue Workload with one pod set; ``admitted`` adds the Admitted condition."""
    status: JSON = {}
    if admitted:
        status["conditions"] = [
            {
                "type": "Admitted",
                "status": "True",
                "reason": "Admitted",
                "message": "",
                "lastTransitionTime": ts(0),
            }
        ]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "queueName": queue,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "c", "resources": {"requests": {k.TPU_RESOURCE: str(chips)}}}
                            ]
                        }
                    },
                }
            ],
        },
        "status": status,
    }
