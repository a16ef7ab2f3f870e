"""Kueue's visibility API (``visibility.kueue.x-k8s.io``) served from the double's Workloads.

As kueue v0.19.2 serves it (``pkg/visibility/server.go``, ``pkg/visibility/storage/``): versions
v1beta2 and v1beta1; ``GET clusterqueues/{name}/pendingworkloads?limit=&offset=`` returns a
``PendingWorkloadsSummary`` of the ClusterQueue's pending Workloads (no ``QuotaReserved``; active) in
queue order: higher priority first, then older first, then UID (``pkg/cache/queue/cluster_queue.go``
``baseCompareFunc``); an unknown ClusterQueue is 404; ``limit`` is capped at 4000
(``constants.MaxPendingWorkloadsLimit``) and defaults to 1000. Anything else under the group is 404.
Faults apply as to every other request (resource ``clusterqueues``, subresource ``pendingworkloads``).
"""

from __future__ import annotations

from typing import Any

from tests.kubeapi.store import ApiStatus, Store, kind_for

GROUP = "visibility.kueue.x-k8s.io"
VERSIONS = ("v1beta2", "v1beta1")
DEFAULT_LIMIT = 1000
MAX_LIMIT = 4000

JSON = dict[str, Any]


def _conditions(wl: JSON) -> dict[str, str]:
    return {c.get("type", ""): c.get("status", "") for c in (wl.get("status") or {}).get("conditions") or []}


def _int(query: dict[str, str], key: str, default: int) -> int:
    try:
        return int(query.get(key, default))
    except ValueError as err:
        raise ApiStatus(400, "BadRequest", f"{key} must be an integer") from err


def pending_workloads(store: Store, version: str, rest: list[str], query: dict[str, str]) -> JSON:
    """The reply to ``GET /apis/visibility.kueue.x-k8s.io/{version}/{rest...}``."""
    if version not in VERSIONS:
        raise ApiStatus(404, "NotFound", f"{GROUP}/{version} is not served")
    if len(rest) != 3 or rest[0] != "clusterqueues" or rest[2] != "pendingworkloads":
        raise ApiStatus(404, "NotFound", f"{GROUP}: only clusterqueues/NAME/pendingworkloads is served here")
    name = rest[1]
    try:
        store.get(kind_for("kueue.x-k8s.io", "clusterqueues"), "", name)
    except ApiStatus as err:
        raise ApiStatus(404, "NotFound", f'clusterqueue.{GROUP} "{name}" not found') from err
    limit = min(max(_int(query, "limit", DEFAULT_LIMIT), 0), MAX_LIMIT)
    offset = max(_int(query, "offset", 0), 0)
    lqs, _ = store.list_items(kind_for("kueue.x-k8s.io", "localqueues"), "")
    lq_cq = {
        (lq["metadata"]["namespace"], lq["metadata"]["name"]): (lq.get("spec") or {}).get("clusterQueue")
        for lq in lqs
    }
    wls, _ = store.list_items(kind_for("kueue.x-k8s.io", "workloads"), "")
    pending = [
        wl
        for wl in wls
        if lq_cq.get((wl["metadata"]["namespace"], (wl.get("spec") or {}).get("queueName"))) == name
        and _conditions(wl).get("QuotaReserved") != "True"
        and _conditions(wl).get("Finished") != "True"
        and (wl.get("spec") or {}).get("active", True) is not False
    ]
    pending.sort(
        key=lambda wl: (
            -int((wl.get("spec") or {}).get("priority") or 0),
            wl["metadata"].get("creationTimestamp", ""),
            wl["metadata"].get("uid", ""),
        )
    )
    items = []
    positions: dict[tuple[str, str], int] = {}
    for index, wl in enumerate(pending[: offset + limit]):
        meta = wl["metadata"]
        lq = (meta["namespace"], (wl.get("spec") or {}).get("queueName", ""))
        position_in_lq = positions.get(lq, 0)
        positions[lq] = position_in_lq + 1
        if index < offset:
            continue
        items.append(
            {
                "metadata": {
                    "name": meta["name"],
                    "namespace": meta["namespace"],
                    "creationTimestamp": meta.get("creationTimestamp"),
                    "ownerReferences": meta.get("ownerReferences") or [],
                },
                "priority": int((wl.get("spec") or {}).get("priority") or 0),
                "localQueueName": lq[1],
                "positionInClusterQueue": index,
                "positionInLocalQueue": position_in_lq,
            }
        )
    return {
        "kind": "PendingWorkloadsSummary",
        "apiVersion": f"{GROUP}/{version}",
        "metadata": {"creationTimestamp": None},
        "items": items,
    }


def serve(handler: Any, version: str, rest: list[str], query: dict[str, str]) -> None:
    """Answer one visibility request on the double's HTTP handler, faults included."""
    from tests.kubeapi.faults import Request
    from tests.kubeapi.server import _REASONS, identity_of

    d = handler.double
    req = Request(
        handler.command,
        "get",
        GROUP,
        rest[0] if rest else "",
        "",
        rest[1] if len(rest) > 1 else "",
        rest[2] if len(rest) > 2 else "",
        identity_of(handler.headers.get("User-Agent", "")),
    )
    fault = d.faults.take(req)
    if fault is not None and fault.status:
        d.record(req, query, fault.status)
        handler._status(
            ApiStatus(fault.status, _REASONS.get(fault.status, "InternalError"), "injected fault")
        )
        return
    if handler.command != "GET":
        raise ApiStatus(405, "MethodNotAllowed", f"{GROUP} is read-only")
    try:
        reply = pending_workloads(d.store, version, rest, query)
    except ApiStatus as err:
        d.record(req, query, err.code)
        raise
    d.record(req, query, 200)
    handler._json(200, reply)
