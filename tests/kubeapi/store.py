"""The object store behind the API double: resourceVersions, UIDs, preconditions, patches, watch log.

Semantics follow the API server (kubernetes/kubernetes, staging/src/k8s.io/apiserver):

- One cluster-wide, strictly increasing resourceVersion; every write bumps it and is logged for
  watches. The log keeps ``history`` entries; a watch from an older version gets 410 Expired ("too
  old resource version"), one from a version the store has not reached gets 504 with the
  ``ResourceVersionTooLarge`` cause (``storage/errors.go`` ``NewTooLargeResourceVersionError``).
- ``PUT`` with a resourceVersion that is not current is 409 Conflict; create of an existing name is
  409 AlreadyExists; ``generateName`` gets a random suffix.
- A JSON Patch (RFC 6902) whose ``test`` fails, or which addresses a missing path, is 422
  (``endpoints/handlers/patch.go``). A patch that changes ``metadata.uid`` is 409 Conflict
  ("Precondition failed: UID in precondition", ``registry/rest/update.go``).
- DELETE honours ``preconditions.uid`` and ``preconditions.resourceVersion`` (409 on mismatch). Pods
  are deleted gracefully (``deletionTimestamp`` set) unless ``gracePeriodSeconds`` is 0.
- Eviction (``pkg/registry/core/pod/storage/eviction.go``): 404 for a missing pod, 409 on a UID
  precondition mismatch, success without a PDB check for a pod that is terminating, Pending or
  finished; otherwise the one matching PodDisruptionBudget must allow a disruption (else 429
  TooManyRequests, cause ``DisruptionBudget``; several matching PDBs is a 500), which it then
  spends. The evicted pod gets the ``DisruptionTarget`` condition and is deleted gracefully.
- Node taints must be unique per (key, effect) (``pkg/apis/core/validation``): 422 otherwise.
"""

from __future__ import annotations

import copy
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tests.kubeapi.selectors import field_matcher, label_matcher
from tpu_platform.schema.metadata import dns1123_subdomain, mask_trailing_dash

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Kind:
    group: str
    versions: tuple[str, ...]
    plural: str
    kind: str
    namespaced: bool

    def api_version(self, version: str | None = None) -> str:
        v = version or self.versions[0]
        return f"{self.group}/{v}" if self.group else v


KINDS: tuple[Kind, ...] = (
    Kind("", ("v1",), "nodes", "Node", False),
    Kind("", ("v1",), "pods", "Pod", True),
    Kind("", ("v1",), "namespaces", "Namespace", False),
    Kind("", ("v1",), "events", "Event", True),
    Kind("events.k8s.io", ("v1",), "events", "Event", True),
    Kind("coordination.k8s.io", ("v1",), "leases", "Lease", True),
    Kind("policy", ("v1",), "poddisruptionbudgets", "PodDisruptionBudget", True),
    Kind("scheduling.k8s.io", ("v1",), "priorityclasses", "PriorityClass", False),
    Kind("batch", ("v1",), "jobs", "Job", True),
    Kind("jobset.x-k8s.io", ("v1alpha2",), "jobsets", "JobSet", True),
    Kind("kueue.x-k8s.io", ("v1beta2", "v1beta1"), "workloads", "Workload", True),
    Kind("kueue.x-k8s.io", ("v1beta2", "v1beta1"), "localqueues", "LocalQueue", True),
    Kind("kueue.x-k8s.io", ("v1beta2", "v1beta1"), "clusterqueues", "ClusterQueue", False),
    Kind("kueue.x-k8s.io", ("v1beta2", "v1beta1"), "resourceflavors", "ResourceFlavor", False),
    Kind("kueue.x-k8s.io", ("v1beta2", "v1beta1"), "workloadpriorityclasses", "WorkloadPriorityClass", False),
    # kueue.x-k8s.io_multikueueclusters.yaml (v0.19.2): cluster-scoped, v1beta1 and v1beta2 served.
    Kind("kueue.x-k8s.io", ("v1beta2", "v1beta1"), "multikueueclusters", "MultiKueueCluster", False),
    Kind(
        "admissionregistration.k8s.io",
        ("v1",),
        "validatingadmissionpolicies",
        "ValidatingAdmissionPolicy",
        False,
    ),
)
_BY_PATH = {(k.group, k.plural): k for k in KINDS}


def kind_for(group: str, plural: str) -> Kind:
    kind = _BY_PATH.get((group, plural))
    if kind is None:
        raise ApiStatus(404, "NotFound", f"the server could not find the requested resource ({plural})")
    return kind


def kind_named(plural: str) -> Kind:
    """The kind for a plural (the core ``events`` resolve to events.k8s.io)."""
    if plural == "events":
        return _BY_PATH[("events.k8s.io", "events")]
    for k in KINDS:
        if k.plural == plural:
            return k
    raise KeyError(plural)


class ApiStatus(Exception):
    """A metav1.Status reply."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        causes: list[JSON] | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(f"{code} {reason}: {message}")
        self.code = code
        self.reason = reason
        self.message = message
        self.causes = causes or []
        self.retry_after = retry_after

    def body(self) -> JSON:
        status: JSON = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        details: JSON = {}
        if self.causes:
            details["causes"] = self.causes
        if self.retry_after is not None:
            details["retryAfterSeconds"] = self.retry_after
        if details:
            status["details"] = details
        return status


def rfc3339(t: float, *, micro: bool = False) -> str:
    fmt = "%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ"
    return datetime.fromtimestamp(t, tz=UTC).strftime(fmt)


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _invalid(message: str) -> ApiStatus:
    return ApiStatus(422, "Invalid", message)


def apply_json_patch(doc: JSON, ops: Any) -> JSON:
    """RFC 6902 add/remove/replace/test/move/copy; any failure is a 422 as on the API server."""
    if not isinstance(ops, list):
        raise ApiStatus(400, "BadRequest", "json patch must be a list of operations")
    out = copy.deepcopy(doc)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise ApiStatus(400, "BadRequest", f"invalid json patch operation: {op!r}")
        out = _apply_op(out, op)
    return out


def _resolve(doc: Any, path: str) -> tuple[Any, str]:
    if path == "":
        raise _invalid("json patch on the document root is not supported")
    if not path.startswith("/"):
        raise _invalid(f"invalid json pointer {path!r}")
    *parents, last = [_unescape(t) for t in path.split("/")[1:]]
    target = doc
    for token in parents:
        if isinstance(target, list):
            if not token.isdigit() or int(token) >= len(target):
                raise _invalid(f"doc is missing path: {path!r}")
            target = target[int(token)]
        elif isinstance(target, dict):
            if token not in target:
                raise _invalid(f"doc is missing path: {path!r}")
            target = target[token]
        else:
            raise _invalid(f"doc is missing path: {path!r}")
    return target, last


def _read(doc: Any, path: str) -> Any:
    target, last = _resolve(doc, path)
    if isinstance(target, list):
        if not last.isdigit() or int(last) >= len(target):
            raise _invalid(f"doc is missing path: {path!r}")
        return target[int(last)]
    if not isinstance(target, dict) or last not in target:
        raise _invalid(f"doc is missing path: {path!r}")
    return target[last]


def _apply_op(doc: JSON, op: JSON) -> JSON:
    kind, path = op["op"], op["path"]
    if kind == "test":
        if _read(doc, path) != op.get("value"):
            raise _invalid(f"testing value {path} failed: test operation failed")
        return doc
    if kind in ("move", "copy"):
        value = copy.deepcopy(_read(doc, op.get("from", "")))
        if kind == "move":
            doc = _apply_op(doc, {"op": "remove", "path": op["from"]})
        return _apply_op(doc, {"op": "add", "path": path, "value": value})
    target, last = _resolve(doc, path)
    if kind == "add":
        if "value" not in op:
            raise ApiStatus(400, "BadRequest", "add operation has no value")
        if isinstance(target, list):
            if last == "-":
                target.append(copy.deepcopy(op["value"]))
            elif last.isdigit() and int(last) <= len(target):
                target.insert(int(last), copy.deepcopy(op["value"]))
            else:
                raise _invalid(f"add operation index out of bounds: {path!r}")
        elif isinstance(target, dict):
            target[last] = copy.deepcopy(op["value"])
        else:
            raise _invalid(f"doc is missing path: {path!r}")
    elif kind in ("remove", "replace"):
        _read(doc, path)
        if isinstance(target, list):
            if kind == "remove":
                del target[int(last)]
            else:
                target[int(last)] = copy.deepcopy(op["value"])
        elif kind == "remove":
            del target[last]
        else:
            target[last] = copy.deepcopy(op["value"])
    else:
        raise ApiStatus(400, "BadRequest", f"unexpected json patch operation {kind!r}")
    return doc


def merge_patch(doc: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(doc) if isinstance(doc, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


@dataclass(slots=True)
class Change:
    rv: int
    kind: Kind
    type: str
    old: JSON | None
    new: JSON


def _meta(obj: JSON) -> JSON:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        raise _invalid("metadata: Required value")
    return meta


def _validate(kind: Kind, obj: JSON) -> None:
    meta = _meta(obj)
    for field_name in ("labels", "annotations"):
        values = meta.get(field_name) or {}
        if not isinstance(values, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in values.items()
        ):
            raise _invalid(f"metadata.{field_name}: Invalid value: values must be strings")
    if kind.plural == "nodes":
        seen = set()
        for taint in (obj.get("spec") or {}).get("taints") or []:
            pair = (taint.get("key"), taint.get("effect"))
            if not pair[0] or pair[1] not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
                raise _invalid(f"spec.taints: Invalid value: {taint!r}")
            if pair in seen:
                raise _invalid(
                    f"spec.taints: Duplicate value: taints must be unique by key and effect {pair}"
                )
            seen.add(pair)
    if kind.plural == "events" and kind.group == "events.k8s.io":
        for required in ("eventTime", "reportingController", "reportingInstance", "action", "reason"):
            if not obj.get(required):
                raise _invalid(f"{required}: Required value")
        if obj.get("type") not in ("Normal", "Warning"):
            raise _invalid(f"type: Unsupported value: {obj.get('type')!r}")
        if len(obj.get("note") or "") > 1024:
            raise _invalid("note: Too long: must have at most 1024 bytes")
        if not isinstance(obj.get("regarding"), dict):
            raise _invalid("regarding: Required value")


class Store:
    """Thread-safe objects of every kind, one resourceVersion sequence, and a bounded change log."""

    def __init__(self, *, history: int = 10_000, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.history = history
        self.rv = 1000
        self.objects: dict[tuple[str, str, str, str], JSON] = {}
        self.log: list[Change] = []
        self.compacted = self.rv
        """Watches must start at or after this version (older: 410)."""
        self.cond = threading.Condition(threading.RLock())

    # --- helpers -----------------------------------------------------------------------------------
    @staticmethod
    def _key(kind: Kind, namespace: str, name: str) -> tuple[str, str, str, str]:
        return (kind.group, kind.plural, namespace if kind.namespaced else "", name)

    def _record(self, kind: Kind, type_: str, old: JSON | None, new: JSON) -> None:
        self.log.append(Change(self.rv, kind, type_, copy.deepcopy(old), copy.deepcopy(new)))
        if len(self.log) > self.history:
            drop = len(self.log) - self.history
            self.compacted = self.log[drop - 1].rv
            del self.log[:drop]
        self.cond.notify_all()

    def _bump(self, obj: JSON) -> None:
        self.rv += 1
        _meta(obj)["resourceVersion"] = str(self.rv)

    def compact(self) -> None:
        """Forget the whole change log (as etcd compaction does): older watches get 410."""
        with self.cond:
            self.log.clear()
            self.compacted = self.rv

    # --- reads -------------------------------------------------------------------------------------
    def get(self, kind: Kind, namespace: str, name: str) -> JSON:
        with self.cond:
            obj = self.objects.get(self._key(kind, namespace, name))
            if obj is None:
                raise ApiStatus(404, "NotFound", f'{kind.plural} "{name}" not found')
            return copy.deepcopy(obj)

    def list_items(
        self,
        kind: Kind,
        namespace: str = "",
        *,
        label_selector: str = "",
        field_selector: str = "",
        resource_version: str = "",
    ) -> tuple[list[JSON], str]:
        labels = label_matcher(label_selector)
        fields = field_matcher(kind.plural, field_selector)
        with self.cond:
            if resource_version and resource_version != "0" and int(resource_version) > self.rv:
                raise too_large(int(resource_version), self.rv)
            items = [
                copy.deepcopy(o)
                for (g, p, ns, _), o in sorted(self.objects.items())
                if (g, p) == (kind.group, kind.plural)
                and (not namespace or ns == namespace)
                and labels(_meta(o).get("labels") or {})
                and fields(o)
            ]
            return items, str(self.rv)

    def changes_since(self, rv: int) -> list[Change]:
        """Changes after ``rv``; 410 if they were compacted away, 504 if ``rv`` is in the future."""
        with self.cond:
            if rv > self.rv:
                raise too_large(rv, self.rv)
            if rv < self.compacted:
                raise ApiStatus(410, "Expired", f"too old resource version: {rv} ({self.compacted})")
            return [c for c in self.log if c.rv > rv]

    # --- writes ------------------------------------------------------------------------------------
    def create(self, kind: Kind, namespace: str, obj: JSON) -> JSON:
        obj = copy.deepcopy(obj)
        meta = _meta(obj)
        if meta.get("resourceVersion"):
            raise _invalid("metadata.resourceVersion: Invalid value: must be empty on create")
        if kind.namespaced:
            if meta.get("namespace") not in (None, "", namespace):
                raise ApiStatus(400, "BadRequest", "the namespace of the object does not match the request")
            meta["namespace"] = namespace
        with self.cond:
            if not meta.get("name"):
                prefix = meta.get("generateName")
                if not prefix:
                    raise _invalid("metadata.name: Required value: name or generateName is required")
                # apimachinery ValidateObjectMeta: a generateName is a DNS-subdomain prefix after
                # maskTrailingDash, so "x." is invalid (kube-apiserver 1.34).
                if dns1123_subdomain(mask_trailing_dash(prefix)) is not None:
                    raise _invalid(
                        f"metadata.generateName: Invalid value: {prefix!r}: not an RFC 1123 subdomain"
                    )
                meta["name"] = f"{prefix}{secrets.token_hex(3)}"
            key = self._key(kind, namespace, meta["name"])
            if key in self.objects:
                raise ApiStatus(409, "AlreadyExists", f'{kind.plural} "{meta["name"]}" already exists')
            _validate(kind, obj)
            obj.setdefault("apiVersion", kind.api_version())
            obj.setdefault("kind", kind.kind)
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", rfc3339(self.clock()))
            meta.setdefault("generation", 1)
            self._bump(obj)
            self.objects[key] = obj
            self._record(kind, "ADDED", None, obj)
            return copy.deepcopy(obj)

    def _store_update(self, kind: Kind, key: tuple[str, str, str, str], old: JSON, new: JSON) -> JSON:
        if _meta(new).get("uid") != _meta(old).get("uid"):
            raise ApiStatus(
                409,
                "Conflict",
                f"Precondition failed: UID in precondition: {_meta(new).get('uid')}, "
                f"UID in object meta: {_meta(old).get('uid')}",
            )
        for immutable in ("name", "namespace", "creationTimestamp"):
            if _meta(new).get(immutable) != _meta(old).get(immutable):
                raise _invalid(f"metadata.{immutable}: Invalid value: field is immutable")
        _validate(kind, new)
        if new.get("spec") != old.get("spec"):
            _meta(new)["generation"] = int(_meta(old).get("generation") or 1) + 1
        if new == old:
            return copy.deepcopy(old)
        self._bump(new)
        self.objects[key] = new
        self._record(kind, "MODIFIED", old, new)
        return copy.deepcopy(new)

    def replace(self, kind: Kind, namespace: str, name: str, obj: JSON) -> JSON:
        obj = copy.deepcopy(obj)
        meta = _meta(obj)
        if meta.get("name") != name:
            raise ApiStatus(400, "BadRequest", "the name of the object does not match the name on the URL")
        with self.cond:
            key = self._key(kind, namespace, name)
            old = self.objects.get(key)
            if old is None:
                raise ApiStatus(404, "NotFound", f'{kind.plural} "{name}" not found')
            rv = meta.get("resourceVersion")
            if rv and rv != _meta(old)["resourceVersion"]:
                raise ApiStatus(
                    409,
                    "Conflict",
                    f'Operation cannot be fulfilled on {kind.plural} "{name}": the object has been '
                    "modified; please apply your changes to the latest version and try again",
                )
            meta.setdefault("uid", _meta(old).get("uid"))
            meta["creationTimestamp"] = _meta(old).get("creationTimestamp")
            if kind.namespaced:
                meta["namespace"] = namespace
            meta["resourceVersion"] = _meta(old)["resourceVersion"]
            obj.setdefault("apiVersion", old.get("apiVersion"))
            obj.setdefault("kind", old.get("kind"))
            return self._store_update(kind, key, old, obj)

    def patch(self, kind: Kind, namespace: str, name: str, content_type: str, patch: Any) -> JSON:
        with self.cond:
            key = self._key(kind, namespace, name)
            old = self.objects.get(key)
            if old is None:
                raise ApiStatus(404, "NotFound", f'{kind.plural} "{name}" not found')
            if content_type == "application/json-patch+json":
                new = apply_json_patch(old, patch)
            elif content_type == "application/merge-patch+json":
                if not isinstance(patch, dict):
                    raise ApiStatus(400, "BadRequest", "merge patch must be an object")
                new = merge_patch(old, patch)
            else:
                raise ApiStatus(
                    415,
                    "UnsupportedMediaType",
                    f"the body of the request was in an unknown format: {content_type}",
                )
            rv = _meta(new).get("resourceVersion")
            if rv != _meta(old)["resourceVersion"]:
                if rv is None:
                    _meta(new)["resourceVersion"] = _meta(old)["resourceVersion"]
                else:
                    raise ApiStatus(
                        409,
                        "Conflict",
                        f'Operation cannot be fulfilled on {kind.plural} "{name}": '
                        "the object has been modified",
                    )
            return self._store_update(kind, key, old, new)

    def delete(self, kind: Kind, namespace: str, name: str, options: JSON | None = None) -> JSON:
        options = options or {}
        with self.cond:
            key = self._key(kind, namespace, name)
            old = self.objects.get(key)
            if old is None:
                raise ApiStatus(404, "NotFound", f'{kind.plural} "{name}" not found')
            pre = options.get("preconditions") or {}
            meta = _meta(old)
            if pre.get("uid") and pre["uid"] != meta.get("uid"):
                raise ApiStatus(
                    409,
                    "Conflict",
                    _uid_failed(pre["uid"], meta.get("uid")),
                )
            if pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion"):
                raise ApiStatus(
                    409,
                    "Conflict",
                    f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
                    f"ResourceVersion in object meta: {meta.get('resourceVersion')}",
                )
            grace = options.get("gracePeriodSeconds")
            if kind.plural == "pods" and grace != 0 and (old.get("spec") or {}).get("nodeName"):
                if meta.get("deletionTimestamp"):
                    return copy.deepcopy(old)
                new = copy.deepcopy(old)
                seconds = int(
                    grace if grace is not None else (old["spec"].get("terminationGracePeriodSeconds") or 30)
                )
                _meta(new)["deletionTimestamp"] = rfc3339(self.clock() + seconds)
                _meta(new)["deletionGracePeriodSeconds"] = seconds
                return self._store_update(kind, key, old, new)
            del self.objects[key]
            gone = copy.deepcopy(old)
            self._bump(gone)
            self._record(kind, "DELETED", old, gone)
            return gone

    def evict(self, namespace: str, name: str, body: Any) -> None:
        pods = kind_named("pods")
        if not isinstance(body, dict) or body.get("kind") != "Eviction":
            raise ApiStatus(400, "BadRequest", "the body must be a policy/v1 Eviction")
        if (body.get("metadata") or {}).get("name") != name:
            raise ApiStatus(400, "BadRequest", "name in URL does not match name in Eviction object")
        options = body.get("deleteOptions") or {}
        with self.cond:
            pod = self.get(pods, namespace, name)
            pre = options.get("preconditions") or {}
            if pre.get("uid") and pre["uid"] != _meta(pod).get("uid"):
                raise ApiStatus(
                    409,
                    "Conflict",
                    _uid_failed(pre["uid"], _meta(pod).get("uid")),
                )
            phase = (pod.get("status") or {}).get("phase")
            if not (_meta(pod).get("deletionTimestamp") or phase in ("Succeeded", "Failed", "Pending")):
                self._spend_budget(pod)
            if not _meta(pod).get("deletionTimestamp"):
                marked = copy.deepcopy(pod)
                conditions = [
                    c
                    for c in (marked.setdefault("status", {}).get("conditions") or [])
                    if c.get("type") != "DisruptionTarget"
                ]
                conditions.append(
                    {
                        "type": "DisruptionTarget",
                        "status": "True",
                        "reason": "EvictionByEvictionAPI",
                        "message": "Eviction API: evicting",
                        "lastTransitionTime": rfc3339(self.clock()),
                    }
                )
                marked["status"]["conditions"] = conditions
                self._store_update(
                    pods,
                    self._key(pods, namespace, name),
                    self.objects[self._key(pods, namespace, name)],
                    marked,
                )
            self.delete(pods, namespace, name, options)

    def _spend_budget(self, pod: JSON) -> None:
        pdbs = kind_named("poddisruptionbudgets")
        labels = _meta(pod).get("labels") or {}
        namespace = _meta(pod)["namespace"]
        matching = []
        for (g, p, ns, _), pdb in self.objects.items():
            if (g, p) != (pdbs.group, pdbs.plural) or ns != namespace:
                continue
            selector = (pdb.get("spec") or {}).get("selector") or {}
            match = selector.get("matchLabels") or {}
            if all(labels.get(k) == v for k, v in match.items()) and match:
                matching.append(pdb)
        if not matching:
            return
        if len(matching) > 1:
            raise ApiStatus(
                500,
                "InternalError",
                "This pod has more than one PodDisruptionBudget, "
                "which the eviction subresource does not support.",
            )
        pdb = matching[0]
        status = pdb.setdefault("status", {})
        allowed = int(status.get("disruptionsAllowed") or 0)
        if allowed <= 0:
            raise ApiStatus(
                429,
                "TooManyRequests",
                "Cannot evict pod as it would violate the pod's disruption budget.",
                causes=[
                    {
                        "reason": "DisruptionBudget",
                        "message": f"The disruption budget {_meta(pdb)['name']} needs "
                        f"{status.get('desiredHealthy', 0)} healthy pods and has "
                        f"{status.get('currentHealthy', 0)} currently",
                    }
                ],
            )
        old = copy.deepcopy(pdb)
        status["disruptionsAllowed"] = allowed - 1
        status.setdefault("disruptedPods", {})[_meta(pod)["name"]] = rfc3339(self.clock())
        self._bump(pdb)
        self._record(pdbs, "MODIFIED", old, pdb)

    # --- what a kubelet would do -------------------------------------------------------------------
    def finish_terminating(self, *, ready_only: bool = True) -> int:
        """Remove pods past graceful deletion whose node is Ready (a dead node's kubelet cannot)."""
        pods, nodes = kind_named("pods"), kind_named("nodes")
        removed = 0
        with self.cond:
            for key, pod in list(self.objects.items()):
                if key[:2] != (pods.group, pods.plural) or not _meta(pod).get("deletionTimestamp"):
                    continue
                node = self.objects.get(self._key(nodes, "", (pod.get("spec") or {}).get("nodeName") or ""))
                if ready_only and node is not None and not node_ready(node):
                    continue
                del self.objects[key]
                gone = copy.deepcopy(pod)
                self._bump(gone)
                self._record(pods, "DELETED", pod, gone)
                removed += 1
        return removed


def _uid_failed(wanted: object, actual: object) -> str:
    return f"Precondition failed: UID in precondition: {wanted}, UID in object meta: {actual}"


def node_ready(node: Mapping[str, Any]) -> bool:
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return bool(c.get("status") == "True")
    return False


def too_large(requested: int, current: int) -> ApiStatus:
    return ApiStatus(
        504,
        "Timeout",
        f"Too large resource version: {requested}, current: {current}",
        causes=[{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
        retry_after=1,
    )
