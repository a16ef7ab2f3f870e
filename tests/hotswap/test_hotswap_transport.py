"""The real ``kubernetes`` client (37.0.2) through KubernetesApi against the loopback API double:
every failure is one ApiError, no hidden retries, connections reused, keepalive and timeouts set.

Upstream behaviour pinned here: urllib3's default ``Retry`` (3 retries, Retry-After honoured for
429/503, ``urllib3/util/retry.py``) is what ``kubernetes.client.rest`` uses unless
``Configuration.retries`` is set; the client raises urllib3 errors, not ApiException, for refused
or reset connections and timeouts (``kubernetes/client/rest.py`` ``RESTClientObject.request``).
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes import client

from tests.kubeapi import ApiDouble, Fault, Seeder
from tests.kubeapi.objects import node_obj, pod_obj
from tpu_platform.hotswap.adapter.api import ApiError, Resource
from tpu_platform.hotswap.adapter.kube import (
    KEEPALIVE,
    KubernetesApi,
    configure,
    load_configuration,
    status_error,
)
from tpu_platform.hotswap.adapter.ratelimit import ItemBackoff, TokenBucket

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


def test_token_bucket_allows_the_burst_then_the_rate() -> None:
    t = [0.0]
    bucket = TokenBucket(qps=10, burst=3, clock=lambda: t[0], sleep=lambda s: t.__setitem__(0, t[0] + s))
    waits = [bucket.take() for _ in range(5)]
    assert waits[:3] == [0.0, 0.0, 0.0]
    assert waits[3] == pytest.approx(0.1) and waits[4] == pytest.approx(0.1)
    t[0] += 10
    assert [bucket.take() for _ in range(3)] == [0.0, 0.0, 0.0], "at most burst tokens are saved up"


def test_item_backoff_doubles_to_the_cap_honours_retry_after_and_forgets() -> None:
    t = [0.0]
    b = ItemBackoff(base=0.25, cap=8.0, jitter=0.0, clock=lambda: t[0])
    assert [b.failed("x") for _ in range(7)] == [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert b.waiting("x") == 8.0 and b.waiting("y") == 0.0
    assert b.failed("y", retry_after=5.0) == 5.0, "Retry-After is a floor"
    assert b.failed("z", retry_after=10_000) == 60.0, "and is capped"
    b.forget("x")
    assert b.waiting("x") == 0.0 and b.failures("x") == 0


def test_item_backoff_jitter_stays_within_bounds() -> None:
    b = ItemBackoff(base=1.0, cap=4.0, jitter=0.2)
    for n in range(1, 10):
        d = b.delay(n)
        base = min(4.0, 2 ** (n - 1))
        assert base <= d <= base * 1.2


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


def test_item_backoff_transport_failures_do_not_escalate() -> None:
    """An outage (refused connections) must not leave a write waiting out a grown backoff after it."""
    t = [0.0]
    b = ItemBackoff(base=0.25, cap=8.0, jitter=0.0, clock=lambda: t[0])
    assert [b.failed("x", escalate=False) for _ in range(20)] == [0.25] * 20
    assert b.failures("x") == 0
    assert [b.failed("x") for _ in range(3)] == [0.25, 0.5, 1.0], "status failures still escalate"
    assert b.failed("x", escalate=False) == 0.25 and b.failures("x") == 3
    assert b.failed("x", retry_after=3.0, escalate=False) == 3.0, "Retry-After is still a floor"
