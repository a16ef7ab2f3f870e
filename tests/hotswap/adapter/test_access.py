"""Least privilege, checked: the calls the adapter really makes are exactly what its roles grant.

The real ``kubernetes`` client talks HTTP to a loopback stand-in for the API server while the real
adapter (caches, leader election, controller, applier) runs one reconcile that does every kind of
write. Each request is named as RBAC names it, following the API server's request-info resolver
(kubernetes/kubernetes ``staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go``:
``/api/v1`` is the core group, ``/apis/GROUP/VERSION`` a named one; ``namespaces/NS/`` scopes it;
GET on a collection is ``list`` and with ``watch=true`` ``watch``, GET on a name ``get``, POST
``create``, PUT ``update``, PATCH ``patch``, DELETE ``delete``; a third path segment after the name
is a subresource such as ``pods/eviction``). The result must equal the grants in
:mod:`tpu_platform.hotswap.deploy`: no call the roles refuse, no grant the adapter never uses.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
from kubernetes import client

from tests.hotswap.hotswap_fakes import jobset_obj, node_lease_obj, node_obj, pod_obj
from tests.kubeapi.objects import job_for_pod
from tpu_platform.hotswap import deploy
from tpu_platform.hotswap.adapter.client import ApiError
from tpu_platform.hotswap.adapter.config import Config, RuntimeConfig
from tpu_platform.hotswap.adapter.controller import Controller
from tpu_platform.hotswap.adapter.elector import LeaderElector
from tpu_platform.hotswap.adapter.kube import KubernetesApi
from tpu_platform.hotswap.core import Settings
from tpu_platform.hotswap.core import constants as k

NOW = 1_000_000.0
LEASE_NS = "tpu-hotswap"
Request = tuple[str, str, dict[str, str]]


def request_info(method: str, path: str, query: dict[str, str]) -> tuple[str, str, str, str]:
    """(namespace, API group, resource[/subresource], verb) of one request, as RBAC sees it."""
    parts = path.strip("/").split("/")
    if parts[0] == "api":
        group, rest = "", parts[2:]
    else:
        assert parts[0] == "apis", path
        group, rest = parts[1], parts[3:]
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 2:
        namespace, rest = rest[1], rest[2:]
    resource = rest[0] if len(rest) < 3 else f"{rest[0]}/{rest[2]}"
    named = len(rest) > 1
    if method == "GET":
        verb = "watch" if query.get("watch") == "true" else ("get" if named else "list")
    else:
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[method]
    return namespace, group, resource, verb


def test_request_info_names_requests_as_the_api_server_does() -> None:
    assert request_info("GET", "/api/v1/pods", {"watch": "true"}) == ("", "", "pods", "watch")
    assert request_info("GET", "/api/v1/nodes", {}) == ("", "", "nodes", "list")
    assert request_info("POST", "/api/v1/namespaces/a/pods/p/eviction", {}) == (
        "a",
        "",
        "pods/eviction",
        "create",
    )
    assert request_info("PUT", "/apis/coordination.k8s.io/v1/namespaces/n/leases/l", {}) == (
        "n",
        "coordination.k8s.io",
        "leases",
        "update",
    )


class Cluster:
    """Just enough of an API server for one full reconcile: lists, empty watches, a Lease store."""

    def __init__(self, objects: dict[str, list[dict[str, Any]]]) -> None:
        self.objects = objects
        self.requests: list[Request] = []
        self.lease: dict[str, Any] | None = None
        self.rv = 10

    def handle(self, method: str, path: str, query: dict[str, str], body: Any) -> tuple[int, Any]:
        self.requests.append((method, path, query))
        lists = {
            "/api/v1/nodes": "nodes",
            "/api/v1/pods": "pods",
            "/apis/jobset.x-k8s.io/v1alpha2/jobsets": "jobsets",
            "/apis/batch/v1/jobs": "jobs",
            f"/apis/coordination.k8s.io/v1/namespaces/{k.NODE_LEASE_NAMESPACE}/leases": "leases",
        }
        if method == "GET" and path in lists:
            if query.get("watch") == "true":
                return 200, b""
            return 200, {"metadata": {"resourceVersion": str(self.rv)}, "items": self.objects[lists[path]]}
        if path.startswith(f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NS}/leases"):
            return self._lease(method, body)
        return (201 if method == "POST" else 200), {}

    def _lease(self, method: str, body: Any) -> tuple[int, Any]:
        if method == "GET":
            if self.lease is None:
                return 404, {"kind": "Status", "code": 404, "reason": "NotFound"}
            return 200, self.lease
        if method == "POST" and self.lease is not None:
            return 409, {"kind": "Status", "code": 409, "reason": "AlreadyExists"}
        self.rv += 1
        self.lease = {**body, "metadata": {**body["metadata"], "resourceVersion": str(self.rv)}}
        return (201 if method == "POST" else 200), self.lease


def world() -> Cluster:
    """Pool a has a node dead for 100 s under a running high-priority JobSet (taint, fail fast,
    force delete), pool b runs a low JobSet that an urgent waiting one preempts (record, evict)."""
    nodes = [
        node_obj(f"{pool}-{i}", pool, ready="Unknown" if (pool, i) == ("a", 1) else "True", since=NOW - 100)
        for pool in ("a", "b")
        for i in range(4)
    ]
    jobsets = [jobset_obj("high"), jobset_obj("low"), jobset_obj("urgent")]
    pods = [
        pod_obj(
            f"{name}-{i}", name, job=f"{name}-slice-0", node=f"{pool}-{i}", priority=prio, started=NOW - 3000
        )
        for name, pool, prio in (("high", "a", 2_000_000), ("low", "b", 1_000_000))
        for i in range(4)
    ]
    pods += [
        pod_obj(
            f"urgent-{i}",
            "urgent",
            job="urgent-slice-0",
            node=None,
            priority=3_000_000,
            phase="Pending",
            unschedulable_since=NOW - 60,
        )
        for i in range(4)
    ]
    leases = [node_lease_obj(n["metadata"]["name"], NOW - 5) for n in nodes]
    jobs = list({j["metadata"]["name"]: j for p in pods if (j := job_for_pod(p)) is not None}.values())
    return Cluster({"nodes": nodes, "pods": pods, "jobsets": jobsets, "jobs": jobs, "leases": leases})


@pytest.fixture
def served() -> Iterator[tuple[Cluster, KubernetesApi]]:
    cluster = world()

    class Handler(BaseHTTPRequestHandler):
        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            url = urlsplit(self.path)
            status, body = cluster.handle(
                self.command, url.path, dict(parse_qsl(url.query)), json.loads(raw) if raw else None
            )
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
        yield cluster, KubernetesApi(client.ApiClient(cfg), request_timeout=5)
    finally:
        httpd.shutdown()
        httpd.server_close()


def grants(lease_stale: bool) -> set[tuple[str, str, str, str]]:
    """(scope, group, resource, verb) the rendered roles grant; scope '*' is cluster-wide."""
    out = {("*", r.api_groups[0], r.resources[0], v) for r in deploy.CLUSTER_RULES for v in r.verbs}
    out |= {(LEASE_NS, r.api_groups[0], r.resources[0], v) for r in deploy.NAMESPACE_RULES for v in r.verbs}
    if lease_stale:
        out |= {
            (deploy.NODE_LEASE_NAMESPACE, r.api_groups[0], r.resources[0], v)
            for r in deploy.NODE_LEASE_RULES
            for v in r.verbs
        }
    return out


def used(requests: list[Request], granted: set[tuple[str, str, str, str]]) -> set[tuple[str, str, str, str]]:
    """The grant each request needs: cluster-wide if the ClusterRole has it, else its namespace."""
    out = set()
    for method, path, query in requests:
        ns, group, resource, verb = request_info(method, path, query)
        scope = "*" if ("*", group, resource, verb) in granted else ns
        out.add((scope, group, resource, verb))
    return out


def run_everything(api: KubernetesApi, *, lease_stale: bool) -> Controller:
    # Opted in to the NotReady timer so a force deletion (a write of its own kind) happens without Compute.
    settings = Settings(lease_stale_seconds=20.0 if lease_stale else 0.0, force_delete_unconfirmed=True)
    leader = LeaderElector(api, namespace=LEASE_NS, name="tpu-hotswap", identity="hotswap-0")
    c = Controller(
        api, Config(settings, RuntimeConfig()), identity="hotswap-0", leader=leader, clock=lambda: NOW
    )
    assert leader.try_acquire_or_renew(), "created the Lease"
    for cache in c.caches:
        cache.relist()
        # This server closes every watch at once with nothing in it; the reflector counts such a
        # short watch as a failure (it would back off), which is all this test needs of it.
        with pytest.raises(ApiError, match="ShortWatch"):
            cache.watch_once()
    decision = c.reconcile_once()
    assert decision is not None and decision.preemptions, "a full reconcile with a preemption"
    assert leader.try_acquire_or_renew(), "renewed the Lease"
    leader.release()
    return c


@pytest.mark.parametrize("lease_stale", [False, True], ids=["lease-signal-off", "lease-signal-on"])
def test_the_adapter_calls_exactly_what_the_roles_grant(
    served: tuple[Cluster, KubernetesApi], lease_stale: bool
) -> None:
    cluster, api = served
    run_everything(api, lease_stale=lease_stale)
    granted = grants(lease_stale)
    observed = used(cluster.requests, granted)
    assert observed - granted == set(), "calls the roles would refuse"
    assert granted - observed == set(), "grants the adapter never uses"


def test_every_kind_of_write_went_over_the_wire(served: tuple[Cluster, KubernetesApi]) -> None:
    cluster, api = served
    run_everything(api, lease_stale=False)
    kinds = {request_info(m, p, q)[2:] for m, p, q in cluster.requests if m != "GET"}
    assert kinds == {
        ("nodes", "patch"),
        ("jobsets", "patch"),
        ("pods/eviction", "create"),
        ("pods", "delete"),
        ("events", "create"),
        ("leases", "create"),
        ("leases", "update"),
    }
