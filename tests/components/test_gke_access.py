"""A cluster ``pulumi up`` can reach and deploy into: the endpoint, private networking, maintenance,
project services.

Sources: pulumi-gcp 10.2.0 ``container.ClusterControlPlaneEndpointsConfigDnsEndpointConfigArgs``
(``allow_external_traffic``) and ``ClusterMaintenancePolicyArgs``; GKE's maintenance rules
(https://cloud.google.com/kubernetes-engine/docs/maintenance-window: 48 h in 32 days, windows of at
least 4 h); Kueue's webhook and visibility ports (kueue v0.19.2 ``charts/kueue``) and JobSet's
(jobset v0.12.0 ``charts/jobset/templates/controller/deployment.yaml``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from tpu_platform.components.kubeconfig import render_kubeconfig

from tests.config.stack_problems import only_problem
from tpu_platform.plan import list_stacks, load_stack_config, stack_file

CLUSTER = "gcp:container/cluster:Cluster"


def by_type(rendering: Any, type_: str) -> list[Any]:
    return [r for r in rendering.resources if r.type == type_]


def urn_of(rendering: Any, type_: str) -> str:
    (resource,) = by_type(rendering, type_)
    return str(resource.urn)


def test_created_cluster_is_reached_through_its_dns_endpoint(
    stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    rendering = render_stack(stack)
    (cluster,) = by_type(rendering, CLUSTER)
    assert cluster.inputs["controlPlaneEndpointsConfig"] == {
        "dnsEndpointConfig": {"allowExternalTraffic": True},
        "ipEndpointsConfig": {"enabled": False},  # nobody needs it: no private nodes here
    }
    assert rendering.outputs["controlPlaneAccess"] == "dns"
    assert rendering.outputs["controlPlaneServer"].endswith(".us-east5.gke.goog")


def test_ip_access_uses_the_ip_endpoint(stack: dict[str, Any], render_stack: Callable[..., Any]) -> None:
    stack["tpu-platform:cluster"]["controlPlaneAccess"] = "ip"
    rendering = render_stack(stack)
    (cluster,) = by_type(rendering, CLUSTER)
    assert "controlPlaneEndpointsConfig" not in cluster.inputs
    assert rendering.outputs["controlPlaneServer"] == "https://203.0.113.10"


def test_dns_kubeconfig_pins_no_ca_ip_kubeconfig_does() -> None:
    dns = json.loads(render_kubeconfig("c1", "gke-abc.us-east5.gke.goog", None))["clusters"][0]["cluster"]
    assert dns == {"server": "https://gke-abc.us-east5.gke.goog"}
    ip = json.loads(render_kubeconfig("c1", "203.0.113.1", "Q0E="))["clusters"][0]["cluster"]
    assert ip["certificate-authority-data"] == "Q0E="


def test_ip_endpoint_open_only_to_private_ranges_is_unreachable(stack: dict[str, Any]) -> None:
    stack["tpu-platform:cluster"].update(controlPlaneAccess="ip", masterAuthorizedCidrs=["10.0.0.0/8"])
    message = only_problem(stack)
    assert message.startswith("tpu-platform:cluster.masterAuthorizedCidrs:")
    assert "controlPlaneAccess: dns" in message


def test_private_nodes_get_nat_and_a_webhook_firewall(
    stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    stack["tpu-platform:cluster"]["privateNodes"] = True
    rendering = render_stack(stack)
    (nat,) = by_type(rendering, "gcp:compute/routerNat:RouterNat")
    assert nat.inputs["sourceSubnetworkIpRangesToNat"] == "ALL_SUBNETWORKS_ALL_IP_RANGES"
    (rule,) = by_type(rendering, "gcp:compute/firewall:Firewall")
    assert rule.inputs["allows"] == [{"protocol": "tcp", "ports": ["9443", "8082"]}]
    assert rule.inputs["sourceRanges"] == ["10.128.0.2/32"]  # the control plane's private endpoint
    assert rule.inputs["direction"] == "INGRESS"
    # The installs wait for both: images pull through NAT, webhooks answer through the rule.
    namespaces = [r for r in by_type(rendering, "kubernetes:core/v1:Namespace") if "kueue" in r.name]
    for ns in namespaces:
        assert urn_of(rendering, "gcp:compute/firewall:Firewall") in ns.dependencies
        assert urn_of(rendering, "gcp:compute/routerNat:RouterNat") in ns.dependencies


def test_peered_control_plane_range_is_the_firewall_source(
    stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    stack["tpu-platform:cluster"].update(privateNodes=True, masterIpv4CidrBlock="172.16.0.0/28")
    rendering = render_stack(stack)
    (rule,) = by_type(rendering, "gcp:compute/firewall:Firewall")
    assert rule.inputs["sourceRanges"] == ["172.16.0.0/28"]
    (cluster,) = by_type(rendering, CLUSTER)
    assert cluster.inputs["privateClusterConfig"]["masterIpv4CidrBlock"] == "172.16.0.0/28"


def test_stated_webhook_source_ranges_replace_the_derived_source(
    stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    stack["tpu-platform:cluster"].update(privateNodes=True, webhookSourceRanges=["10.1.2.0/28"])
    (rule,) = by_type(render_stack(stack), "gcp:compute/firewall:Firewall")
    assert rule.inputs["sourceRanges"] == ["10.1.2.0/28"]


def test_existing_nat_creates_none(stack: dict[str, Any], render_stack: Callable[..., Any]) -> None:
    stack["tpu-platform:cluster"].update(privateNodes=True, nat={"mode": "existing", "router": "corp-router"})
    rendering = render_stack(stack)
    assert not by_type(rendering, "gcp:compute/routerNat:RouterNat")
    assert by_type(rendering, "gcp:compute/firewall:Firewall")


@pytest.mark.parametrize(
    ("cluster", "path", "words"),
    [
        ({"privateNodes": True, "nat": {"mode": "none"}}, "cluster.nat.mode", "registry.k8s.io never pull"),
        ({"privateNodes": True, "nat": {"mode": "existing"}}, "cluster.nat.router", "needs the existing"),
        ({"nat": {"mode": "create"}}, "cluster.nat", "need no Cloud NAT"),
        ({"masterIpv4CidrBlock": "172.16.0.0/24"}, "cluster.masterIpv4CidrBlock", "must be a /28"),
        ({"webhookSourceRanges": ["10.1.2.0/28"]}, "cluster.webhookSourceRanges", "only applies to private"),
        (
            {"maintenance": {"window": {"start": "2026-01-03T02:00:00Z", "end": "2026-01-03T04:00:00Z",
                                        "recurrence": "FREQ=DAILY"}}},
            "cluster.maintenance.window.end", "only windows of at least 4 h",
        ),
        (
            {"maintenance": {"window": {"start": "2026-01-03T02:00:00Z", "end": "2026-01-03T07:00:00Z",
                                        "recurrence": "FREQ=WEEKLY;BYDAY=SU"}}},
            "cluster.maintenance.window", "48 h of maintenance in 32 days",
        ),
        (
            {"maintenance": {"window": {"start": "2026-01-03 02:00", "end": "2026-01-03T07:00:00Z",
                                        "recurrence": "FREQ=DAILY"}}},
            "cluster.maintenance.window.start", "not an RFC 3339 UTC time",
        ),
        (
            {"maintenance": {"exclusions": [{"name": "freeze", "start": "2027-01-01T00:00:00Z",
                                             "end": "2027-03-01T00:00:00Z", "scope": "NO_UPGRADES"}]}},
            "cluster.maintenance.exclusions[0].end", "NO_UPGRADES exclusion lasts at most 30 days",
        ),
        (
            {"maintenance": {"exclusions": [{"name": "freeze", "start": "2027-01-02T00:00:00Z",
                                             "end": "2027-01-01T00:00:00Z"}]}},
            "cluster.maintenance.exclusions[0].end", "must be after start",
        ),
    ],
)  # fmt: skip
def test_network_and_maintenance_rules(
    stack: dict[str, Any], cluster: dict[str, Any], path: str, words: str
) -> None:
    stack["tpu-platform:cluster"].update(cluster)
    message = only_problem(stack)
    assert message.startswith(f"tpu-platform:{path}:"), message
    assert words in message, message


def test_auto_upgrade_off_points_to_exclusions(stack: dict[str, Any]) -> None:
    """GKE: "Auto_upgrade cannot be false when release_channel ... is set"."""
    stack["tpu-platform:slicePools"][0]["autoUpgrade"] = False
    message = only_problem(stack)
    assert message.startswith("tpu-platform:slicePools[0].autoUpgrade:")
    assert "maintenance.exclusions" in message and "NO_MINOR_OR_NODE_UPGRADES" in message


def test_maintenance_policy_rendered(stack: dict[str, Any], render_stack: Callable[..., Any]) -> None:
    stack["tpu-platform:cluster"]["maintenance"] = {
        "window": {"start": "2026-01-03T02:00:00Z", "end": "2026-01-03T08:00:00Z",
                   "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU"},
        "exclusions": [{"name": "campaign", "start": "2027-01-04T00:00:00Z", "end": "2027-03-31T00:00:00Z"}],
    }  # fmt: skip
    (cluster,) = by_type(render_stack(stack), CLUSTER)
    policy = cluster.inputs["maintenancePolicy"]
    assert policy["recurringWindow"] == {
        "startTime": "2026-01-03T02:00:00Z",
        "endTime": "2026-01-03T08:00:00Z",
        "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU",
    }
    assert policy["maintenanceExclusions"] == [
        {
            "exclusionName": "campaign",
            "startTime": "2027-01-04T00:00:00Z",
            "endTime": "2027-03-31T00:00:00Z",
            "exclusionOptions": {"scope": "NO_MINOR_OR_NODE_UPGRADES"},
        }
    ]


def test_services_are_enabled_before_the_cluster(
    stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    stack["tpu-platform:cluster"]["enableServices"] = True
    rendering = render_stack(stack)
    services = by_type(rendering, "gcp:projects/service:Service")
    names = {s.inputs["service"] for s in services}
    assert {"container.googleapis.com", "compute.googleapis.com", "iam.googleapis.com"} <= names
    assert all(s.inputs["disableOnDestroy"] is False for s in services)
    (cluster,) = by_type(rendering, CLUSTER)
    container = next(s for s in services if s.inputs["service"] == "container.googleapis.com")
    assert container.urn in cluster.dependencies


@pytest.mark.parametrize("name", ["dev", "prod", "dws"])
def test_example_stacks_are_reachable_and_maintained(name: str, render_stack: Callable[..., Any]) -> None:
    if name not in list_stacks():
        pytest.skip(f"no {name} stack")
    config = load_stack_config(stack_file(name))
    rendering = render_stack(config, name)
    assert rendering.outputs["controlPlaneAccess"] == "dns"
    (cluster,) = by_type(rendering, CLUSTER)
    assert "recurringWindow" in cluster.inputs["maintenancePolicy"]
    if config["tpu-platform:cluster"].get("privateNodes"):
        assert by_type(rendering, "gcp:compute/routerNat:RouterNat")
        assert by_type(rendering, "gcp:compute/firewall:Firewall")


def test_adopted_cluster_can_be_reached_through_its_dns_endpoint(
    stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    """``container.get_cluster`` returns ``control_plane_endpoints_configs[0].dns_endpoint_configs``."""
    stack["tpu-platform:cluster"] = {"name": "tpu-test", "mode": "adopt", "controlPlaneAccess": "dns"}
    rendering = render_stack(stack)
    assert not by_type(rendering, CLUSTER)
    assert rendering.outputs["controlPlaneServer"].startswith("https://gke-")
    stack["tpu-platform:cluster"] = {"name": "tpu-test", "mode": "adopt"}
    assert render_stack(stack).outputs["controlPlaneServer"] == "https://203.0.113.20"


def test_huge_lists_are_capped(stack: dict[str, Any]) -> None:
    stack["tpu-platform:slicePools"] = [{"name": f"p{i}", "topology": "1x1"} for i in range(300)]
    message = only_problem(stack)
    assert message.startswith("tpu-platform:slicePools:") and "at most 256" in message
