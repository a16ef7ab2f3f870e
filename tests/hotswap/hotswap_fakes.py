"""A recording fake of :class:`tpu_platform.hotswap.adapter.api.KubeApi` and builders of raw API objects.

The fake keeps objects as dicts, applies JSON Patches and merge patches for real (so a test sees what
the cluster would hold afterwards), and records every call with its exact arguments.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from tpu_platform.hotswap.adapter.api import JSON, ApiError, Resource
from tpu_platform.hotswap.core import constants as k


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def json_patch(doc: JSON, ops: list[JSON]) -> JSON:
    """Minimal RFC 6902 (test/add/remove on objects and arrays); raises ApiError(422) on failure."""
    out = copy.deepcopy(doc)
    for op in ops:
        *parents, last = [_unescape(t) for t in op["path"].split("/")[1:]]
        target: Any = out
        for token in parents:
            target = target[int(token)] if isinstance(target, list) else target.get(token)
            if target is None:
                raise ApiError(422, f"path {op['path']} not found")
        if op["op"] == "test":
            current = target[int(last)] if isinstance(target, list) else target.get(last)
            if current != op["value"]:
                raise ApiError(422, f"test failed at {op['path']}")
        elif op["op"] == "add":
            if isinstance(target, list):
                if last == "-":
                    target.append(copy.deepcopy(op["value"]))
                else:
                    target.insert(int(last), copy.deepcopy(op["value"]))
            else:
                target[last] = copy.deepcopy(op["value"])
        elif op["op"] == "remove":
            if isinstance(target, list):
                del target[int(last)]
            elif last in target:
                del target[last]
            else:
                raise ApiError(422, f"remove: {op['path']} not found")
        else:
            raise ApiError(422, f"unsupported op {op['op']}")
    return out


def _scope(resource: Resource) -> tuple[str, ...]:
    """A namespaced list or watch is recorded with its namespace; cluster-wide ones without."""
    return (resource.namespace,) if resource.namespace else ()


class FakeApi:
    def __init__(self) -> None:
        self.objects: dict[str, dict[str, JSON]] = {"nodes": {}, "pods": {}, "jobsets": {}, "leases": {}}
        """Listable collections; ``leases`` are the kubelets' node Leases (namespaced)."""
        self.leases: dict[tuple[str, str], JSON] = {}
        self.calls: list[tuple[Any, ...]] = []
        self.watch_streams: dict[str, list[list[JSON | ApiError]]] = {
            "nodes": [],
            "pods": [],
            "jobsets": [],
            "leases": [],
        }
        self.fail: dict[str, list[ApiError]] = {}
        """Method name -> errors to raise on its next calls."""
        self.rv = 100

    # --- helpers -----------------------------------------------------------------------------------
    def add(self, resource: str, obj: JSON) -> None:
        meta = obj["metadata"]
        key = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
        self.rv += 1
        meta["resourceVersion"] = str(self.rv)
        self.objects[resource][key] = obj

    def writes(self) -> list[tuple[Any, ...]]:
        return [c for c in self.calls if c[0] not in ("list", "watch", "get_lease")]

    def _maybe_fail(self, method: str) -> None:
        errors = self.fail.get(method)
        if errors:
            raise errors.pop(0)

    # --- KubeApi -----------------------------------------------------------------------------------
    def list_objects(self, resource: Resource) -> tuple[list[JSON], str]:
        self.calls.append(("list", resource.name, resource.label_selector, *_scope(resource)))
        self._maybe_fail("list_objects")
        items = [
            copy.deepcopy(o)
            for o in self.objects[resource.name].values()
            if not resource.namespace or o["metadata"].get("namespace") == resource.namespace
        ]
        return items, str(self.rv)

    def watch_objects(
        self, resource: Resource, resource_version: str, timeout_seconds: int
    ) -> Iterator[JSON]:
        self.calls.append(("watch", resource.name, resource_version, timeout_seconds, *_scope(resource)))
        streams = self.watch_streams[resource.name]
        events = streams.pop(0) if streams else []
        for ev in events:
            if isinstance(ev, ApiError):
                raise ev
            yield ev

    def patch_node(self, name: str, patch: list[JSON]) -> None:
        self.calls.append(("patch_node", name, copy.deepcopy(patch)))
        self._maybe_fail("patch_node")
        node = self.objects["nodes"].get(name)
        if node is None:
            raise ApiError(404, "NotFound")
        self.objects["nodes"][name] = json_patch(node, patch)
        self.rv += 1
        self.objects["nodes"][name]["metadata"]["resourceVersion"] = str(self.rv)

    def patch_jobset(self, namespace: str, name: str, patch: JSON) -> None:
        self.calls.append(("patch_jobset", namespace, name, copy.deepcopy(patch)))
        self._maybe_fail("patch_jobset")
        js = self.objects["jobsets"].get(f"{namespace}/{name}")
        if js is None:
            raise ApiError(404, "NotFound")
        if patch["metadata"].get("uid") not in (None, js["metadata"]["uid"]):
            raise ApiError(409, "Conflict")
        js["metadata"].setdefault("annotations", {}).update(patch["metadata"].get("annotations", {}))

    def evict_pod(self, namespace: str, name: str, body: JSON) -> None:
        self.calls.append(("evict_pod", namespace, name, copy.deepcopy(body)))
        self._maybe_fail("evict_pod")
        pod = self.objects["pods"].get(f"{namespace}/{name}")
        if pod is None:
            raise ApiError(404, "NotFound")
        pod["metadata"].setdefault("deletionTimestamp", "2030-01-01T00:00:00Z")

    def delete_pod(self, namespace: str, name: str, *, grace_period_seconds: int, uid: str) -> None:
        self.calls.append(("delete_pod", namespace, name, grace_period_seconds, uid))
        self._maybe_fail("delete_pod")
        if self.objects["pods"].pop(f"{namespace}/{name}", None) is None:
            raise ApiError(404, "NotFound")

    def create_event(self, namespace: str, body: JSON) -> None:
        self.calls.append(("create_event", namespace, copy.deepcopy(body)))
        self._maybe_fail("create_event")

    def get_lease(self, namespace: str, name: str) -> JSON | None:
        self.calls.append(("get_lease", namespace, name))
        self._maybe_fail("get_lease")
        lease = self.leases.get((namespace, name))
        return copy.deepcopy(lease) if lease is not None else None

    def create_lease(self, namespace: str, body: JSON) -> JSON:
        self.calls.append(("create_lease", namespace, copy.deepcopy(body)))
        self._maybe_fail("create_lease")
        key = (namespace, body["metadata"]["name"])
        if key in self.leases:
            raise ApiError(409, "AlreadyExists")
        self.rv += 1
        stored = copy.deepcopy(body)
        stored["metadata"]["resourceVersion"] = str(self.rv)
        self.leases[key] = stored
        return copy.deepcopy(stored)

    def replace_lease(self, namespace: str, name: str, body: JSON) -> JSON:
        self.calls.append(("replace_lease", namespace, name, copy.deepcopy(body)))
        self._maybe_fail("replace_lease")
        current = self.leases.get((namespace, name))
        if current is None:
            raise ApiError(404, "NotFound")
        if body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict")
        self.rv += 1
        stored = copy.deepcopy(body)
        stored["metadata"]["resourceVersion"] = str(self.rv)
        self.leases[(namespace, name)] = stored
        return copy.deepcopy(stored)


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
