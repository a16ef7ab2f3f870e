"""``KubernetesApi`` on the real ``kubernetes`` client (``tpu_platform.hotswap.adapter.kube``)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes import client

from tests.kubeapi import ApiDouble, Fault, Seeder
from tests.kubeapi.objects import node_obj, pod_obj
from tpu_platform.hotswap.adapter.client import (
    ApiError,
    OutOfBudget,
    Resource,
    budgeted,
)
from tpu_platform.hotswap.adapter.kube import (
    KEEPALIVE,
    KubernetesApi,
    configure,
    load_configuration,
    status_error,
)


# --- what goes over the wire ----------------------------------------------------------------------
# The real KubernetesApi against a loopback stand-in for the API server (no network, no cluster):
# checks methods, paths, query strings, content types and bodies as they go over the wire.
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


def test_a_budgeted_write_sends_its_budget_as_the_timeout_parameter(
    server: tuple[Recorder, KubernetesApi],
) -> None:
    """Inside ``budgeted`` every write kind carries the budget as a Go duration in whole
    milliseconds (rounded down, so the server's deadline never ends after the client's); a
    spent budget sends nothing; Lease calls never carry one."""
    rec, api = server
    with budgeted(lambda: 4.2009):
        api.patch_node("tpu-a-0", [{"op": "add", "path": "/metadata/labels/x", "value": "y"}])
        api.patch_jobset("ml", "low", {"metadata": {"uid": "u"}})
        api.evict_pod("ml", "p", {})
        api.delete_pod("ml", "p", grace_period_seconds=0, uid="u")
        api.create_event("default", {})
    assert [r["query"].get("timeout") for r in rec.requests] == ["4200ms"] * 5
    assert rec.requests[3]["query"]["gracePeriodSeconds"] == "0"
    rec.requests.clear()
    with budgeted(lambda: None):
        with pytest.raises(OutOfBudget):
            api.patch_node("tpu-a-0", [])
        api.get_lease("ns", "lease")
        api.replace_lease("ns", "lease", {"metadata": {"name": "lease"}})
    assert [(r["method"], r["query"]) for r in rec.requests] == [("GET", {}), ("PUT", {})]


# --- transport faults -----------------------------------------------------------------------------
# The real ``kubernetes`` client (37.0.2) through KubernetesApi against the loopback API double:
# every failure is one ApiError, no hidden retries, connections reused, keepalive and timeouts set.
#
# Upstream behaviour pinned here: urllib3's default ``Retry`` (3 retries, Retry-After honoured for
# 429/503, ``urllib3/util/retry.py``) is what ``kubernetes.client.rest`` uses unless
# ``Configuration.retries`` is set; the client raises urllib3 errors, not ApiException, for refused
# or reset connections and timeouts (``kubernetes/client/rest.py`` ``RESTClientObject.request``).
NODES = Resource("nodes", "cloud.google.com/gke-tpu-accelerator")


@pytest.fixture
def double() -> Iterator[ApiDouble]:
    with ApiDouble(bookmark_interval=0.2) as d:
        seed = Seeder(d)
        for i in range(3):
            seed.node(node_obj(f"a-{i}", "a"))
        seed.pod(pod_obj("p-0", "js", job="js-slice-0", node="a-0", priority=1))
        yield d


def api_for(d: ApiDouble, *, timeout: float | tuple[float, float] = (1.0, 2.0)) -> KubernetesApi:
    cfg = configure(client.Configuration(host=d.url))
    return KubernetesApi(client.ApiClient(cfg), request_timeout=timeout, identity="t")


def test_refused_connection_is_one_transport_error_without_hidden_retries(double: ApiDouble) -> None:
    api = api_for(double)
    double.stop()
    started = time.monotonic()
    with pytest.raises(ApiError) as err:
        api.list_objects(NODES)
    assert err.value.status == 0 and err.value.transport and err.value.retryable
    assert time.monotonic() - started < 1.0, "no urllib3 retries with backoff inside the call"


def test_a_plain_client_retries_and_raises_urllib3_errors(double: ApiDouble) -> None:
    """What the adapter must not inherit: the default client hides 429s behind sleeps."""
    plain = client.CoreV1Api(client.ApiClient(client.Configuration(host=double.url)))
    double.faults.add(Fault(status=429, retry_after=1, verbs=("list",)))
    started = time.monotonic()
    plain.list_node()
    assert time.monotonic() - started >= 1.0
    assert [s.status for s in double.served if s.request.verb == "list"] == [429, 200]


def test_reset_connection_is_a_transport_error(double: ApiDouble) -> None:
    api = api_for(double)
    double.faults.add(Fault(reset=True, verbs=("patch",)))
    with pytest.raises(ApiError) as err:
        api.patch_node("a-0", [{"op": "add", "path": "/metadata/labels/x", "value": "y"}])
    assert err.value.status == 0
    api.patch_node("a-0", [{"op": "add", "path": "/metadata/labels/x", "value": "y"}])


def test_read_timeout_is_a_transport_error(double: ApiDouble) -> None:
    api = api_for(double, timeout=(1.0, 0.3))
    double.faults.add(Fault(delay=1.0, verbs=("list",)))
    with pytest.raises(ApiError) as err:
        api.list_objects(NODES)
    assert err.value.status == 0 and "Timeout" in err.value.reason


def test_429_carries_retry_after_and_is_not_retried(double: ApiDouble) -> None:
    api = api_for(double)
    double.faults.add(Fault(status=429, retry_after=7, verbs=("create",)))
    with pytest.raises(ApiError) as err:
        api.create_event("default", {"kind": "Event"})
    assert err.value.status == 429 and err.value.retry_after == 7.0
    assert len(double.writes(verb="create")) == 1


@pytest.mark.parametrize("status", [500, 503])
def test_server_errors_keep_their_status(double: ApiDouble, status: int) -> None:
    api = api_for(double)
    double.faults.add(Fault(status=status, verbs=("get",)))
    with pytest.raises(ApiError) as err:
        api.get_lease("ns", "x")
    assert err.value.status == status and err.value.retryable


def test_a_reply_that_is_not_json_is_a_transport_error(double: ApiDouble) -> None:
    api = api_for(double)
    double.faults.add(Fault(body=b"<html>proxy error</html>", verbs=("list",)))
    with pytest.raises(ApiError) as err:
        api.list_objects(NODES)
    assert err.value.status == 0 and err.value.reason == "BadResponse"


def test_a_watch_cut_mid_stream_is_a_transport_error(double: ApiDouble) -> None:
    api = api_for(double)
    _, rv = api.list_objects(NODES)
    double.faults.add(Fault(reset=True, verbs=("watch",)))
    with pytest.raises(ApiError) as err:
        list(api.watch_objects(NODES, rv, 5))
    assert err.value.status == 0


def test_status_errors_carry_reason_and_causes(double: ApiDouble) -> None:
    api = api_for(double)
    with pytest.raises(ApiError) as err:
        api.patch_node("a-0", [{"op": "test", "path": "/metadata/resourceVersion", "value": "1"}])
    assert err.value.status == 422 and err.value.reason == "Invalid"
    with pytest.raises(ApiError) as err:
        api.delete_pod("default", "p-0", grace_period_seconds=0, uid="not-the-uid")
    assert err.value.status == 409


def test_writes_reuse_one_connection(double: ApiDouble) -> None:
    api = api_for(double)
    before = double.connections
    for i in range(20):
        api.patch_node("a-1", [{"op": "add", "path": f"/metadata/labels/k{i}", "value": "v"}])
    assert double.connections - before == 1, "every response is read and its connection reused"


def test_keepalive_and_no_retries_are_configured() -> None:
    cfg = configure(client.Configuration(host="http://127.0.0.1:1"))
    assert cfg.retries is False
    opts = {(level, name): value for level, name, value in cfg.socket_options or []}
    assert opts[(socket.SOL_SOCKET, socket.SO_KEEPALIVE)] == 1
    assert opts[(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE)] == KEEPALIVE[0]
    assert opts[(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL)] == KEEPALIVE[1]
    assert opts[(socket.IPPROTO_TCP, socket.TCP_KEEPCNT)] == KEEPALIVE[2]
    pool = client.ApiClient(cfg).rest_client.pool_manager
    assert pool.connection_pool_kw["socket_options"] == cfg.socket_options


def test_user_agent_names_the_identity(double: ApiDouble) -> None:
    api_for(double).list_objects(NODES)
    assert double.served[-1].request.identity == "t"


def test_explicit_kubeconfig_wins_over_in_cluster(
    double: ApiDouble, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kubernetes.config import incluster_config

    token, cert = tmp_path / "token", tmp_path / "ca.crt"
    token.write_text("in-cluster-token")
    cert.write_text("not really a cert")
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(cert))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    assert load_configuration(None).host == "https://10.0.0.1:443", "in-cluster is the default"
    path = double.kubeconfig(str(tmp_path / "kubeconfig"))
    assert load_configuration(path).host == double.url


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=st.binary(max_size=300)
    | st.builds(
        lambda v: json.dumps(v).encode(),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=20),
            lambda inner: (
                st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
            ),
            max_leaves=12,
        ),
    )
)
def test_any_reply_body_is_data_or_one_api_error(double: ApiDouble, body: bytes) -> None:
    """Hostile or broken replies (a proxy's HTML, truncated JSON, JSON of the wrong shape)."""
    api = api_for(double)
    double.faults.add(Fault(body=body, verbs=("list",)))
    try:
        items, _ = api.list_objects(NODES)
    except ApiError as err:
        assert err.status == 0
    else:
        assert isinstance(items, list)
    double.faults.add(Fault(body=body, verbs=("watch",)))
    try:
        for event in api.watch_objects(NODES, "1", 1):
            assert isinstance(event, dict)
    except ApiError as err:
        assert err.status == 0


@given(status=st.integers(400, 599), raw=st.binary(max_size=200), retry=st.text(max_size=12))
def test_status_errors_parse_any_body_and_retry_after(status: int, raw: bytes, retry: str) -> None:
    err = status_error(status, "x", raw, {"Retry-After": retry})
    assert err.status == status
    assert err.retry_after is None or err.retry_after >= 0
