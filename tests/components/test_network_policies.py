"""The platform namespaces' ingress policies: default deny, webhooks open, metrics from GMP only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tpu_platform.constants import GMP_NAMESPACE, JOBSET_NAMESPACE, KUEUE_NAMESPACE
from tpu_platform.network_policies import platform_namespaces, policies
from tpu_platform.plan.document import normalize

POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"


def _rendered(rendering: Any) -> dict[tuple[str, str], dict[str, Any]]:
    out = {}
    for res in rendering.resources:
        if res.type == POLICY:
            inputs = normalize(res.inputs)
            out[inputs["metadata"]["namespace"], inputs["metadata"]["name"]] = inputs["spec"]
    return out


def test_each_platform_namespace_denies_ingress_but_what_its_controller_serves(
    stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    stack["tpu-platform:hotswap"] = {"enabled": True, "image": "example.com/hotswap:1"}
    found = _rendered(render_stack(stack))
    for ns in (KUEUE_NAMESPACE, JOBSET_NAMESPACE, "tpu-hotswap"):
        deny = found[ns, "tpu-platform-default-deny-ingress"]
        assert deny == {"podSelector": {}, "policyTypes": ["Ingress"]}
        metrics = found[ns, "tpu-platform-allow-metrics"]["ingress"]
        assert metrics[0]["from"] == [
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": GMP_NAMESPACE}}}
        ]
    webhook_ports = {
        p["port"] for p in found[KUEUE_NAMESPACE, "tpu-platform-allow-webhooks"]["ingress"][0]["ports"]
    }
    assert webhook_ports == {9443, 8082}
    assert "from" not in found[JOBSET_NAMESPACE, "tpu-platform-allow-webhooks"]["ingress"][0]
    assert ("tpu-hotswap", "tpu-platform-allow-webhooks") not in found, "the controller serves no webhook"


def test_the_switch_removes_every_policy(stack: dict[str, Any], render_stack: Callable[..., Any]) -> None:
    stack["tpu-platform:cluster"]["networkPolicies"] = False
    assert _rendered(render_stack(stack)) == {}


def test_without_the_controller_its_namespace_gets_no_policy() -> None:
    served = platform_namespaces(None, 9090)
    assert [s.namespace for s in served] == [KUEUE_NAMESPACE, JOBSET_NAMESPACE]
    assert all(p["metadata"]["labels"] for s in served for p in policies(s))
