"""The ``workload-identity-complete`` rule: every piece GKE's Workload Identity needs
(https://cloud.google.com/kubernetes-engine/docs/how-to/workload-identity) is in the stack, and the
hotswap controller never has corroboration on without its annotated account."""

from __future__ import annotations

from typing import Any

from tests.policy.test_policy_rules import res
from tpu_platform.policy import UNKNOWN, Resource, evaluate

RULE = "workload-identity-complete"
EMAIL = "tpu-prod-hotswap@p.iam.gserviceaccount.com"
LABELS = {"app.kubernetes.io/name": "hotswap-controller"}


def ksa(annotated: bool = True, namespace: Any = "tpu-hotswap") -> Resource:
    meta: dict[str, Any] = {"name": "hotswap-controller", "namespace": namespace, "labels": LABELS}
    if annotated:
        meta["annotations"] = {"iam.gke.io/gcp-service-account": EMAIL}
    return res("kubernetes:core/v1:ServiceAccount", "tpu-hotswap-sa", {"metadata": meta})


def binding(member: str = "serviceAccount:p.svc.id.goog[tpu-hotswap/hotswap-controller]") -> Resource:
    props = {"role": "roles/iam.workloadIdentityUser", "member": member, "serviceAccountId": "x"}
    return res("gcp:serviceaccount/iAMMember:IAMMember", "tpu-hotswap-workload-identity", props)


def cluster(pool: Any = "p.svc.id.goog") -> Resource:
    props = {"workloadIdentityConfig": {"workloadPool": pool}} if pool is not None else {}
    return res("gcp:container/cluster:Cluster", "tpu-cluster", props)


def node_pool(mode: Any = "GKE_METADATA") -> Resource:
    props = {"name": "system", "nodeConfig": {"workloadMetadataConfig": {"mode": mode}}}
    return res("gcp:container/nodePool:NodePool", "tpu-cluster-system", props)


def config_map(on: bool) -> Resource:
    text = f"compute_corroboration: {'true' if on else 'false'}\nruntime:\n  dry_run: false\n"
    props = {
        "metadata": {"name": "hotswap-controller-config", "labels": LABELS},
        "data": {"config.yaml": text},
    }
    return res("kubernetes:core/v1:ConfigMap", "tpu-hotswap-config", props)


def messages(resources: list[Resource]) -> list[str]:
    return [v.message for v in evaluate(resources) if v.policy == RULE]


def test_the_complete_setup_passes() -> None:
    assert messages([ksa(), binding(), cluster(), node_pool(), config_map(True)]) == []


def test_an_annotation_without_its_binding_fails() -> None:
    (msg,) = messages([ksa(), cluster(), node_pool()])
    assert "roles/iam.workloadIdentityUser" in msg and "[tpu-hotswap/hotswap-controller]" in msg
    (msg,) = messages([ksa(), binding("serviceAccount:p.svc.id.goog[other/hotswap-controller]"), cluster()])
    assert "tpu-hotswap/hotswap-controller" in msg, "a binding for another namespace does not count"


def test_a_cluster_without_a_workload_pool_or_metadata_server_fails() -> None:
    (msg,) = messages([ksa(), binding(), cluster(pool=None), node_pool()])
    assert "workloadPool" in msg
    (msg,) = messages([ksa(), binding(), cluster(), node_pool(mode="GCE_METADATA")])
    assert "GKE_METADATA" in msg


def test_corroboration_without_the_annotation_fails() -> None:
    (msg,) = messages([ksa(annotated=False), cluster(), node_pool(), config_map(True)])
    assert "compute_corroboration" in msg and "hotswap.computeCorroboration" in msg
    assert messages([ksa(annotated=False), cluster(), node_pool(), config_map(False)]) == []


def test_what_the_stack_cannot_know_is_not_judged() -> None:
    """An adopted cluster (no cluster resource) and values only known after apply."""
    assert messages([ksa(), binding()]) == []
    assert messages([ksa(namespace=UNKNOWN), cluster(pool=UNKNOWN), node_pool(mode=UNKNOWN)]) == []
