"""``hotswap.computeCorroboration``: the controller's Google access for Compute Engine corroboration,
rendered under Pulumi mocks. Exactly the calls it makes, bound to a service account of the controller's
own: the calls on one VM (the status read, and the reset of the fence unless
``settings.resetSilentVms: false``) in a custom role bound only for the VMs carrying the cluster's TPU
tag, which GKE attaches to the TPU node pools' VMs and to nothing else; the operations listing in a
role of its own without a condition. Then the Workload Identity binding for its Kubernetes service
account, the annotation GKE reads, a node selector for nodes with the GKE metadata server; nothing of
it without the opt-in. Sources: ``tpu_platform.hotswap.iam`` (Compute Engine's per-method IAM
permissions, GKE's tags and Workload Identity pages, IAM's tag conditions)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml

from tests.components.test_hotswap_component import problems, resources_of
from tpu_platform.config.checks.warnings import stack_warnings
from tpu_platform.hotswap import iam
from tpu_platform.hotswap.adapter.config import config_from_mapping
from tpu_platform.plan import parse_stack_config

GSA = "gcp:serviceaccount/account:Account"
ROLE = "gcp:projects/iAMCustomRole:IAMCustomRole"
PROJECT_MEMBER = "gcp:projects/iAMMember:IAMMember"
SA_MEMBER = "gcp:serviceaccount/iAMMember:IAMMember"
KSA = "kubernetes:core/v1:ServiceAccount"
TAG_KEY = "gcp:tags/tagKey:TagKey"
TAG_VALUE = "gcp:tags/tagValue:TagValue"
TAG_MEMBER = "gcp:tags/tagValueIamMember:TagValueIamMember"
NODE_POOL = "gcp:container/nodePool:NodePool"
EMAIL = "tpu-test-hotswap@test-project.iam.gserviceaccount.com"
VM_ROLE_ID = "tpuPlatformHotswapCompute_tpu_test"
OPERATIONS_ROLE_ID = "tpuPlatformHotswapOperations_tpu_test"


@pytest.fixture
def corroborating(stack: dict[str, Any]) -> dict[str, Any]:
    stack["tpu-platform:hotswap"] = {
        "enabled": True,
        "image": "us-docker.pkg.dev/p/r/hotswap:1.0",
        "computeCorroboration": True,
    }
    return stack


def roles_by_id(rendering: Any) -> dict[str, dict[str, Any]]:
    return {role["roleId"]: role for role in resources_of(rendering, ROLE)}


def bindings_of(rendering: Any, role_id: str) -> list[dict[str, Any]]:
    return [m for m in resources_of(rendering, PROJECT_MEMBER) if m["role"].endswith(f"/roles/{role_id}")]


def tag_ids(rendering: Any) -> tuple[str, str]:
    """The cluster's tag key and value as the stack refers to them: the value's parent, and the value
    the service agents' grants are on (``tagKeys/N``, ``tagValues/M``)."""
    (value,) = resources_of(rendering, TAG_VALUE)
    (value_id,) = {m["tagValue"] for m in resources_of(rendering, TAG_MEMBER)}
    return value["parent"], value_id


def test_the_reads_alone_without_the_fence(
    corroborating: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    corroborating["tpu-platform:hotswap"]["settings"] = {"resetSilentVms": False}
    roles = roles_by_id(render_stack(corroborating))
    assert roles[VM_ROLE_ID]["permissions"] == ["compute.instances.get"]
    assert roles[OPERATIONS_ROLE_ID]["permissions"] == ["compute.zoneOperations.list"]


def test_the_calls_on_one_vm_are_bound_only_for_the_clusters_tagged_tpu_vms(
    corroborating: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    rendering = render_stack(corroborating)
    roles = roles_by_id(rendering)
    assert set(roles) == {VM_ROLE_ID, OPERATIONS_ROLE_ID}
    assert roles[VM_ROLE_ID]["permissions"] == ["compute.instances.get", "compute.instances.reset"]
    assert roles[OPERATIONS_ROLE_ID]["permissions"] == ["compute.zoneOperations.list"]
    assert all(r["project"] == "test-project" and "-" not in r["roleId"] for r in roles.values())
    (gsa,) = [a for a in resources_of(rendering, GSA) if a["accountId"] == "tpu-test-hotswap"]
    assert 6 <= len(gsa["accountId"]) <= 30
    key_id, value_id = tag_ids(rendering)
    (vm_binding,) = bindings_of(rendering, VM_ROLE_ID)
    assert vm_binding == {
        "project": "test-project",
        "role": f"projects/test-project/roles/{VM_ROLE_ID}",
        "member": f"serviceAccount:{EMAIL}",
        "condition": {
            "title": "tpu-platform hotswap TPU VMs",
            "description": f"Only VMs tagged {key_id}={value_id}: the cluster's TPU node pools",
            "expression": f"resource.matchTagId('{key_id}', '{value_id}')",
        },
    }
    (operations_binding,) = bindings_of(rendering, OPERATIONS_ROLE_ID)
    assert operations_binding == {
        "project": "test-project",
        "role": f"projects/test-project/roles/{OPERATIONS_ROLE_ID}",
        "member": f"serviceAccount:{EMAIL}",
    }
    mine = [m for m in resources_of(rendering, PROJECT_MEMBER) if m["member"] == f"serviceAccount:{EMAIL}"]
    assert sorted(m["role"] for m in mine) == sorted(m["role"] for m in (vm_binding, operations_binding)), (
        "no other project role for the controller's account"
    )


def test_gke_attaches_the_tag_to_the_tpu_pools_alone(
    corroborating: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    rendering = render_stack(corroborating)
    key_id, value_id = tag_ids(rendering)
    pools = {p["name"]: p for p in resources_of(rendering, NODE_POOL)}
    assert "resourceManagerTags" not in pools.pop("system")["nodeConfig"]
    assert pools and all(p["nodeConfig"]["resourceManagerTags"] == {key_id: value_id} for p in pools.values())
    (key,) = resources_of(rendering, TAG_KEY)
    assert key == {
        "parent": "projects/test-project",
        "shortName": "tpu-test-hotswap-vms",
        "description": key["description"],
        "purpose": "GCE_FIREWALL",
        "purposeData": {"network": "test-project/default"},
    }
    (value,) = resources_of(rendering, TAG_VALUE)
    assert value["parent"] == key_id and value["shortName"] == "tpu-slice"
    gke = "serviceAccount:service-123456789012@container-engine-robot.iam.gserviceaccount.com"
    apis = "serviceAccount:123456789012@cloudservices.gserviceaccount.com"
    assert sorted((m["role"], m["member"], m["tagValue"]) for m in resources_of(rendering, TAG_MEMBER)) == [
        ("roles/resourcemanager.tagHoldAdmin", gke, value_id),
        ("roles/resourcemanager.tagUser", apis, value_id),
        ("roles/resourcemanager.tagUser", gke, value_id),
    ]


def test_the_pools_wait_for_the_grants_and_the_scoped_binding_for_the_pools(
    corroborating: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    """GKE attaches the tag only with the service agents' grants; the narrowed binding replaces the
    old one only once the VMs are tagged."""
    rendering = render_stack(corroborating)
    by_urn = {r.urn: r for r in rendering.resources}
    tpu = [r for r in rendering.resources if r.type == NODE_POOL and r.inputs["name"] != "system"]
    for pool in tpu:
        assert {by_urn[d].type for d in pool.dependencies} >= {TAG_MEMBER}
    (binding,) = [
        r for r in rendering.resources if r.type == PROJECT_MEMBER and r.inputs["role"].endswith(VM_ROLE_ID)
    ]
    assert {p.urn for p in tpu} <= set(binding.dependencies)


def test_an_adopted_clusters_tag_names_the_network_gke_reports(
    corroborating: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    corroborating["tpu-platform:cluster"] = {"name": "tpu-test", "mode": "adopt", "location": "us-east5"}
    (key,) = resources_of(render_stack(corroborating), TAG_KEY)
    assert key["parent"] == "projects/test-project"
    assert key["purposeData"] == {"network": "test-project/default"}


def test_a_network_of_another_project_holds_the_tag_key(
    corroborating: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    """A firewall tag key of a project names a network of that project (Cloud NGFW "Tags for
    firewalls", "Specifications"): a Shared VPC's key lives in its host project."""
    corroborating["tpu-platform:cluster"]["network"] = "projects/host-project/global/networks/shared"
    (key,) = resources_of(render_stack(corroborating), TAG_KEY)
    assert key["parent"] == "projects/host-project"
    assert key["purposeData"] == {"network": "host-project/shared"}


def test_workload_identity_binds_only_the_controllers_ksa(
    corroborating: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    rendering = render_stack(corroborating)
    (wi,) = resources_of(rendering, SA_MEMBER)
    assert wi == {
        "serviceAccountId": f"projects/test-project/serviceAccounts/{EMAIL}",
        "role": "roles/iam.workloadIdentityUser",
        "member": "serviceAccount:test-project.svc.id.goog[tpu-hotswap/hotswap-controller]",
    }
    (ksa,) = resources_of(rendering, KSA)
    assert ksa["metadata"]["annotations"] == {"iam.gke.io/gcp-service-account": EMAIL}
    (deployment,) = resources_of(rendering, "kubernetes:apps/v1:Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == ksa["metadata"]["name"]
    assert pod["nodeSelector"] == {"iam.gke.io/gke-metadata-server-enabled": "true"}
    (config_map,) = resources_of(rendering, "kubernetes:core/v1:ConfigMap")
    loaded = config_from_mapping(yaml.safe_load(config_map["data"]["config.yaml"]))
    assert loaded.settings.compute_corroboration is True


def test_the_cluster_has_the_workload_pool_and_the_system_pool_the_metadata_server(
    corroborating: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    """What the Workload Identity page asks of the cluster and of the controller's pool, as the cluster
    component already sets it (components/gke_cluster.py)."""
    rendering = render_stack(corroborating)
    (cluster,) = resources_of(rendering, "gcp:container/cluster:Cluster")
    assert cluster["workloadIdentityConfig"] == {"workloadPool": iam.workload_pool("test-project")}
    (system,) = [
        p for p in resources_of(rendering, "gcp:container/nodePool:NodePool") if p["name"] == "system"
    ]
    assert system["nodeConfig"]["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}


def test_on_by_default(stack: dict[str, Any], render_stack: Callable[..., Any]) -> None:
    """Corroboration is the only evidence on which the controller force-deletes by default, so a stack
    that only enables the controller gets the Google access its reads need."""
    stack["tpu-platform:hotswap"] = {"enabled": True, "image": "us-docker.pkg.dev/p/r/hotswap:1.0"}
    rendering = render_stack(stack)
    assert len(resources_of(rendering, ROLE)) == 2 and len(resources_of(rendering, SA_MEMBER)) == 1
    assert len(resources_of(rendering, TAG_VALUE)) == 1
    (ksa,) = resources_of(rendering, KSA)
    assert "annotations" in ksa["metadata"]


def test_off_creates_no_google_access(stack: dict[str, Any], render_stack: Callable[..., Any]) -> None:
    stack["tpu-platform:hotswap"] = {
        "enabled": True,
        "image": "us-docker.pkg.dev/p/r/hotswap:1.0",
        "computeCorroboration": False,
    }
    rendering = render_stack(stack)
    assert resources_of(rendering, ROLE) == [] and resources_of(rendering, SA_MEMBER) == []
    assert [r for r in rendering.resources if r.type.startswith("gcp:tags/")] == []
    assert all("resourceManagerTags" not in p["nodeConfig"] for p in resources_of(rendering, NODE_POOL))
    assert [a["accountId"] for a in resources_of(rendering, GSA)] == ["tpu-test-nodes"]
    (ksa,) = resources_of(rendering, KSA)
    assert "annotations" not in ksa["metadata"]
    (deployment,) = resources_of(rendering, "kubernetes:apps/v1:Deployment")
    assert "nodeSelector" not in deployment["spec"]["template"]["spec"]


def test_the_setting_itself_is_refused_naming_the_switch(corroborating: dict[str, Any]) -> None:
    corroborating["tpu-platform:hotswap"]["computeCorroboration"] = False
    corroborating["tpu-platform:hotswap"]["settings"] = {"computeCorroboration": True}
    (message,) = problems(corroborating)
    assert message.startswith("tpu-platform:hotswap.settings:")
    assert "hotswap.computeCorroboration: true" in message


def test_the_evidence_age_needs_corroboration_and_a_floor(corroborating: dict[str, Any]) -> None:
    hot = corroborating["tpu-platform:hotswap"]
    hot["settings"] = {"instanceEvidenceMaxAgeSeconds": 5}
    (message,) = problems(corroborating)
    assert message.startswith("tpu-platform:hotswap.settings.instanceEvidenceMaxAgeSeconds:")
    assert "floor of 10" in message
    hot["computeCorroboration"] = False
    hot["settings"] = {"instanceEvidenceMaxAgeSeconds": 20}
    (message,) = problems(corroborating)
    assert message.startswith("tpu-platform:hotswap.settings.instanceEvidenceMaxAgeSeconds:")
    assert "hotswap.computeCorroboration: true" in message


def test_not_a_bool_is_refused(corroborating: dict[str, Any]) -> None:
    corroborating["tpu-platform:hotswap"]["computeCorroboration"] = "yes"
    (message,) = problems(corroborating)
    assert message.startswith("tpu-platform:hotswap.computeCorroboration:")


def test_an_adopted_cluster_is_warned_about(corroborating: dict[str, Any]) -> None:
    corroborating["tpu-platform:cluster"] = {"name": "tpu-test", "mode": "adopt"}
    corroborating["tpu-platform:cluster"]["location"] = "us-east5"
    warnings = stack_warnings(parse_stack_config(corroborating)).lines
    assert any(
        w.startswith("tpu-platform:hotswap.computeCorroboration:") and "GKE_METADATA" in w for w in warnings
    )


@pytest.mark.parametrize("cluster", ["a", "tpu-test", "x" * 40, "abcdefghijklmnopqrstu-vwxyz"])
def test_names_fit_the_iam_rules(cluster: str) -> None:
    import re

    assert re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])", iam.account_id(cluster))
    assert 6 <= len(iam.account_id(cluster)) <= 30
    assert re.fullmatch(r"[a-zA-Z0-9_.]{3,64}", iam.role_id(cluster))
    assert re.fullmatch(r"[a-zA-Z0-9_.]{3,64}", iam.operations_role_id(cluster))
    assert iam.role_id(cluster) != iam.operations_role_id(cluster)
    assert 1 <= len(iam.tag_key_short_name(cluster)) <= 63
