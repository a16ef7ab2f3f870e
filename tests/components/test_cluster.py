"""The GKE cluster component: creation defaults, adoption, and the explicit Kubernetes provider."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tpu_platform.components.kubeconfig import render_kubeconfig

from tpu_platform.plan.document import normalize

CLUSTER = "gcp:container/cluster:Cluster"


def by_type(rendering: Any, type_: str) -> list[Any]:
    return [r for r in rendering.resources if r.type == type_]


def test_created_cluster_is_suited_to_tpu_work(
    stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    (cluster,) = by_type(render_stack(stack), CLUSTER)
    inputs = normalize(cluster.inputs)
    assert inputs["name"] == "tpu-test"
    assert inputs["location"] == "us-east5"
    assert inputs["releaseChannel"] == {"channel": "REGULAR"}
    assert inputs["workloadIdentityConfig"] == {"workloadPool": "test-project.svc.id.goog"}
    assert inputs["removeDefaultNodePool"] is True
    assert inputs["networkingMode"] == "VPC_NATIVE"
    assert inputs["datapathProvider"] == "ADVANCED_DATAPATH"
    assert inputs["monitoringConfig"]["managedPrometheus"] == {"enabled": True}
    assert inputs["deletionProtection"] is True
    assert "privateClusterConfig" not in inputs


def test_private_nodes_and_authorized_networks(
    stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    """With the DNS endpoint, the IP endpoint is the private one only and the networks are
    enforced on it (privateEndpointEnforcementEnabled defaults to false in GKE)."""
    stack["tpu-platform:cluster"].update(privateNodes=True, masterAuthorizedCidrs=["10.0.0.0/8"])
    (cluster,) = by_type(render_stack(stack), CLUSTER)
    assert cluster.inputs["privateClusterConfig"] == {
        "enablePrivateNodes": True,
        "enablePrivateEndpoint": True,
    }
    authorized = cluster.inputs["masterAuthorizedNetworksConfig"]
    assert authorized["cidrBlocks"] == [{"cidrBlock": "10.0.0.0/8", "displayName": "authorized-0"}]
    assert authorized["privateEndpointEnforcementEnabled"] is True


def test_a_public_ip_endpoint_is_kept_on_request(
    stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    stack["tpu-platform:cluster"].update(
        privateNodes=True, ipEndpoint="public", masterAuthorizedCidrs=["203.0.113.0/24"]
    )
    (cluster,) = by_type(render_stack(stack), CLUSTER)
    assert cluster.inputs["privateClusterConfig"]["enablePrivateEndpoint"] is False
    assert "privateEndpointEnforcementEnabled" not in cluster.inputs["masterAuthorizedNetworksConfig"]


def test_system_pool_and_node_service_account(
    stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    rendering = render_stack(stack)
    system = next(r for r in rendering.resources if r.name == "tpu-cluster-system")
    assert system.inputs["nodeLocations"] == ["us-east5-b"]
    assert normalize(system.inputs["nodeCount"]) == 2
    roles = sorted(r.inputs["role"] for r in by_type(rendering, "gcp:projects/iAMMember:IAMMember"))
    assert "roles/logging.logWriter" in roles and "roles/owner" not in roles and "roles/editor" not in roles


def test_given_node_service_account_creates_none(
    stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    stack["tpu-platform:cluster"]["nodeServiceAccount"] = "tpu-nodes@test-project.iam.gserviceaccount.com"
    rendering = render_stack(stack)
    assert by_type(rendering, "gcp:serviceaccount/account:Account") == []
    pool = next(r for r in rendering.resources if r.name == "tpu-train-0")
    assert pool.inputs["nodeConfig"]["serviceAccount"] == "tpu-nodes@test-project.iam.gserviceaccount.com"


def test_adopted_cluster_is_not_managed(stack: dict[str, Any], render_stack: Callable[..., Any]) -> None:
    stack["tpu-platform:cluster"] = {"name": "existing", "mode": "adopt"}
    rendering = render_stack(stack)
    assert by_type(rendering, CLUSTER) == []
    assert by_type(rendering, "gcp:serviceaccount/account:Account") == []
    pool = next(r for r in rendering.resources if r.name == "tpu-train-0")
    assert pool.inputs["cluster"] == "existing"
    assert pool.inputs["location"] == "us-east5"
    assert rendering.outputs["clusterName"] == "existing"


def test_one_explicit_kubernetes_provider_with_secret_kubeconfig(
    stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    rendering = render_stack(stack)
    providers = by_type(rendering, "pulumi:providers:kubernetes")
    assert len(providers) == 1
    assert providers[0].inputs["kubeconfig"] == "[secret]"
    assert rendering.outputs["kubeconfig"] == "[secret]"


def test_kubeconfig_uses_auth_plugin_not_static_credentials() -> None:
    doc = json.loads(render_kubeconfig("c1", "203.0.113.1", "Q0E="))
    user = doc["users"][0]["user"]
    assert user["exec"]["command"] == "gke-gcloud-auth-plugin"
    assert "token" not in user and "client-key-data" not in user
    assert doc["clusters"][0]["cluster"]["server"] == "https://203.0.113.1"
    assert doc["current-context"] == "gke_c1"


def test_upgrade_notifications_and_logging_components(
    stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    """An upgrade recreates a whole slice: GKE's upgrade events go to a Pub/Sub topic of the stack."""
    rendering = render_stack(stack)
    (cluster,) = by_type(rendering, CLUSTER)
    pubsub = cluster.inputs["notificationConfig"]["pubsub"]
    assert pubsub["enabled"] is True
    assert pubsub["filter"] == {"eventTypes": ["UPGRADE_AVAILABLE_EVENT", "UPGRADE_EVENT"]}
    (topic,) = by_type(rendering, "gcp:pubsub/topic:Topic")
    assert topic.inputs["name"] == "tpu-test-gke-upgrades"
    assert cluster.inputs["loggingConfig"] == {"enableComponents": ["SYSTEM_COMPONENTS", "WORKLOADS"]}
    assert cluster.inputs["securityPostureConfig"] == {"mode": "BASIC"}
    stack["tpu-platform:cluster"].update(upgradeNotifications=False, loggingComponents=["SYSTEM_COMPONENTS"])
    rendering = render_stack(stack)
    (cluster,) = by_type(rendering, CLUSTER)
    assert "notificationConfig" not in cluster.inputs
    assert by_type(rendering, "gcp:pubsub/topic:Topic") == []
    assert cluster.inputs["loggingConfig"] == {"enableComponents": ["SYSTEM_COMPONENTS"]}
