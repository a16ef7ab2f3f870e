"""Reading the cluster for ``tpu-platform status``: GET and LIST only, with the official client.

The ``kubernetes`` client (37.0.2, the ``controller`` extra) supplies configuration, TLS and token
refresh; bodies are read as raw JSON, as the hotswap adapter reads them, so what the model sees is
what the API server sent. A collection the cluster does not serve (Kueue or JobSet not installed:
404) or the caller may not read (403) becomes a note instead of an error, so the rest still shows.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..hotswap.core import constants as k
from ..kueue.entitlements import POLICY_NAME
from .model import ClusterObjects

JSON = dict[str, Any]
PAGE = 500
TIMEOUT = (5.0, 30.0)
VISIBILITY = "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/{name}/pendingworkloads"
"""Kueue 0.19.2 serves v1beta2 (preferred) and v1beta1 (``pkg/visibility/server.go``)."""
MULTIKUEUE_CLUSTERS = "/apis/kueue.x-k8s.io/v1beta2/multikueueclusters"
ENTITLEMENT_POLICY = f"/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/{POLICY_NAME}"
VISIBILITY_LIMIT = 1000
"""``constants.DefaultPendingWorkloadsLimit`` of kueue v0.19.2."""


class ReadError(Exception):
    """A request that failed: its HTTP status (0 without a reply) and the server's reason."""

    def __init__(self, status: int, reason: str, path: str) -> None:
        super().__init__(f"GET {path}: {status or 'no reply'} {reason}".rstrip())
        self.status = status
        self.reason = reason


Get = Callable[[str, list[tuple[str, str]]], JSON]
"""``get(path, query)`` -> the decoded JSON body, or :class:`ReadError`."""


def client_getter(kubeconfig: str | None, context: str | None) -> Get:
    """A ``get`` on the official client: explicit kubeconfig/context, else in-cluster, else default."""
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    cfg = client.Configuration()
    if kubeconfig or context:
        config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=cfg)
    else:
        try:
            config.load_incluster_config(client_configuration=cfg)
        except ConfigException:
            config.load_kube_config(client_configuration=cfg)
    cfg.retries = False
    api = client.ApiClient(cfg)
    api.user_agent = "tpu-platform-status"

    def get(path: str, query: list[tuple[str, str]]) -> JSON:
        try:
            method, url, headers, body, post = api.param_serialize(
                method="GET",
                resource_path=path,
                query_params=query,
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
            )
            resp = api.call_api(
                method, url, header_params=headers, body=body, post_params=post, _request_timeout=TIMEOUT
            )
            raw = resp.response.data
            status = int(resp.status)
        except client.ApiException as err:
            raise ReadError(int(err.status or 0), str(err.reason or ""), path) from err
        except Exception as err:  # urllib3 and socket failures: no usable reply
            raise ReadError(0, f"{type(err).__name__}: {err}", path) from err
        if not 200 <= status < 300:
            reason = str(resp.reason or "")
            with contextlib.suppress(ValueError, AttributeError):
                reason = str(json.loads(raw).get("message") or reason)
            raise ReadError(status, reason, path)
        try:
            doc = json.loads(raw)
        except ValueError as err:
            raise ReadError(status, "reply is not JSON", path) from err
        if not isinstance(doc, dict):
            raise ReadError(status, "reply is not a JSON object", path)
        return doc

    return get


def list_all(get: Get, path: str, label_selector: str = "") -> list[JSON]:
    """Every item of a collection, page by page (``limit`` and ``continue``)."""
    items: list[JSON] = []
    token = ""
    while True:
        query = [("limit", str(PAGE))]
        if label_selector:
            query.append(("labelSelector", label_selector))
        if token:
            query.append(("continue", token))
        page = get(path, query)
        got = page.get("items")
        if not isinstance(got, list):
            raise ReadError(200, "list reply has no items", path)
        items.extend(got)
        token = str((page.get("metadata") or {}).get("continue") or "")
        if not token:
            return items


@dataclass
class Reader:
    """Reads what :func:`tpu_platform.status.model.build_status` needs; failures become notes."""

    get: Get
    notes: list[str] = field(default_factory=list)

    def collection(self, what: str, path: str, label_selector: str = "") -> list[JSON]:
        try:
            return list_all(self.get, path, label_selector)
        except ReadError as err:
            if err.status in (401, 403, 404):
                hint = {404: "not served by this cluster", 403: "forbidden", 401: "unauthorized"}[err.status]
                self.notes.append(f"{what}: {hint} ({err})")
                return []
            raise

    def pending(self, cluster_queues: list[JSON]) -> dict[str, list[JSON]]:
        """The visibility API's pending workloads per ClusterQueue; queues it cannot answer are left out."""
        out: dict[str, list[JSON]] = {}
        for cq in cluster_queues:
            name = str((cq.get("metadata") or {}).get("name", ""))
            path = VISIBILITY.format(name=name)
            try:
                summary = self.get(path, [("limit", str(VISIBILITY_LIMIT))])
            except ReadError as err:
                self.notes.append(
                    f"pending workloads of {name}: visibility API unavailable ({err}); from Workload objects"
                )
                continue
            items = summary.get("items")
            out[name] = items if isinstance(items, list) else []
        return out

    def optional(self, path: str) -> list[JSON]:
        """A collection only some clusters serve, where its absence is no news: MultiKueueClusters
        exist on a fleet's manager (Kueue serves the CRD everywhere; a 404 means no Kueue)."""
        try:
            return list_all(self.get, path)
        except ReadError as err:
            if err.status in (403, 404):
                return []
            raise

    def optional_object(self, path: str) -> JSON | None:
        """One object whose absence is an answer (a stack that grants every priority to all has
        no entitlement policy); a refused read is a note."""
        try:
            return self.get(path, [])
        except ReadError as err:
            if err.status == 404:
                return None
            if err.status == 403:
                self.notes.append(f"{path}: {err}")
                return None
            raise

    def lease(self, namespace: str, name: str) -> JSON | None:
        try:
            return self.get(f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}", [])
        except ReadError as err:
            if err.status in (403, 404):
                self.notes.append(f"controller lease {namespace}/{name}: {err}")
                return None
            raise


def read_cluster(get: Get, *, lease_namespace: str, lease_name: str) -> ClusterObjects:
    """One consistent-enough read of everything the status shows (each list is its own snapshot)."""
    r = Reader(get)
    nodes = r.collection("nodes", "/api/v1/nodes", k.TPU_TOPOLOGY_LABEL)
    pods = r.collection("pods", "/api/v1/pods", k.JOBSET_NAME_LABEL)
    jobsets = r.collection(
        "jobsets", "/apis/jobset.x-k8s.io/v1alpha2/jobsets", f"{k.OPT_IN_LABEL}={k.OPT_IN_VALUE}"
    )
    cqs = r.collection("clusterqueues", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues")
    lqs = r.collection("localqueues", "/apis/kueue.x-k8s.io/v1beta2/localqueues")
    workloads = r.collection("workloads", "/apis/kueue.x-k8s.io/v1beta2/workloads")
    visible = r.pending(cqs)
    lease = r.lease(lease_namespace, lease_name)
    events = r.collection("events", "/apis/events.k8s.io/v1/events")
    workers = r.optional(MULTIKUEUE_CLUSTERS)
    entitlement = r.optional_object(ENTITLEMENT_POLICY)
    return ClusterObjects(
        nodes=nodes,
        pods=pods,
        jobsets=jobsets,
        cluster_queues=cqs,
        local_queues=lqs,
        workloads=workloads,
        visible_pending=visible,
        lease=lease,
        lease_ref=f"{lease_namespace}/{lease_name}",
        events=events,
        notes=r.notes,
        multikueue_clusters=workers,
        entitlement_policy=entitlement,
    )
