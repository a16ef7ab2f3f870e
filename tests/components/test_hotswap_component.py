"""The HotswapController component: least-privilege RBAC, a hardened pod, settings from the stack."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from tpu_platform.config import StackConfigError
from tpu_platform.plan import parse_stack_config
from tpu_platform.plan.document import normalize

# Exactly the calls the adapter makes (tpu_platform/hotswap/adapter/access.py; checked against the
# real adapter on the wire by tests/hotswap/adapter/test_access.py). The failure model's table also
# lists reads of Kueue objects, PriorityClasses and PDBs, and core events: none is ever made.
REFERENCE_CLUSTER_RULES = {
    ("", "nodes"): {"list", "watch", "patch"},
    ("", "pods"): {"list", "watch", "delete"},
    ("", "pods/eviction"): {"create"},
    ("jobset.x-k8s.io", "jobsets"): {"list", "watch", "patch"},
    ("batch", "jobs"): {"list", "watch"},
    ("events.k8s.io", "events"): {"create"},
}


@pytest.fixture
def hotswap_stack(stack: dict[str, Any]) -> dict[str, Any]:
    stack["tpu-platform:hotswap"] = {
        "enabled": True,
        "image": "us-docker.pkg.dev/p/r/hotswap:1.0",
        "settings": {"unhealthyAfterSeconds": 12, "preemption": False},
    }
    return stack


def resources_of(rendering: Any, type_: str) -> list[dict[str, Any]]:
    """The controller's resources of a type (the Monitoring component's scrape RBAC left out)."""
    return [
        normalize(r.inputs)
        for r in rendering.resources
        if r.type == type_ and "monitoring:Monitoring" not in str(r.parent or "")
    ]


def grants(rules: list[dict[str, Any]]) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    for rule in rules:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                out.setdefault((group, resource), set()).update(rule["verbs"])
    return out


def test_cluster_role_is_exactly_the_reference_table(
    hotswap_stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    rendering = render_stack(hotswap_stack)
    (role,) = resources_of(rendering, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")
    granted = grants(role["rules"])
    assert granted == REFERENCE_CLUSTER_RULES
    assert not any("secrets" in resource or "*" in resource for _, resource in granted)
    assert not any("*" in verbs for verbs in granted.values())


def test_leases_only_in_own_namespace(
    hotswap_stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    rendering = render_stack(hotswap_stack)
    (role,) = resources_of(rendering, "kubernetes:rbac.authorization.k8s.io/v1:Role")
    assert role["metadata"]["namespace"] == "tpu-hotswap"
    assert grants(role["rules"]) == {("coordination.k8s.io", "leases"): {"get", "create", "update"}}
    bindings = resources_of(rendering, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding")
    assert [b["roleRef"]["name"] for b in bindings] == ["tpu-platform:hotswap-controller"]
    assert bindings[0]["subjects"] == [
        {"kind": "ServiceAccount", "name": "hotswap-controller", "namespace": "tpu-hotswap"}
    ]


def test_pod_is_hardened(hotswap_stack: dict[str, Any], render_stack: Callable[..., Any]) -> None:
    rendering = render_stack(hotswap_stack)
    (deployment,) = resources_of(rendering, "kubernetes:apps/v1:Deployment")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == "us-docker.pkg.dev/p/r/hotswap:1.0"
    security = container["securityContext"]
    assert security["runAsNonRoot"] is True and security["runAsUser"] != 0
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}
    assert "privileged" not in security
    assert pod.get("hostNetwork") is None and pod.get("hostPID") is None
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["resources"]["limits"]["memory"] == "1Gi"
    assert {p["name"] for p in container["ports"]} == {"metrics", "health"}
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert mounts["/etc/hotswap"]["readOnly"] is True and "/tmp" in mounts
    assert deployment["spec"]["replicas"] == 2
    assert pod["serviceAccountName"] == "hotswap-controller"


def test_config_map_carries_stack_settings(
    hotswap_stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    from tpu_platform.hotswap.adapter.config import config_from_mapping

    rendering = render_stack(hotswap_stack)
    (config_map,) = resources_of(rendering, "kubernetes:core/v1:ConfigMap")
    document = yaml.safe_load(config_map["data"]["config.yaml"])
    loaded = config_from_mapping(document)
    assert loaded.settings.unhealthy_after_seconds == 12
    assert loaded.settings.preemption is False
    assert loaded.runtime.dry_run is False
    (deployment,) = resources_of(rendering, "kubernetes:apps/v1:Deployment")
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    assert len(annotations["tpu-platform.dev/config-sha256"]) == 16


def test_settings_change_rolls_the_pods(
    hotswap_stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    def config_hash(stack: dict[str, Any]) -> str:
        (deployment,) = resources_of(render_stack(stack), "kubernetes:apps/v1:Deployment")
        return str(
            deployment["spec"]["template"]["metadata"]["annotations"]["tpu-platform.dev/config-sha256"]
        )

    before = config_hash(hotswap_stack)
    hotswap_stack["tpu-platform:hotswap"]["settings"]["unhealthyAfterSeconds"] = 20
    assert config_hash(hotswap_stack) != before


def test_metrics_service_pod_monitoring_and_pdb(
    hotswap_stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    rendering = render_stack(hotswap_stack)
    (monitoring,) = resources_of(rendering, "kubernetes:monitoring.googleapis.com/v1:PodMonitoring")
    assert monitoring["spec"]["endpoints"] == [{"port": "metrics", "path": "/metrics", "interval": "30s"}]
    (service,) = resources_of(rendering, "kubernetes:core/v1:Service")
    assert service["spec"]["ports"][0]["targetPort"] == "metrics"
    (pdb,) = resources_of(rendering, "kubernetes:policy/v1:PodDisruptionBudget")
    assert pdb["spec"]["minAvailable"] == 1


def test_single_replica_has_no_pdb(hotswap_stack: dict[str, Any], render_stack: Callable[..., Any]) -> None:
    hotswap_stack["tpu-platform:hotswap"]["replicas"] = 1
    assert resources_of(render_stack(hotswap_stack), "kubernetes:policy/v1:PodDisruptionBudget") == []


def test_everything_uses_the_cluster_provider_and_waits_for_installs(
    hotswap_stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    rendering = render_stack(hotswap_stack)
    controller = [r for r in rendering.resources if r.type.startswith("kubernetes:") and "hotswap" in r.name]
    assert len(controller) >= 9
    assert {r.provider for r in controller} == {"pulumi:providers:kubernetes::tpu-cluster-k8s"}
    namespace = next(r for r in controller if r.type == "kubernetes:core/v1:Namespace")
    assert any("Chart::" in dep for dep in namespace.dependencies)


def test_built_image_when_none_given(stack: dict[str, Any], render_stack: Callable[..., Any]) -> None:
    from tpu_platform.components.hotswap_image import source_digest

    stack["tpu-platform:hotswap"] = {"enabled": True}
    rendering = render_stack(stack)
    (image,) = resources_of(rendering, "docker-build:index:Image")
    assert image["push"] is True
    assert image["tags"] == [f"us-east5-docker.pkg.dev/test-project/tpu-platform/hotswap:{source_digest()}"]
    assert image["registries"][0]["password"] == "[secret]"
    (deployment,) = resources_of(rendering, "kubernetes:apps/v1:Deployment")
    ref = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    assert ref.startswith(image["tags"][0] + "@sha256:")


def test_disabled_creates_nothing(stack: dict[str, Any], render_stack: Callable[..., Any]) -> None:
    rendering = render_stack(stack)
    assert not [r for r in rendering.resources if "hotswap" in r.type.lower() or "hotswap" in r.name]


def test_source_digest_tracks_content(tmp_path: Any) -> None:
    from tpu_platform.components.hotswap_image import source_digest

    (tmp_path / "a.py").write_text("x = 1\n")
    first = source_digest(tmp_path)
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"junk")
    assert source_digest(tmp_path) == first
    (tmp_path / "a.py").write_text("x = 2\n")
    assert source_digest(tmp_path) != first


def problems(stack: dict[str, Any]) -> list[str]:
    with pytest.raises(StackConfigError) as err:
        parse_stack_config(stack)
    return err.value.problems


def test_bad_setting_names_the_stack_path(hotswap_stack: dict[str, Any]) -> None:
    hotswap_stack["tpu-platform:hotswap"]["settings"] = {"unhealthyAfterSecs": 5}
    (message,) = problems(hotswap_stack)
    assert message.startswith("tpu-platform:hotswap.settings.unhealthyAfterSecs:")
    assert "tpu_platform/hotswap/README.md" in message


def test_bad_setting_value(hotswap_stack: dict[str, Any]) -> None:
    hotswap_stack["tpu-platform:hotswap"]["settings"] = {"unhealthyAfterSeconds": -3}
    (message,) = problems(hotswap_stack)
    assert message.startswith("tpu-platform:hotswap.settings.unhealthyAfterSeconds:")


def test_image_and_build_are_exclusive(hotswap_stack: dict[str, Any]) -> None:
    hotswap_stack["tpu-platform:hotswap"]["build"] = {"repository": "r"}
    (message,) = problems(hotswap_stack)
    assert message.startswith("tpu-platform:hotswap.build:") and "not both" in message


def test_image_reference_checked(hotswap_stack: dict[str, Any]) -> None:
    hotswap_stack["tpu-platform:hotswap"]["image"] = "hotswap latest"
    (message,) = problems(hotswap_stack)
    assert message.startswith("tpu-platform:hotswap.image:")


@pytest.mark.parametrize("namespace", ["kube-system", "kueue-system"])
def test_namespace_must_be_its_own(hotswap_stack: dict[str, Any], namespace: str) -> None:
    hotswap_stack["tpu-platform:hotswap"]["namespace"] = namespace
    (message,) = problems(hotswap_stack)
    assert message.startswith("tpu-platform:hotswap.namespace:")


def test_namespace_not_shared_with_a_team(hotswap_stack: dict[str, Any]) -> None:
    hotswap_stack["tpu-platform:teams"] = [
        {"name": "tpu-hotswap", "quota": [{"topology": "4x4", "slices": 1}]}
    ]
    assert any(
        p.startswith("tpu-platform:hotswap.namespace:") and "team" in p for p in problems(hotswap_stack)
    )


ROLE = "kubernetes:rbac.authorization.k8s.io/v1:Role"
ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"


def in_namespace(rendering: Any, type_: str, namespace: str) -> list[dict[str, Any]]:
    return [r for r in resources_of(rendering, type_) if r["metadata"]["namespace"] == namespace]


def test_no_node_lease_access_while_the_lease_signal_is_off(
    hotswap_stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    hotswap_stack["tpu-platform:hotswap"]["settings"]["leaseStaleSeconds"] = 0
    rendering = render_stack(hotswap_stack)
    assert in_namespace(rendering, ROLE, "kube-node-lease") == []
    assert in_namespace(rendering, ROLE_BINDING, "kube-node-lease") == []
    assert [r["metadata"]["namespace"] for r in resources_of(rendering, ROLE)] == ["tpu-hotswap"]


def test_lease_signal_on_grants_read_on_node_leases_only(
    hotswap_stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    from tpu_platform.hotswap.adapter.config import config_from_mapping

    hotswap_stack["tpu-platform:hotswap"]["settings"]["leaseStaleSeconds"] = 20
    rendering = render_stack(hotswap_stack)
    (role,) = in_namespace(rendering, ROLE, "kube-node-lease")
    assert grants(role["rules"]) == {("coordination.k8s.io", "leases"): {"list", "watch"}}
    (binding,) = in_namespace(rendering, ROLE_BINDING, "kube-node-lease")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "hotswap-controller", "namespace": "tpu-hotswap"}
    ]
    (own,) = in_namespace(rendering, ROLE, "tpu-hotswap")
    assert grants(own["rules"]) == {("coordination.k8s.io", "leases"): {"get", "create", "update"}}
    (cluster_role,) = resources_of(rendering, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")
    assert grants(cluster_role["rules"]) == REFERENCE_CLUSTER_RULES
    (config_map,) = resources_of(rendering, "kubernetes:core/v1:ConfigMap")
    loaded = config_from_mapping(yaml.safe_load(config_map["data"]["config.yaml"]))
    assert loaded.settings.lease_stale_seconds == 20


def test_lease_signal_below_two_renewals_is_refused(hotswap_stack: dict[str, Any]) -> None:
    hotswap_stack["tpu-platform:hotswap"]["settings"] = {"leaseStaleSeconds": 15}
    (message,) = problems(hotswap_stack)
    assert message.startswith("tpu-platform:hotswap.settings.leaseStaleSeconds:")
    assert ">= 20" in message


VAP = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
VAP_BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"


def test_admission_policies_guard_the_controllers_state_for_its_own_account_only(
    hotswap_stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    """Their CEL is evaluated on realistic requests in tests/hotswap/test_admission.py; here:
    rendered, bound with Deny, and naming the service account the stack actually creates."""
    from tpu_platform.hotswap import admission

    hotswap_stack["tpu-platform:hotswap"]["namespace"] = "hotswap-x"
    rendering = render_stack(hotswap_stack)
    policies = {p["metadata"]["name"]: p for p in resources_of(rendering, VAP)}
    bindings = {b["metadata"]["name"]: b for b in resources_of(rendering, VAP_BINDING)}
    expected = admission.state_policies(admission.service_account_user("hotswap-x", "hotswap-controller"))
    assert set(policies) == set(bindings) == {p.name for p in expected}
    for p in expected:
        assert policies[p.name]["spec"] == p.policy_spec
        assert bindings[p.name]["spec"] == {"policyName": p.name, "validationActions": ["Deny"]}
        assert "system:serviceaccount:hotswap-x:hotswap-controller" in json.dumps(policies[p.name])
    (account,) = resources_of(rendering, "kubernetes:core/v1:ServiceAccount")
    assert (account["metadata"]["namespace"], account["metadata"]["name"]) == (
        "hotswap-x",
        "hotswap-controller",
    )


def test_opt_out_is_granted_per_team_namespace(
    hotswap_stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    """preemptible: "false" is honoured only where the stack says so, and only for its teams."""
    hotswap_stack["tpu-platform:teams"] = [{"name": "research", "quota": [{"topology": "4x4", "slices": 1}]}]
    hotswap_stack["tpu-platform:hotswap"]["settings"]["optOutNamespaces"] = ["research", "elsewhere"]
    (message,) = problems(hotswap_stack)
    assert message.startswith("tpu-platform:hotswap.settings.optOutNamespaces[1]:")
    assert "'elsewhere' is no team's namespace" in message
    hotswap_stack["tpu-platform:hotswap"]["settings"]["optOutNamespaces"] = ["research"]
    (config_map,) = resources_of(render_stack(hotswap_stack), "kubernetes:core/v1:ConfigMap")
    assert yaml.safe_load(config_map["data"]["config.yaml"])["opt_out_namespaces"] == ["research"]
