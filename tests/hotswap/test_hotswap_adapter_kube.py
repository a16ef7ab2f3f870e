"""The real KubernetesApi against a loopback stand-in for the API server (no network, no cluster):
checks methods, paths, query strings, content types and bodies as they go over the wire."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
from kubernetes import client

from tpu_platform.hotswap.adapter.api import ApiError, Resource
from tpu_platform.hotswap.adapter.kube import KubernetesApi
from tpu_platform.hotswap.adapter.write_fence import WriteFenced, fenced


class Recorder:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.responses: list[tuple[int, Any]] = []

    def reply(self, status: int, body: Any) -> None:
        self.responses.append((status, body))


@pytest.fixture
def server() -> Iterator[tuple[Recorder, KubernetesApi]]:
    rec = Recorder()

    class Handler(BaseHTTPRequestHandler):
        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            url = urlsplit(self.path)
            rec.requests.append(
                {
                    "method": self.command,
                    "path": url.path,
                    "query": dict(parse_qsl(url.query)),
                    "content_type": self.headers.get("Content-Type"),
                    "body": json.loads(raw) if raw else None,
                }
            )
            status, body = rec.responses.pop(0) if rec.responses else (200, {})
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

        def log_message(self, format: str, *args: object) -> None:
            """Quiet."""

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    cfg = client.Configuration(host=f"http://127.0.0.1:{httpd.server_address[1]}")
    try:
        yield rec, KubernetesApi(client.ApiClient(cfg), request_timeout=5)
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_node_json_patch(server: tuple[Recorder, KubernetesApi]) -> None:
    rec, api = server
    ops = [{"op": "add", "path": "/spec/taints/-", "value": {"key": "k", "effect": "NoSchedule"}}]
    api.patch_node("tpu-a-0", ops)
    assert rec.requests == [
        {
            "method": "PATCH",
            "path": "/api/v1/nodes/tpu-a-0",
            "query": {},
            "content_type": "application/json-patch+json",
            "body": ops,
        }
    ]


def test_jobset_merge_patch(server: tuple[Recorder, KubernetesApi]) -> None:
    rec, api = server
    api.patch_jobset("ml", "low", {"metadata": {"uid": "u", "annotations": {"a": "b"}}})
    [r] = rec.requests
    assert (r["method"], r["path"], r["content_type"]) == (
        "PATCH",
        "/apis/jobset.x-k8s.io/v1alpha2/namespaces/ml/jobsets/low",
        "application/merge-patch+json",
    )
    assert r["body"] == {"metadata": {"uid": "u", "annotations": {"a": "b"}}}


def test_eviction_and_force_delete(server: tuple[Recorder, KubernetesApi]) -> None:
    rec, api = server
    body = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "p", "namespace": "ml"},
        "deleteOptions": {"preconditions": {"uid": "u"}},
    }
    api.evict_pod("ml", "p", body)
    api.delete_pod("ml", "p", grace_period_seconds=0, uid="u")
    evict, delete = rec.requests
    assert (evict["method"], evict["path"], evict["body"]) == (
        "POST",
        "/api/v1/namespaces/ml/pods/p/eviction",
        body,
    )
    assert (delete["method"], delete["path"], delete["query"]) == (
        "DELETE",
        "/api/v1/namespaces/ml/pods/p",
        {"gracePeriodSeconds": "0"},
    )
    assert delete["body"] == {
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "gracePeriodSeconds": 0,
        "preconditions": {"uid": "u"},
    }


def test_event_micro_time_is_sent_verbatim(server: tuple[Recorder, KubernetesApi]) -> None:
    rec, api = server
    body = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "eventTime": "2030-01-01T00:00:00.000000Z"}
    api.create_event("default", body)
    [r] = rec.requests
    assert r["path"] == "/apis/events.k8s.io/v1/namespaces/default/events"
    assert r["body"]["eventTime"] == "2030-01-01T00:00:00.000000Z"


def test_list_follows_continue_tokens(server: tuple[Recorder, KubernetesApi]) -> None:
    rec, api = server
    rec.reply(
        200, {"items": [{"metadata": {"name": "a"}}], "metadata": {"continue": "tok", "resourceVersion": "7"}}
    )
    rec.reply(200, {"items": [{"metadata": {"name": "b"}}], "metadata": {"resourceVersion": "7"}})
    items, rv = api.list_objects(Resource("pods", "jobset.sigs.k8s.io/jobset-name"))
    assert [i["metadata"]["name"] for i in items] == ["a", "b"] and rv == "7"
    first, second = rec.requests
    assert first["path"] == "/api/v1/pods"
    assert first["query"] == {"limit": "500", "labelSelector": "jobset.sigs.k8s.io/jobset-name"}
    assert second["query"]["continue"] == "tok"


def test_watch_streams_events(server: tuple[Recorder, KubernetesApi]) -> None:
    rec, api = server
    lines = [
        {"type": "ADDED", "object": {"metadata": {"name": "js", "resourceVersion": "9"}}},
        {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "10"}}},
    ]
    rec.reply(200, b"".join(json.dumps(x).encode() + b"\n" for x in lines))
    events = list(api.watch_objects(Resource("jobsets"), "8", 60))
    assert events == lines
    [r] = rec.requests
    assert r["path"] == "/apis/jobset.x-k8s.io/v1alpha2/jobsets"
    assert r["query"] == {
        "watch": "true",
        "allowWatchBookmarks": "true",
        "resourceVersion": "8",
        "timeoutSeconds": "60",
    }


def test_errors_carry_the_status(server: tuple[Recorder, KubernetesApi]) -> None:
    rec, api = server
    rec.reply(429, {"kind": "Status", "reason": "TooManyRequests"})
    with pytest.raises(ApiError) as err:
        api.evict_pod("ml", "p", {})
    assert err.value.status == 429 and "TooManyRequests" in err.value.body
    rec.reply(404, {"kind": "Status"})
    assert api.get_lease("ns", "lease") is None
    rec.reply(409, {"kind": "Status", "reason": "Conflict"})
    with pytest.raises(ApiError) as err:
        api.replace_lease("ns", "lease", {"metadata": {"name": "lease"}})
    assert err.value.status == 409
    assert rec.requests[-1]["method"] == "PUT"
    assert rec.requests[-1]["path"] == "/apis/coordination.k8s.io/v1/namespaces/ns/leases/lease"


def test_node_leases_are_listed_and_watched_in_their_namespace(
    server: tuple[Recorder, KubernetesApi],
) -> None:
    rec, api = server
    rec.reply(200, {"items": [], "metadata": {"resourceVersion": "3"}})
    rec.reply(200, b"")
    leases = Resource("leases", namespace="kube-node-lease")
    assert api.list_objects(leases) == ([], "3")
    assert list(api.watch_objects(leases, "3", 60)) == []
    listed, watched = rec.requests
    assert (
        listed["path"] == watched["path"] == "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
    )
    assert listed["query"] == {"limit": "500"}
    assert watched["query"] == {
        "watch": "true",
        "allowWatchBookmarks": "true",
        "resourceVersion": "3",
        "timeoutSeconds": "60",
    }
    with pytest.raises(ValueError, match="namespace"):
        api.list_objects(Resource("leases"))


def test_a_fenced_write_sends_its_budget_as_the_timeout_parameter(
    server: tuple[Recorder, KubernetesApi],
) -> None:
    """Inside a write fence every write kind carries the budget as a Go duration in whole
    milliseconds (rounded down, so the server's deadline never ends after the client's); a
    closed fence sends nothing; Lease calls are never fenced."""
    rec, api = server
    with fenced(lambda: 4.2009):
        api.patch_node("tpu-a-0", [{"op": "add", "path": "/metadata/labels/x", "value": "y"}])
        api.patch_jobset("ml", "low", {"metadata": {"uid": "u"}})
        api.evict_pod("ml", "p", {})
        api.delete_pod("ml", "p", grace_period_seconds=0, uid="u")
        api.create_event("default", {})
    assert [r["query"].get("timeout") for r in rec.requests] == ["4200ms"] * 5
    assert rec.requests[3]["query"]["gracePeriodSeconds"] == "0"
    rec.requests.clear()
    with fenced(lambda: None):
        with pytest.raises(WriteFenced):
            api.patch_node("tpu-a-0", [])
        api.get_lease("ns", "lease")
        api.replace_lease("ns", "lease", {"metadata": {"name": "lease"}})
    assert [(r["method"], r["query"]) for r in rec.requests] == [("GET", {}), ("PUT", {})]
