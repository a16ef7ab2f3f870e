""":class:`~tpu_platform.hotswap.adapter.client.KubeApi` on the official ``kubernetes`` client (37.0.2).

Raw JSON bodies with explicit content types through the client's ApiClient (configuration, TLS, token
refresh), so what is sent is exactly what the applier built. Every failure is one
:class:`~tpu_platform.hotswap.adapter.client.ApiError`; no hidden retries; one connection pool with
TCP keepalive and bounded timeouts; the token bucket before every request, and a budgeted write
checked again after it and sent with the budget as its timeout. Design notes: docs/hotswap-adapter.md,
"kube".
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from email.utils import parsedate_to_datetime
from typing import Any

from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException
from kubernetes.utils.keepalive import tcp_keepalive_socket_options

from tpu_platform.hotswap.adapter.client import (
    JOBSET_GROUP,
    JOBSET_VERSION,
    JSON,
    TRANSPORT,
    ApiError,
    Resource,
    TokenBucket,
    write_timeout,
)

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
LIST_PAGE = 500
KEEPALIVE = (15, 5, 3)
"""TCP keepalive idle seconds, probe interval, probe count."""
REQUEST_TIMEOUT = (5.0, 15.0)
"""(connect, read) seconds for non-watch requests."""
USER_AGENT = "tpu-platform-hotswap"

_COLLECTIONS = {
    "nodes": "/api/v1/nodes",
    "pods": "/api/v1/pods",
    "jobsets": f"/apis/{JOBSET_GROUP}/{JOBSET_VERSION}/jobsets",
    "jobs": "/apis/batch/v1/jobs",
    "leases": "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases",
}

RequestObserver = Callable[[str, str, int, float], None]
"""(verb, resource, status, seconds) of every request, for metrics."""


def configure(cfg: client.Configuration) -> client.Configuration:
    """Apply the transport rules above to a client Configuration."""
    cfg.retries = False
    cfg.socket_options = tcp_keepalive_socket_options(*KEEPALIVE)
    return cfg


def load_configuration(kubeconfig: str | None) -> client.Configuration:
    """An explicit kubeconfig wins; else the in-cluster service account; else the default kubeconfig."""
    cfg = client.Configuration()
    if kubeconfig:
        config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
        return cfg
    try:
        config.load_incluster_config(client_configuration=cfg)
    except ConfigException:
        config.load_kube_config(client_configuration=cfg)
    return cfg


def _retry_after(headers: Any, body: JSON) -> float | None:
    value = None
    if headers is not None:
        value = headers.get("Retry-After")
    if value:
        try:
            return max(0.0, float(value))
        except ValueError:
            try:
                return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
            except (TypeError, ValueError):
                return None
    seconds = (body.get("details") or {}).get("retryAfterSeconds") if isinstance(body, dict) else None
    return float(seconds) if isinstance(seconds, int | float) else None


def status_error(status: int, reason: str, raw: bytes, headers: Any = None) -> ApiError:
    """An ApiError from a non-2xx reply, with the Status object's reason and causes if it has one."""
    text = raw.decode("utf-8", "replace") if raw else ""
    try:
        body = json.loads(text) if text else {}
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    causes = tuple(
        str(c.get("reason") or c.get("type") or "")
        for c in (body.get("details") or {}).get("causes") or []
        if isinstance(c, dict)
    )
    return ApiError(
        status,
        str(body.get("reason") or reason or ""),
        text,
        retry_after=_retry_after(headers, body),
        causes=causes,
    )


def _collection(resource: Resource) -> tuple[str, dict[str, str] | None]:
    """Path template and its parameters: leases are only ever read from one namespace."""
    path = _COLLECTIONS[resource.name]
    if "{namespace}" not in path:
        return path, None
    if not resource.namespace:
        raise ValueError(f"{resource.name} needs a namespace")
    return path, {"namespace": resource.namespace}


class KubernetesApi:
    def __init__(
        self,
        api_client: client.ApiClient | None = None,
        *,
        request_timeout: float | tuple[float, float] = REQUEST_TIMEOUT,
        limiter: TokenBucket | None = None,
        observe: RequestObserver | None = None,
        identity: str = "",
    ) -> None:
        self.client = (
            api_client if api_client is not None else client.ApiClient(configure(client.Configuration()))
        )
        self.client.user_agent = f"{USER_AGENT}/{identity}" if identity else USER_AGENT
        self.request_timeout = request_timeout
        self.limiter = limiter if limiter is not None else TokenBucket()
        self.observe = observe

    @property
    def write_timeout_cap(self) -> float:
        """The longest total timeout of a budgeted write: the read timeout (the longest any request
        waits for its answer)."""
        t = self.request_timeout
        return float(t) if isinstance(t, int | float) else float(t[1])

    @classmethod
    def from_environment(
        cls, kubeconfig: str | None = None, *, identity: str = "", observe: RequestObserver | None = None
    ) -> KubernetesApi:
        """Explicit ``kubeconfig`` first, then in-cluster, then the default kubeconfig."""
        cfg = configure(load_configuration(kubeconfig))
        return cls(client.ApiClient(cfg), identity=identity, observe=observe)

    def _request(
        self,
        method: str,
        path: str,
        *,
        verb: str,
        resource: str,
        path_params: dict[str, str] | None = None,
        query: list[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | tuple[float, float] | None = None,
        stream: bool = False,
        write: bool = False,
    ) -> Any:
        """One request; returns the parsed JSON body (or, with ``stream``, the open response).

        A ``write`` inside :func:`~tpu_platform.hotswap.adapter.client.budgeted` is checked again
        here, after the rate limiter, and carries the lease's budget as its timeout (raises
        ``OutOfBudget``, sending nothing, if none is left)."""
        self.limiter.take()
        if write:
            budget = write_timeout(self.write_timeout_cap)
            if budget is not None:
                timeout = budget
                query = [*(query or []), ("timeout", go_duration(budget))]
        started = time.monotonic()
        status = TRANSPORT
        try:
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
            resp = self.client.call_api(
                method_,
                url,
                header_params=headers_,
                body=body_,
                post_params=post,
                _request_timeout=timeout or self.request_timeout,
            )
            status = int(resp.status)
            if stream and 200 <= status < 300:
                return resp.response
            raw = _drain(resp.response)
            if not 200 <= status < 300:
                raise status_error(status, str(resp.reason or ""), raw, resp.response.headers)
            return _parse(raw)
        except ApiError:
            raise
        except client.ApiException as err:
            status = int(err.status or 0)
            raise ApiError(status, str(err.reason or type(err).__name__), str(err.body or "")) from err
        except Exception as err:
            raise ApiError(TRANSPORT, type(err).__name__, str(err)) from err
        finally:
            if self.observe is not None:
                self.observe(verb, resource, status, time.monotonic() - started)

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
            page = self._request(
                "GET", path, verb="list", resource=resource.name, path_params=params, query=query
            )
            got = page.get("items")
            if not isinstance(got, list):
                raise ApiError(TRANSPORT, "BadResponse", "list reply has no items")
            items.extend(got)
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
        raw = self._request(
            "GET",
            path,
            verb="watch",
            resource=resource.name,
            path_params=params,
            query=query,
            timeout=(REQUEST_TIMEOUT[0], timeout_seconds + 30),
            stream=True,
        )
        try:
            for line in _lines(raw):
                try:
                    event = json.loads(line)
                except ValueError as err:
                    raise ApiError(
                        TRANSPORT, "BadResponse", f"watch line is not JSON: {line[:200]!r}"
                    ) from err
                if not isinstance(event, dict):
                    raise ApiError(TRANSPORT, "BadResponse", "watch event is not an object")
                yield event
        finally:
            raw.close()
            raw.release_conn()

    def patch_node(self, name: str, patch: list[JSON]) -> None:
        self._request(
            "PATCH",
            "/api/v1/nodes/{name}",
            verb="patch",
            resource="nodes",
            path_params={"name": name},
            body=patch,
            content_type=JSON_PATCH,
            write=True,
        )

    def patch_jobset(self, namespace: str, name: str, patch: JSON) -> None:
        self._request(
            "PATCH",
            f"/apis/{JOBSET_GROUP}/{JOBSET_VERSION}/namespaces/{{namespace}}/jobsets/{{name}}",
            verb="patch",
            resource="jobsets",
            path_params={"namespace": namespace, "name": name},
            body=patch,
            content_type=MERGE_PATCH,
            write=True,
        )

    def evict_pod(self, namespace: str, name: str, body: JSON) -> None:
        self._request(
            "POST",
            "/api/v1/namespaces/{namespace}/pods/{name}/eviction",
            verb="create",
            resource="pods/eviction",
            path_params={"namespace": namespace, "name": name},
            body=body,
            write=True,
        )

    def delete_pod(self, namespace: str, name: str, *, grace_period_seconds: int, uid: str) -> None:
        self._request(
            "DELETE",
            "/api/v1/namespaces/{namespace}/pods/{name}",
            verb="delete",
            resource="pods",
            path_params={"namespace": namespace, "name": name},
            query=[("gracePeriodSeconds", str(grace_period_seconds))],
            body={
                "apiVersion": "v1",
                "kind": "DeleteOptions",
                "gracePeriodSeconds": grace_period_seconds,
                "preconditions": {"uid": uid},
            },
            write=True,
        )

    def create_event(self, namespace: str, body: JSON) -> None:
        self._request(
            "POST",
            "/apis/events.k8s.io/v1/namespaces/{namespace}/events",
            verb="create",
            resource="events",
            path_params={"namespace": namespace},
            body=body,
            write=True,
        )

    def get_lease(self, namespace: str, name: str, *, timeout: float | None = None) -> JSON | None:
        try:
            return self._request(
                "GET",
                "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}",
                verb="get",
                resource="leases",
                path_params={"namespace": namespace, "name": name},
                timeout=timeout,
            )
        except ApiError as err:
            if err.status == 404:
                return None
            raise

    def create_lease(self, namespace: str, body: JSON, *, timeout: float | None = None) -> JSON:
        return self._request(
            "POST",
            "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases",
            verb="create",
            resource="leases",
            path_params={"namespace": namespace},
            body=body,
            timeout=timeout,
        )

    def replace_lease(self, namespace: str, name: str, body: JSON, *, timeout: float | None = None) -> JSON:
        return self._request(
            "PUT",
            "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}",
            verb="update",
            resource="leases",
            path_params={"namespace": namespace, "name": name},
            body=body,
            timeout=timeout,
        )


def go_duration(seconds: float) -> str:
    """A Go duration (``time.ParseDuration``) of whole milliseconds, rounded down, at least 1 ms:
    the server's deadline never ends after the client's."""
    return f"{max(1, int(seconds * 1000))}ms"


def _drain(response: Any) -> bytes:
    """Read the whole body and hand the connection back to the pool."""
    try:
        return bytes(response.data or b"")
    finally:
        response.release_conn()


def _parse(raw: bytes) -> JSON:
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except ValueError as err:
        raise ApiError(TRANSPORT, "BadResponse", f"reply is not JSON: {raw[:200]!r}") from err
    if not isinstance(data, dict):
        raise ApiError(TRANSPORT, "BadResponse", "reply is not a JSON object")
    return data


def _lines(raw: Any) -> Iterator[bytes]:
    """Newline-delimited watch events; a broken stream becomes a transport ApiError."""
    pending = b""
    try:
        for chunk in raw.stream(amt=None, decode_content=False):
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                if line.strip():
                    yield line
    except ApiError:
        raise
    except Exception as err:
        raise ApiError(TRANSPORT, type(err).__name__, str(err)) from err
    if pending.strip():
        yield pending
