"""Every object the API server holds, by kind and name, to see what an operation left behind."""

from __future__ import annotations

from typing import Any

from .kube import ApiError, Kube

# Written by the servers and kwok themselves as time passes, not by anything installed.
CHURN = {"Event", "Lease", "EndpointSlice", "Endpoints"}


def objects(kube: Kube) -> set[tuple[str, str, str]]:
    """(apiVersion, kind, namespace/name) of every listable object, discovered from the server."""
    found: set[tuple[str, str, str]] = set()
    for api_version in _api_versions(kube):
        prefix = "/api" if "/" not in api_version else "/apis"
        listing = kube.request("GET", f"{prefix}/{api_version}")
        for res in listing.get("resources") or []:
            if "/" in res["name"] or "list" not in (res.get("verbs") or []) or res["kind"] in CHURN:
                continue
            try:
                for obj in kube.list(api_version, res["kind"]):
                    meta = obj["metadata"]
                    name = f"{meta.get('namespace', '')}/{meta['name']}"
                    found.add((api_version, res["kind"], name))
            except ApiError as err:
                if err.status not in (404, 405, 503):
                    raise
    return found


def _api_versions(kube: Kube) -> list[str]:
    groups: dict[str, Any] = kube.request("GET", "/apis")
    preferred = [g["preferredVersion"]["groupVersion"] for g in groups.get("groups") or []]
    return ["v1", *preferred]


def left_behind(before: set[tuple[str, str, str]], after: set[tuple[str, str, str]]) -> list[str]:
    """Objects present after that were not there before (``CHURN`` kinds are never listed)."""
    return sorted(f"{kind} {name} ({api})" for api, kind, name in after - before)
