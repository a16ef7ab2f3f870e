"""A small REST client over one kubeconfig: server-side apply, get, list, patch, delete of any kind.

Paths come from the API server's own discovery (as ``kubectl`` resolves them), so every object of
every group, CRDs included, goes through one code path, and a rejection arrives as the server's
``Status`` untouched.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import yaml
from kubernetes import client, config


@dataclass(frozen=True)
class Resource:
    plural: str
    namespaced: bool
    subresources: tuple[str, ...]


class ApiError(Exception):
    """A non-2xx answer: its HTTP status, reason and the server's message."""

    def __init__(self, status: int, body: str, what: str) -> None:
        self.status = status
        self.body = body
        try:
            doc = json.loads(body)
        except ValueError:
            doc = {}
        self.reason = str(doc.get("reason", ""))
        self.message = str(doc.get("message", body))
        super().__init__(f"{what}: {status} {self.reason}: {self.message}")


def group_version(api_version: str) -> tuple[str, str]:
    return ("", api_version) if "/" not in api_version else tuple(api_version.split("/", 1))  # type: ignore[return-value]


class Kube:
    """One identity's view of the API server (a kubeconfig file)."""

    def __init__(self, kubeconfig: Path, field_manager: str = "tpu-platform-live") -> None:
        self.config = client.Configuration()
        config.load_kube_config(config_file=str(kubeconfig), client_configuration=self.config)
        self.api = client.ApiClient(self.config)
        self.field_manager = field_manager
        self._discovery: dict[str, dict[str, Resource]] = {}

    def close(self) -> None:
        self.api.close()

    # discovery -------------------------------------------------------------------------------
    def resources(self, api_version: str, refresh: bool = False) -> dict[str, Resource]:
        """kind -> resource for one group/version, from ``/api/v1`` or ``/apis/G/V``."""
        if refresh or api_version not in self._discovery:
            group, version = group_version(api_version)
            path = f"/api/{version}" if not group else f"/apis/{group}/{version}"
            doc = self.request("GET", path)
            found: dict[str, Resource] = {}
            subs: dict[str, list[str]] = {}
            for r in doc.get("resources", []):
                name = str(r["name"])
                if "/" in name:
                    base, sub = name.split("/", 1)
                    subs.setdefault(base, []).append(sub)
            for r in doc.get("resources", []):
                name = str(r["name"])
                if "/" not in name:
                    found[str(r["kind"])] = Resource(name, bool(r["namespaced"]), tuple(subs.get(name, [])))
            self._discovery[api_version] = found
        return self._discovery[api_version]

    def resource(self, api_version: str, kind: str) -> Resource:
        res = self.resources(api_version).get(kind) or self.resources(api_version, refresh=True).get(kind)
        if res is None:
            raise KeyError(f"{api_version} {kind}: not served by this API server")
        return res

    def path(self, api_version: str, kind: str, namespace: str | None = None, name: str | None = None) -> str:
        res = self.resource(api_version, kind)
        group, version = group_version(api_version)
        base = f"/api/{version}" if not group else f"/apis/{group}/{version}"
        if res.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{res.plural}"
        return base + (f"/{name}" if name else "")

    # verbs -----------------------------------------------------------------------------------
    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: dict[str, str] | None = None,
        content_type: str = "application/json",
    ) -> Any:
        url = self.config.host + path + (f"?{urlencode(query)}" if query else "")
        headers = {"Accept": "application/json", "Content-Type": content_type}
        headers.update(self._auth_headers())
        data = body if isinstance(body, str | bytes) or body is None else json.dumps(body)
        # The client's own connection pool (its TLS settings), without the generated client's rewriting.
        resp = self.api.rest_client.pool_manager.request(method, url, body=data, headers=headers, timeout=30)
        raw = resp.data.decode()
        if not 200 <= resp.status < 300:
            raise ApiError(resp.status, raw, f"{method} {path}")
        return json.loads(raw) if raw else {}

    def _auth_headers(self) -> dict[str, str]:
        token = self.config.get_api_key_with_prefix("BearerToken", alias="authorization")
        return {"Authorization": token} if token else {}

    def apply(self, obj: dict[str, Any], *, dry_run: bool = False, strict: bool = False) -> dict[str, Any]:
        """Server-side apply (``kubectl apply --server-side --force-conflicts``).

        ``strict``: unknown or duplicate fields are errors (``fieldValidation=Strict``), as
        ``kubectl`` sends by default; without it the server drops unknown fields with a warning.
        """
        meta = obj.get("metadata") or {}
        path = self.path(obj["apiVersion"], obj["kind"], meta.get("namespace"), meta["name"])
        query = {"fieldManager": self.field_manager, "force": "true"}
        if dry_run:
            query["dryRun"] = "All"
        if strict:
            query["fieldValidation"] = "Strict"
        return dict(
            self.request(
                "PATCH", path, yaml.safe_dump(obj), query=query, content_type="application/apply-patch+yaml"
            )
        )

    def create(self, obj: dict[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        meta = obj.get("metadata") or {}
        path = self.path(obj["apiVersion"], obj["kind"], meta.get("namespace"))
        return dict(self.request("POST", path, obj, query={"dryRun": "All"} if dry_run else None))

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        return dict(self.request("GET", self.path(api_version, kind, namespace, name)))

    def list(
        self, api_version: str, kind: str, namespace: str | None = None, selector: str | None = None
    ) -> list[dict[str, Any]]:
        query = {"labelSelector": selector} if selector else None
        return list(
            self.request("GET", self.path(api_version, kind, namespace), query=query).get("items", [])
        )

    def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Any,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        patch_type: str = "application/merge-patch+json",
    ) -> dict[str, Any]:
        path = self.path(api_version, kind, namespace, name) + (f"/{subresource}" if subresource else "")
        return dict(self.request("PATCH", path, patch, content_type=patch_type))

    def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        grace: int | None = None,
    ) -> None:
        body = {"gracePeriodSeconds": grace} if grace is not None else None
        try:
            self.request("DELETE", self.path(api_version, kind, namespace, name), body)
        except ApiError as err:
            if err.status != 404:
                raise

    def apply_all(self, objects: Iterable[dict[str, Any]]) -> None:
        for obj in objects:
            self.apply(obj)


def wait_for(what: str, check: Callable[[], Any], timeout: float, interval: float = 0.25) -> Any:
    """Poll ``check`` until it returns something truthy; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = check()
        except (ApiError, KeyError) as err:
            last_error, value = err, None
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(
        f"{what}: not true after {timeout:.0f} s" + (f" (last error: {last_error})" if last_error else "")
    )
