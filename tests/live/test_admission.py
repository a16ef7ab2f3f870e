"""The hotswap controller's admission policies, enforced by the real API server against a tenant.

The tenant is a ServiceAccount in a team namespace, authenticated by its own token. It is given more
RBAC than a tenant should have (patch and update of nodes and ``nodes/status``, every verb on its
JobSets and ``jobsets/status``), so that what stops it is admission, not authorization. Every path
that can carry the controller's state is tried: the object, its ``status`` subresource, merge
patch, JSON patch, update and server-side apply, setting, changing and removing. The controller's
own service account, with only the plan's RBAC, must still be able to write the same state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import pytest

from tests.live.cluster import ApiError, Kube, LiveCluster
from tests.live.cluster.addons import service_account_token
from tests.live.cluster.figures import Report
from tpu_platform.hotswap.admission import JOBSET_STATE_ANNOTATIONS, NODE_STATE_ANNOTATIONS
from tpu_platform.hotswap.core import constants as k

TEAM = "research"
DENIED = "only the hotswap controller"


def _kube_for(live: LiveCluster, namespace: str, name: str) -> Kube:
    token = service_account_token(live.admin, namespace, name)
    return Kube(live.cp.token_kubeconfig(f"{namespace}-{name}", token), field_manager=name)


@pytest.fixture(scope="module")
def tenant(dev: LiveCluster) -> Iterator[Kube]:
    admin = dev.admin
    admin.apply(
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "tenant", "namespace": TEAM}}
    )
    rules_ns = [
        {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets", "jobsets/status"], "verbs": ["*"]}
    ]
    rules_cluster = [
        {
            "apiGroups": [""],
            "resources": ["nodes", "nodes/status"],
            "verbs": ["get", "list", "patch", "update"],
        }
    ]
    subject = [{"kind": "ServiceAccount", "name": "tenant", "namespace": TEAM}]
    for kind, scope, rules in (("Role", {"namespace": TEAM}, rules_ns), ("ClusterRole", {}, rules_cluster)):
        meta = {"name": "live-tenant", **scope}
        admin.apply(
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta, "rules": rules}
        )
        binding = {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": "live-tenant"}
        admin.apply(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": f"{kind}Binding",
                "metadata": meta,
                "roleRef": binding,
                "subjects": subject,
            }
        )
    kube = _kube_for(dev, TEAM, "tenant")
    yield kube
    kube.close()


@pytest.fixture(scope="module")
def controller(dev: LiveCluster) -> Iterator[Kube]:
    kube = _kube_for(dev, "tpu-hotswap", "hotswap-controller")
    yield kube
    kube.close()


def _node(live: LiveCluster) -> str:
    assert live.current is not None
    return live.current.pools[0].node_names()[0]


def _annotations(obj: dict[str, Any]) -> dict[str, str]:
    return dict(obj.get("metadata", {}).get("annotations") or {})


def _denied(call: Any, what: str = "") -> ApiError:
    try:
        result = call()
    except ApiError as err:
        assert err.status in (403, 422), f"{what}: {err}"
        assert DENIED in err.message, f"{what}: {err}"
        return err
    raise AssertionError(f"{what}: admitted, answered {str(result)[:300]}")


def _node_writes(
    kube: Kube, node: str, annotations: dict[str, str | None], taints: list[dict[str, str]] | None
) -> dict[str, Callable[[], Any]]:
    """Every way ``kube`` can try to change a node's metadata or taints, as zero-argument calls."""
    meta_patch = {"metadata": {"annotations": annotations}}
    json_patch = [
        {"op": "add", "path": f"/metadata/annotations/{key.replace('/', '~1')}", "value": value or "x"}
        for key, value in annotations.items()
    ]
    calls: dict[str, Callable[[], Any]] = {}
    for sub in (None, "status"):
        where = sub or "object"
        calls[f"merge patch ({where})"] = partial(kube.patch, "v1", "Node", node, meta_patch, subresource=sub)
        calls[f"json patch ({where})"] = partial(
            kube.patch,
            "v1",
            "Node",
            node,
            json_patch,
            subresource=sub,
            patch_type="application/json-patch+json",
        )
        calls[f"update ({where})"] = partial(_put_annotations, kube, node, annotations, sub)
    if taints is not None:
        calls["merge patch of spec.taints"] = partial(
            kube.patch, "v1", "Node", node, {"spec": {"taints": taints}}
        )
    return calls


def _put_annotations(kube: Kube, node: str, annotations: dict[str, str | None], sub: str | None) -> Any:
    current = kube.get("v1", "Node", node)
    current["metadata"].setdefault("annotations", {}).update({a: v or "x" for a, v in annotations.items()})
    return kube.request("PUT", kube.path("v1", "Node", None, node) + (f"/{sub}" if sub else ""), current)


def test_a_tenant_cannot_write_node_state_on_any_path(dev: LiveCluster, tenant: Kube, report: Report) -> None:
    node = _node(dev)
    key = NODE_STATE_ANNOTATIONS[0]
    taint = [{"key": k.UNHEALTHY_TAINT_KEY, "value": "tenant", "effect": k.UNHEALTHY_TAINT_EFFECT}]
    calls = _node_writes(tenant, node, {key: "2099-01-01T00:00:00Z"}, taint)
    for name, call in calls.items():
        _denied(call, name)
    after = dev.admin.get("v1", "Node", node)
    assert key not in _annotations(after)
    assert not [t for t in after["spec"].get("taints", []) if t["key"] == k.UNHEALTHY_TAINT_KEY]
    report.append(f"admission: tenant node-state writes denied on {len(calls)} of {len(calls)} paths")


def test_a_tenant_cannot_remove_or_change_what_the_controller_wrote(
    dev: LiveCluster, tenant: Kube, controller: Kube
) -> None:
    node = _node(dev)
    key = NODE_STATE_ANNOTATIONS[0]
    taint = {"key": k.UNHEALTHY_TAINT_KEY, "value": "controller", "effect": k.UNHEALTHY_TAINT_EFFECT}
    current = dev.admin.get("v1", "Node", node)  # the controller lists nodes; it has no get
    taints = [*current["spec"].get("taints", []), taint]
    controller.patch(
        "v1", "Node", node, {"metadata": {"annotations": {key: "controller"}}, "spec": {"taints": taints}}
    )
    for name, call in _node_writes(tenant, node, {key: None}, [t for t in taints if t != taint]).items():
        if name.startswith("json patch"):
            continue  # an "add" of the same key is a change; covered by the change below
        _denied(call, name)
    _denied(
        lambda: tenant.patch(
            "v1", "Node", node, {"metadata": {"annotations": {key: "tenant"}}}, subresource="status"
        )
    )
    after = dev.admin.get("v1", "Node", node)
    assert _annotations(after)[key] == "controller"
    assert taint in after["spec"]["taints"]
    controller.patch(
        "v1", "Node", node, {"metadata": {"annotations": {key: None}}, "spec": {"taints": taints[:-1]}}
    )
    cleared = dev.admin.get("v1", "Node", node)
    assert key not in _annotations(cleared)


def _jobset(name: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": TEAM, "annotations": annotations or {}},
        "spec": {
            "suspend": True,
            "replicatedJobs": [
                {
                    "name": "slice",
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "template": {
                                "spec": {
                                    "restartPolicy": "Never",
                                    "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
                                }
                            }
                        }
                    },
                }
            ],
        },
    }


def test_a_tenant_cannot_forge_a_preemption_record(
    dev: LiveCluster, tenant: Kube, controller: Kube, report: Report
) -> None:
    key = JOBSET_STATE_ANNOTATIONS[0]
    _denied(lambda: tenant.create(_jobset("forged", {key: "research/other"})), "create with the record")
    tenant.create(_jobset("plain"))
    patch = {"metadata": {"annotations": {key: "research/other"}}}
    api = "jobset.x-k8s.io/v1alpha2"
    _denied(lambda: tenant.patch(api, "JobSet", "plain", patch, namespace=TEAM))
    _denied(lambda: tenant.apply(_jobset("plain", {key: "research/other"})))
    # A CRD's status subresource keeps only status (apiextensions-apiserver statusStrategy):
    # a metadata change there is dropped, or denied; either way it never lands.
    try:
        tenant.patch(api, "JobSet", "plain", patch, namespace=TEAM, subresource="status")
    except ApiError as err:
        assert err.status in (403, 422) and DENIED in err.message, err
    paths = 4
    assert key not in _annotations(dev.admin.get(api, "JobSet", "plain", TEAM))
    controller.patch(
        "jobset.x-k8s.io/v1alpha2",
        "JobSet",
        "plain",
        {"metadata": {"annotations": {key: "research/x"}}},
        namespace=TEAM,
    )
    assert (
        _annotations(dev.admin.get("jobset.x-k8s.io/v1alpha2", "JobSet", "plain", TEAM))[key] == "research/x"
    )
    report.append(
        f"admission: tenant JobSet-record writes denied on {paths} of {paths} paths; the controller's allowed"
    )
    dev.admin.delete("jobset.x-k8s.io/v1alpha2", "JobSet", "plain", TEAM)
