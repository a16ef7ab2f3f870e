"""``hotswap.computeCorroboration``: the controller's Google access for Compute Engine corroboration,
rendered under Pulumi mocks. Exactly the two reads and the reset of the fence (only the reads with
``settings.resetSilentVms: false``) in a custom role bound to a service account of the controller's
own, the Workload Identity binding for its Kubernetes service account, the annotation GKE reads, a
node selector for nodes with the GKE metadata server; nothing of it without the opt-in. Sources:
``tpu_platform.hotswap.iam`` (Compute Engine's per-method IAM permissions, GKE's Workload Identity
page)."""

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
EMAIL = "tpu-test-hotswap@test-project.iam.gserviceaccount.com"


@pytest.fixture
def corroborating(stack: dict[str, Any]) -> dict[str, Any]:
    stack["tpu-platform:hotswap"] = {
        "enabled": True,
        "image": "us-docker.pkg.dev/p/r/hotswap:1.0",
        "computeCorroboration": True,
    }
    return stack


def test_the_reads_alone_without_the_fence(
    corroborating: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    corroborating["tpu-platform:hotswap"]["settings"] = {"resetSilentVms": False}
    (role,) = resources_of(render_stack(corroborating), ROLE)
    assert role["permissions"] == ["compute.instances.get", "compute.zoneOperations.list"]


def test_a_custom_role_of_exactly_the_two_reads_and_the_reset(
    corroborating: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    rendering = render_stack(corroborating)
    (role,) = resources_of(rendering, ROLE)
    assert role["permissions"] == [
        "compute.instances.get",
        "compute.zoneOperations.list",
        "compute.instances.reset",
    ]
    assert role["project"] == "test-project"
    assert role["roleId"] == "tpuPlatformHotswapCompute_tpu_test" and "-" not in role["roleId"]
    (gsa,) = [a for a in resources_of(rendering, GSA) if a["accountId"] == "tpu-test-hotswap"]
    assert 6 <= len(gsa["accountId"]) <= 30
    (binding,) = [m for m in resources_of(rendering, PROJECT_MEMBER) if m["role"].endswith(role["roleId"])]
    assert binding == {
        "project": "test-project",
        "role": f"projects/test-project/roles/{role['roleId']}",
        "member": f"serviceAccount:{EMAIL}",
    }
    assert [
        m for m in resources_of(rendering, PROJECT_MEMBER) if m["member"] == f"serviceAccount:{EMAIL}"
    ] == [binding], "no other project role for the controller's account"


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
    assert len(resources_of(rendering, ROLE)) == 1 and len(resources_of(rendering, SA_MEMBER)) == 1
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
