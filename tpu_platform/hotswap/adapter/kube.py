""":class:`KubeApi` on the official ``kubernetes`` client.

Requests go through the client's ApiClient (configuration, TLS, token refresh) but with raw JSON
bodies and explicit content types, so what is sent is exactly what :mod:`tpu_platform.hotswap.adapter.applier`
built: no model round-trips (which would, e.g., drop the fraction of a MicroTime).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException
from kubernetes.watch.watch import iter_resp_lines

from tpu_platform.hotswap.adapter.api import JOBSET_GROUP, JOBSET_VERSION, JSON, ApiError, Resource

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
LIST_PAGE = 500

_COLLECTIONS = {
    "nodes": "/api/v1/nodes",
    "pods": "/api/v1/pods",
    "jobsets": f"/apis/{JOBSET_GROUP}/{JOBSET_VERSION}/jobsets",
    "leases": "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases",
}


def _collection(resource: Resource) -> tuple[str, dict[str, str] | None]:
    """Path template and its parameters: leases are only ever read from one namespace."""
    path = _COLLECTIONS[resource.name]
    if "{namespace}" not in path:
        return path, None
    if not resource.namespace:
        raise ValueError(f"{resource.name} needs a namespace")
    return path, {"namespace": resource.namespace}


class KubernetesApi:
    def __init__(self, api_client: client.ApiClient | None = None, *, request_timeout: float = 30.0) -> None:
        self.client = api_client if api_client is not None else client.ApiClient()
        self.request_timeout = request_timeout

    @classmethod
    def from_environment(cls, kubeconfig: str | None = None) -> KubernetesApi:
        """In-cluster service account if available, else the kubeconfig."""
        try:
            config.load_incluster_config()
        except ConfigException:
            config.load_kube_config(config_file=kubeconfig)
        return cls(client.ApiClient())

    def _request(
        self,
        method: str,
        path: str,
        *,
        path_params: dict[str, str] | None = None,
        query: list[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | None = None,
    ) -> Any:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        method_, url, headers_, body_, post = self.client.param_serialize(
            method=method,
            resource_path=path,
            path_params=path_params,
            query_params=query,
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        try:
            resp = self.client.call_api(
                method_,
                url,
                header_params=headers_,
                body=body_,
                post_params=post,
                _request_timeout=timeout or self.request_timeout,
            )
        except client.ApiException as err:
            raise ApiError(int(err.status or 0), str(err.reason or ""), str(err.body or "")) from err
        if not 200 <= resp.status < 300:
            data = resp.read()
            raise ApiError(
                resp.status, str(resp.reason or ""), data.decode("utf-8", "replace") if data else ""
            )
        return resp

    def _json(self, resp: Any) -> JSON:
        data = resp.read()
        return json.loads(data) if data else {}

    def list_objects(self, resource: Resource) -> tuple[list[JSON], str]:
        path, params = _collection(resource)
        items: list[JSON] = []
        token = ""
        while True:
            query = [("limit", str(LIST_PAGE))]
            if resource.label_selector:
                query.append(("labelSelector", resource.label_selector))
            if token:
                query.append(("continue", token))
            page = self._json(self._request("GET", path, path_params=params, query=query))
            items.extend(page.get("items") or [])
            meta = page.get("metadata") or {}
            token = meta.get("continue") or ""
            if not token:
                return items, str(meta.get("resourceVersion") or "")

    def watch_objects(
        self, resource: Resource, resource_version: str, timeout_seconds: int
    ) -> Iterator[JSON]:
        query = [
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("resourceVersion", resource_version),
            ("timeoutSeconds", str(timeout_seconds)),
        ]
        if resource.label_selector:
            query.append(("labelSelector", resource.label_selector))
        path, params = _collection(resource)
        resp = self._request("GET", path, path_params=params, query=query, timeout=timeout_seconds + 30)
        raw = resp.response
        try:
            for line in iter_resp_lines(raw):
                if line:
                    yield json.loads(line)
        finally:
            raw.close()
            raw.release_conn()

    def patch_node(self, name: str, patch: list[JSON]) -> None:
        self._request(
            "PATCH", "/api/v1/nodes/{name}", path_params={"name": name}, body=patch, content_type=JSON_PATCH
        )

    def patch_jobset(self, namespace: str, name: str, patch: JSON) -> None:
        self._request(
            "PATCH",
            f"/apis/{JOBSET_GROUP}/{JOBSET_VERSION}/namespaces/{{namespace}}/jobsets/{{name}}",
            path_params={"namespace": namespace, "name": name},
            body=patch,
            content_type=MERGE_PATCH,
        )

    def evict_pod(self, namespace: str, name: str, body: JSON) -> None:
        self._request(
            "POST",
            "/api/v1/namespaces/{namespace}/pods/{name}/eviction",
            path_params={"namespace": namespace, "name": name},
            body=body,
        )

    def delete_pod(self, namespace: str, name: str, *, grace_period_seconds: int, uid: str) -> None:
        self._request(
            "DELETE",
            "/api/v1/namespaces/{namespace}/pods/{name}",
            path_params={"namespace": namespace, "name": name},
            query=[("gracePeriodSeconds", str(grace_period_seconds))],
            body={
                "apiVersion": "v1",
                "kind": "DeleteOptions",
                "gracePeriodSeconds": grace_period_seconds,
                "preconditions": {"uid": uid},
            },
        )

    def create_event(self, namespace: str, body: JSON) -> None:
        self._request(
            "POST",
            "/apis/events.k8s.io/v1/namespaces/{namespace}/events",
            path_params={"namespace": namespace},
            body=body,
        )

    def get_lease(self, namespace: str, name: str) -> JSON | None:
        try:
            resp = self._request(
                "GET",
                "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}",
                path_params={"namespace": namespace, "name": name},
            )
        except ApiError as err:
            if err.status == 404:
                return None
            raise
        return self._json(resp)

    def create_lease(self, namespace: str, body: JSON) -> JSON:
        resp = self._request(
            "POST",
            "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases",
            path_params={"namespace": namespace},
            body=body,
        )
        return self._json(resp)

    def replace_lease(self, namespace: str, name: str, body: JSON) -> JSON:
        resp = self._request(
            "PUT",
            "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}",
            path_params={"namespace": namespace, "name": name},
            body=body,
        )
        return self._json(resp)
