"""A recording fake of :class:`tpu_platform.hotswap.adapter.client.KubeApi` and builders of raw API objects.

The fake sits at the adapter's interface, above the transport: the real transport
(:mod:`tpu_platform.hotswap.adapter.kube`) turns every failure into ``ApiError``, so raising only
``ApiError`` (status 0 for transport faults) here is what the adapter sees; the protocol itself is
tested against the HTTP API double in :mod:`tests.kubeapi`. The fake keeps objects as dicts,
applies JSON Patches and merge patches for real, filters lists by label selector, enforces UID
preconditions (409) on evictions and deletions, ends an exhausted watch with a bookmark as the API
server does at a watch timeout, and records every call with its exact arguments.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from tests.kubeapi.objects import job_for_pod
from tests.kubeapi.selectors import label_matcher
from tpu_platform.hotswap.adapter.client import JSON, ApiError, Resource


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
        self.objects: dict[str, dict[str, JSON]] = {
            "nodes": {},
            "pods": {},
            "jobsets": {},
            "jobs": {},
            "leases": {},
        }
        """Listable collections; ``leases`` are the kubelets' node Leases (namespaced)."""
        self.leases: dict[tuple[str, str], JSON] = {}
        self.calls: list[tuple[Any, ...]] = []
        self.watch_streams: dict[str, list[list[JSON | ApiError]]] = {
            "nodes": [],
            "pods": [],
            "jobsets": [],
            "jobs": [],
            "leases": [],
        }
        self.fail: dict[str, list[ApiError]] = {}
        """Method name -> errors to raise on its next calls."""
        self.rv = 100

    # --- helpers -----------------------------------------------------------------------------------
    def add(self, resource: str, obj: JSON, *, with_job: bool = True) -> None:
        """Store ``obj``; a pod with a controlling Job gets that Job too, as its JobSet created it,
        unless ``with_job`` is False (a pod whose Job does not exist)."""
        if resource == "pods" and with_job:
            job = job_for_pod(obj)
            if (
                job is not None
                and f"{job['metadata']['namespace']}/{job['metadata']['name']}" not in self.objects["jobs"]
            ):
                self.add("jobs", job)
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
        match = label_matcher(resource.label_selector)
        items = [
            copy.deepcopy(o)
            for o in self.objects[resource.name].values()
            if (not resource.namespace or o["metadata"].get("namespace") == resource.namespace)
            and match(o["metadata"].get("labels") or {})
        ]
        return items, str(self.rv)

    def watch_objects(
        self, resource: Resource, resource_version: str, timeout_seconds: int
    ) -> Iterator[JSON]:
        self.calls.append(("watch", resource.name, resource_version, timeout_seconds, *_scope(resource)))
        streams = self.watch_streams[resource.name]
        bookmark: JSON = {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": str(self.rv)}}}
        events = streams.pop(0) if streams else [bookmark]
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
        wanted = ((body.get("deleteOptions") or {}).get("preconditions") or {}).get("uid")
        if wanted and wanted != pod["metadata"].get("uid"):
            raise ApiError(409, "Conflict", "Precondition failed: UID in precondition")
        pod["metadata"].setdefault("deletionTimestamp", "2030-01-01T00:00:00Z")

    def delete_pod(self, namespace: str, name: str, *, grace_period_seconds: int, uid: str) -> None:
        self.calls.append(("delete_pod", namespace, name, grace_period_seconds, uid))
        self._maybe_fail("delete_pod")
        pod = self.objects["pods"].get(f"{namespace}/{name}")
        if pod is None:
            raise ApiError(404, "NotFound")
        if uid and uid != pod["metadata"].get("uid"):
            raise ApiError(409, "Conflict", "Precondition failed: UID in precondition")
        del self.objects["pods"][f"{namespace}/{name}"]

    def create_event(self, namespace: str, body: JSON) -> None:
        self.calls.append(("create_event", namespace, copy.deepcopy(body)))
        self._maybe_fail("create_event")

    def get_lease(self, namespace: str, name: str, *, timeout: float | None = None) -> JSON | None:
        self.calls.append(("get_lease", namespace, name))
        self._maybe_fail("get_lease")
        lease = self.leases.get((namespace, name))
        return copy.deepcopy(lease) if lease is not None else None

    def create_lease(self, namespace: str, body: JSON, *, timeout: float | None = None) -> JSON:
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

    def replace_lease(self, namespace: str, name: str, body: JSON, *, timeout: float | None = None) -> JSON:
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


# --- raw objects: one home, shared with the API double ------------------------------------------
from tests.kubeapi.objects import jobset_obj, node_lease_obj, node_obj, pod_obj, ts  # noqa: E402

__all__ = ["FakeApi", "jobset_obj", "json_patch", "node_lease_obj", "node_obj", "pod_obj", "ts"]
