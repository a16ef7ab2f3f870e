"""The API double is as strict as kube-apiserver where the controller relies on it, checked with
the real ``kubernetes`` client (37.0.2) over loopback HTTP."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from tests.kubeapi import ApiDouble, Fault, Seeder
from tests.kubeapi.objects import (
    cluster_queue_obj,
    event_obj,
    jobset_obj,
    lease_obj,
    local_queue_obj,
    node_obj,
    pdb_obj,
    pod_obj,
    resource_flavor_obj,
    workload_obj,
)
from tests.kubeapi.selectors import SelectorError, field_matcher, label_matcher


@pytest.fixture
def api() -> Iterator[tuple[ApiDouble, Seeder, client.ApiClient]]:
    with ApiDouble(bookmark_interval=0.2) as d:
        seed = Seeder(d)
        seed.node(node_obj("a-0", "a"))
        seed.node(node_obj("b-0", "b"))
        seed.jobset(jobset_obj("js"))
        seed.pod(pod_obj("p-0", "js", job="js-slice-0", node="a-0", priority=1))
        seed.pod(pod_obj("p-1", "js", job="js-slice-0", node="b-0", priority=1))
        cfg = client.Configuration(host=d.url)
        cfg.retries = False
        yield d, seed, client.ApiClient(cfg)


def status_of(call: object) -> int:
    with pytest.raises(client.ApiException) as err:
        call()  # type: ignore[operator]
    return int(err.value.status)


def test_label_and_field_selectors(api: tuple[ApiDouble, Seeder, client.ApiClient]) -> None:
    _, _, c = api
    core: Any = client.CoreV1Api(c)
    assert [
        n.metadata.name for n in core.list_node(label_selector="cloud.google.com/gke-nodepool=a").items
    ] == ["a-0"]
    assert [
        n.metadata.name for n in core.list_node(label_selector="cloud.google.com/gke-nodepool in (a,b)").items
    ] == [
        "a-0",
        "b-0",
    ]
    assert core.list_node(label_selector="!cloud.google.com/gke-nodepool").items == []
    pods = core.list_pod_for_all_namespaces(field_selector="spec.nodeName=b-0").items
    assert [p.metadata.name for p in pods] == ["p-1"]
    assert status_of(lambda: core.list_pod_for_all_namespaces(field_selector="spec.bogus=1")) == 400
    assert status_of(lambda: core.list_node(label_selector="a in b")) == 400


def test_selector_parser_edges() -> None:
    m = label_matcher("env notin (prod), tier")
    assert m({"tier": "x"}) and not m({"tier": "x", "env": "prod"}) and not m({})
    with pytest.raises(SelectorError):
        label_matcher("==x")
    assert field_matcher("pods", "status.phase!=Running")({"status": {"phase": "Pending"}})


def test_resource_version_and_uid_preconditions(api: tuple[ApiDouble, Seeder, client.ApiClient]) -> None:
    _, seed, c = api
    coord: Any = client.CoordinationV1Api(c)
    seed.lease(lease_obj("l", "default", "a", 1_700_000_000))
    lease = coord.read_namespaced_lease("l", "default")
    lease.spec.holder_identity = "b"
    coord.replace_namespaced_lease("l", "default", lease)
    lease.spec.holder_identity = "c"
    assert status_of(lambda: coord.replace_namespaced_lease("l", "default", lease)) == 409, "stale RV"
    core: Any = client.CoreV1Api(c)
    wrong = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="other"))
    assert status_of(lambda: core.delete_namespaced_pod("p-0", "default", body=wrong)) == 409
    custom: Any = client.CustomObjectsApi(c)
    bad_uid = {"metadata": {"uid": "other", "annotations": {"x": "y"}}}
    assert (
        status_of(
            lambda: custom.patch_namespaced_custom_object(
                "jobset.x-k8s.io", "v1alpha2", "default", "jobsets", "js", bad_uid
            )
        )
        == 409
    )
    assert (
        status_of(lambda: coord.create_namespaced_lease("default", {"metadata": {"name": "l"}, "spec": {}}))
        == 409
    )


def test_json_patch_test_failure_is_422(api: tuple[ApiDouble, Seeder, client.ApiClient]) -> None:
    _, seed, c = api
    core: Any = client.CoreV1Api(c)
    rv = seed.get("nodes", "a-0")["metadata"]["resourceVersion"]
    core.patch_node("a-0", [{"op": "test", "path": "/metadata/resourceVersion", "value": rv}])
    assert (
        status_of(
            lambda: core.patch_node(
                "a-0", [{"op": "test", "path": "/metadata/resourceVersion", "value": "1"}]
            )
        )
        == 422
    )
    assert status_of(lambda: core.patch_node("a-0", [{"op": "remove", "path": "/spec/taints/7"}])) == 422
    dup = {"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"}
    assert (
        status_of(lambda: core.patch_node("a-0", [{"op": "add", "path": "/spec/taints/-", "value": dup}]))
        == 422
    )


def test_eviction_under_a_pdb_is_429_and_spends_the_budget(
    api: tuple[ApiDouble, Seeder, client.ApiClient],
) -> None:
    _, seed, c = api
    core: Any = client.CoreV1Api(c)
    body = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "p-0", "namespace": "default"},
    }
    seed.pdb(pdb_obj("budget", {"jobset.sigs.k8s.io/jobset-name": "js"}, allowed=1))
    core.create_namespaced_pod_eviction("p-0", "default", body)
    pod = seed.get("pods", "p-0", "default")
    assert pod["metadata"]["deletionTimestamp"]
    assert any(c["type"] == "DisruptionTarget" for c in pod["status"]["conditions"])
    body1 = {**body, "metadata": {"name": "p-1", "namespace": "default"}}
    with pytest.raises(client.ApiException) as err:
        core.create_namespaced_pod_eviction("p-1", "default", body1)
    assert err.value.status == 429
    assert json.loads(err.value.body or "{}")["details"]["causes"][0]["reason"] == "DisruptionBudget"
    core.create_namespaced_pod_eviction("p-0", "default", body)  # terminating: no PDB check
    assert (
        status_of(
            lambda: core.create_namespaced_pod_eviction(
                "gone", "default", {**body, "metadata": {"name": "gone"}}
            )
        )
        == 404
    )


def test_watch_sends_bookmarks_and_410_for_a_compacted_version(
    api: tuple[ApiDouble, Seeder, client.ApiClient],
) -> None:
    d, seed, c = api
    core: Any = client.CoreV1Api(c)
    rv = core.list_node().metadata.resource_version
    seed.set_node_ready("a-0", "False", 5)
    resp = core.list_node(
        watch=True, resource_version=rv, allow_watch_bookmarks=True, timeout_seconds=1, _preload_content=False
    )
    events = [json.loads(line) for line in resp.data.splitlines() if line]
    assert events[0]["type"] == "MODIFIED" and events[-1]["type"] == "BOOKMARK"
    d.store.compact()
    resp = core.list_node(watch=True, resource_version=rv, timeout_seconds=1, _preload_content=False)
    events = [json.loads(line) for line in resp.data.splitlines() if line]
    assert events == [{"type": "ERROR", "object": events[0]["object"]}] and events[0]["object"]["code"] == 410


def test_a_watch_selector_turns_moves_into_added_and_deleted(
    api: tuple[ApiDouble, Seeder, client.ApiClient],
) -> None:
    _, seed, c = api
    core: Any = client.CoreV1Api(c)
    rv = core.list_node().metadata.resource_version
    node = seed.get("nodes", "a-0")
    node["metadata"]["labels"]["x"] = "y"
    seed.update("nodes", node)
    del node["metadata"]["labels"]["x"]
    seed.update("nodes", node)
    resp = core.list_node(
        watch=True, resource_version=rv, label_selector="x=y", timeout_seconds=1, _preload_content=False
    )
    types = [json.loads(line)["type"] for line in resp.data.splitlines() if line]
    assert types == ["ADDED", "DELETED"]


def test_injected_faults_fire_once_and_are_counted(api: tuple[ApiDouble, Seeder, client.ApiClient]) -> None:
    d, _, c = api
    core: Any = client.CoreV1Api(c)
    d.faults.add(Fault(status=503, verbs=("list",)))
    assert status_of(core.list_node) == 503
    core.list_node()
    assert d.faults.injected == 1


def test_a_delayed_write_past_its_timeout_is_504_and_not_applied(
    api: tuple[ApiDouble, Seeder, client.ApiClient],
) -> None:
    """kube-apiserver's request deadline (``timeout``, from when the request arrived): a write still
    waiting at it is answered 504 Timeout and never applied; within it the write lands."""
    d, _, c = api
    core: Any = client.CoreV1Api(c)

    def patch(value: str, timeout: str) -> Any:
        body = json.dumps({"metadata": {"labels": {"x": value}}}).encode()
        req = urllib.request.Request(
            f"{d.url}/api/v1/nodes/a-0?timeout={timeout}",
            data=body,
            headers={"Content-Type": "application/merge-patch+json"},
            method="PATCH",
        )
        return urllib.request.urlopen(req, timeout=5)

    d.faults.add(Fault(delay=0.5, verbs=("patch",)))
    started = time.monotonic()
    with pytest.raises(urllib.error.HTTPError) as err:
        patch("late", "200ms")
    assert err.value.code == 504 and json.loads(err.value.read())["reason"] == "Timeout"
    assert time.monotonic() - started < 0.45, "answered at the deadline, not after the delay"
    assert "x" not in (core.read_node("a-0").metadata.labels or {})
    d.faults.add(Fault(delay=0.1, verbs=("patch",)))
    patch("in-time", "2s").close()
    assert core.read_node("a-0").metadata.labels["x"] == "in-time"


def test_seeding_covers_kueue_and_events(api: tuple[ApiDouble, Seeder, client.ApiClient]) -> None:
    _, seed, c = api
    seed.kueue(
        "resourceflavors",
        resource_flavor_obj("v6e", {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice"}),
    )
    seed.kueue("clusterqueues", cluster_queue_obj("cq", "v6e", 64))
    seed.kueue("localqueues", local_queue_obj("lq", "cq"))
    seed.kueue("workloads", workload_obj("wl", "lq", admitted=True))
    seed.event(event_obj({"kind": "Node", "name": "a-0"}, "Test", "hello"))
    custom: Any = client.CustomObjectsApi(c)
    wls = custom.list_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", "default", "workloads")
    assert [w["metadata"]["name"] for w in wls["items"]] == ["wl"]
    assert (
        custom.list_cluster_custom_object("kueue.x-k8s.io", "v1beta1", "clusterqueues")["items"][0][
            "metadata"
        ]["name"]
        == "cq"
    )
    events = client.EventsV1Api(c).list_namespaced_event("default").items
    assert [e.reason for e in events] == ["Test"]
    bad = {
        "metadata": {"generateName": "x."},
        "reason": "R",
        "type": "Odd",
        "eventTime": "2030-01-01T00:00:00Z",
    }
    req = urllib.request.Request(
        f"{api[0].url}/apis/events.k8s.io/v1/namespaces/default/events",
        data=json.dumps(bad).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=5)
    assert err.value.code == 422
