"""The ``monitoring`` section: its checks, and what the Monitoring component registers from it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.config.stack_problems import only_problem
from tpu_platform.config.monitoring import prom_seconds
from tpu_platform.monitoring import alert_rules, dashboard
from tpu_platform.plan import parse_stack_config
from tpu_platform.plan.document import normalize

HOTSWAP = {"enabled": True, "image": "us-docker.pkg.dev/p/r/hotswap:1.0"}


def monitoring_children(rendering: Any) -> list[str]:
    return [r.type for r in rendering.resources if "monitoring:Monitoring" in str(r.parent or "")]


def of_type(rendering: Any, type_: str) -> list[dict[str, Any]]:
    return [normalize(r.inputs) for r in rendering.resources if r.type == type_]


def test_defaults_collect_kueue_and_jobset_and_alert(
    stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    rendering = render_stack(stack)
    monitorings = {
        m["metadata"]["namespace"]: m
        for m in of_type(rendering, "kubernetes:monitoring.googleapis.com/v1:PodMonitoring")
    }
    assert set(monitorings) == {"kueue-system", "jobset-system"}
    endpoint = monitorings["kueue-system"]["spec"]["endpoints"][0]
    assert (endpoint["port"], endpoint["scheme"]) == ("metrics", "https")
    assert endpoint["authorization"]["credentials"]["secret"] == {
        "name": "tpu-platform-metrics-scraper-token",
        "key": "token",
    }
    assert (
        monitorings["kueue-system"]["spec"]["selector"]["matchLabels"]["control-plane"]
        == "controller-manager"
    )
    secrets = of_type(rendering, "kubernetes:core/v1:Secret")
    assert {
        s["metadata"]["namespace"] for s in secrets if s.get("type") == "kubernetes.io/service-account-token"
    } == {
        "kueue-system",
        "jobset-system",
    }
    (reader,) = [
        r
        for r in of_type(rendering, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")
        if r["metadata"]["name"] == "tpu-platform:metrics-reader"
    ]
    assert reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    token_roles = [
        r
        for r in of_type(rendering, "kubernetes:rbac.authorization.k8s.io/v1:Role")
        if "token-reader" in r["metadata"]["name"]
    ]
    assert all(r["rules"][0]["resourceNames"] == ["tpu-platform-metrics-scraper-token"] for r in token_roles)
    (rules,) = of_type(rendering, "kubernetes:monitoring.googleapis.com/v1:Rules")
    assert rules["metadata"]["namespace"] == "kueue-system"  # no controller: no controller rules
    (dash,) = of_type(rendering, "gcp:monitoring/dashboard:Dashboard")
    assert "kueue_cluster_queue_resource_usage" in dash["dashboardJson"]
    assert of_type(rendering, "gcp:monitoring/alertPolicy:AlertPolicy") == []
    assert len(monitoring_children(rendering)) == 15  # 2 x 6 scrape objects, reader role, Rules, dashboard


def test_channels_get_one_policy_per_alert(stack: dict[str, Any], render_stack: Callable[..., Any]) -> None:
    stack["tpu-platform:hotswap"] = HOTSWAP
    stack["tpu-platform:monitoring"] = {
        "notificationChannels": [
            {"name": "oncall", "type": "email", "address": "oncall@example.com"},
            {"name": "hook", "type": "webhook", "address": "https://hooks.example.com/x"},
        ],
        "bounds": {"leaderMissing": "90s"},
    }
    rendering = render_stack(stack)
    channels = of_type(rendering, "gcp:monitoring/notificationChannel:NotificationChannel")
    assert sorted((c["type"], json.dumps(c["labels"])) for c in channels) == [
        ("email", '{"email_address": "oncall@example.com"}'),
        ("webhook_tokenauth", '{"url": "https://hooks.example.com/x"}'),
    ]
    policies = {
        p["displayName"].split(": ")[1]: p
        for p in of_type(rendering, "gcp:monitoring/alertPolicy:AlertPolicy")
    }
    assert set(policies) == {
        "KueueWorkloadsPendingTooLong",
        "KueueHighPriorityAdmissionSlow",
        "KueueQueueAtQuota",
        "HotswapNoLeader",
        "HotswapPoolUnhealthyTooLong",
        "HotswapApiErrors",
    }
    leader = policies["HotswapNoLeader"]["conditions"][0]["conditionPrometheusQueryLanguage"]
    assert leader["duration"] == "90s"
    assert 'namespace="tpu-hotswap"' in leader["query"] and 'cluster="' in leader["query"]
    assert len(policies["HotswapNoLeader"]["notificationChannels"]) == 2
    for name, policy in policies.items():
        condition = policy["conditions"][0]
        assert condition["conditionPrometheusQueryLanguage"]["disableMetricValidation"] is True, name
        shown = condition["displayName"] + policy["documentation"]["content"]
        assert "{{" not in shown and "$value" not in shown, (
            f"{name}: Prometheus templates reach Cloud Monitoring"
        )
    pending = policies["KueueWorkloadsPendingTooLong"]["conditions"][0]["displayName"]
    assert pending.startswith("ClusterQueue ${metric.label.cluster_queue} has had workloads pending")
    namespaces = {
        r["metadata"]["namespace"]
        for r in of_type(rendering, "kubernetes:monitoring.googleapis.com/v1:Rules")
    }
    assert namespaces == {"kueue-system", "tpu-hotswap"}


def test_everything_off_registers_nothing(stack: dict[str, Any], render_stack: Callable[..., Any]) -> None:
    stack["tpu-platform:monitoring"] = {
        "kueueMetrics": False,
        "jobsetMetrics": False,
        "alertRules": False,
        "dashboard": False,
    }
    rendering = render_stack(stack)
    assert monitoring_children(rendering) == []


@pytest.mark.parametrize(
    ("section", "path", "needle"),
    [
        ({"bounds": {"pending": "30 minutes"}}, "bounds", "not a Prometheus duration"),
        ({"bounds": {"pending": "0s"}}, "bounds", "not a Prometheus duration"),
        ({"bounds": {"apiErrorRatio": 2}}, "apiErrorRatio", "less than or equal to 1"),
        (
            {"notificationChannels": [{"name": "a", "type": "email", "address": "nobody"}]},
            "address",
            "not an email",
        ),
        (
            {"notificationChannels": [{"name": "a", "type": "pubsub", "address": "alerts"}]},
            "address",
            "projects/PROJECT/topics/TOPIC",
        ),
        (
            {"notificationChannels": [{"name": "a", "type": "webhook", "address": "http://x"}]},
            "address",
            "https://",
        ),
        ({"notificationChannels": [{"name": "a", "type": "sms", "address": "1"}]}, "type", "email"),
        (
            {
                "alertRules": False,
                "notificationChannels": [{"name": "a", "type": "email", "address": "a@b.co"}],
            },
            "notificationChannels",
            "alertRules: true",
        ),
        ({"dashbord": True}, "dashbord", ""),
    ],
)
def test_bad_monitoring_sections_are_rejected(
    stack: dict[str, Any], section: dict[str, Any], path: str, needle: str
) -> None:
    stack["tpu-platform:monitoring"] = section
    problem = only_problem(stack)
    assert problem.startswith("tpu-platform:monitoring") and path in problem and needle in problem, problem


def test_duplicate_channel_names(stack: dict[str, Any]) -> None:
    channel = {"name": "a", "type": "email", "address": "a@b.co"}
    stack["tpu-platform:monitoring"] = {"notificationChannels": [channel, channel]}
    assert "listed twice" in only_problem(stack)


def test_controller_rules_need_its_metrics(stack: dict[str, Any]) -> None:
    stack["tpu-platform:hotswap"] = {**HOTSWAP, "podMonitoring": False}
    assert "hotswap.podMonitoring: true" in only_problem(stack)
    stack["tpu-platform:monitoring"] = {"alertRules": False}
    assert parse_stack_config(stack).monitoring.alert_rules is False


def test_without_cluster_queue_resources_the_quota_alert_and_chart_are_left_out(
    stack: dict[str, Any],
) -> None:
    cfg = parse_stack_config(stack)
    assert "KueueQueueAtQuota" in {r.name for r in alert_rules(cfg)}
    assert any("kueue_cluster_queue_resource_usage" in q for q in dashboard.queries(cfg))
    stack["tpu-platform:kueue"] = {"metrics": {"enableClusterQueueResources": False}}
    cfg = parse_stack_config(stack)
    assert "KueueQueueAtQuota" not in {r.name for r in alert_rules(cfg)}
    assert not any("kueue_cluster_queue" in q for q in dashboard.queries(cfg))
    assert "KueueWorkloadsPendingTooLong" in {r.name for r in alert_rules(cfg)}


@pytest.mark.parametrize(
    ("text", "seconds"), [("5m", 300), ("1h30m", 5400), ("2d", 172800), ("90s", 90), ("1w", 604800)]
)
def test_prometheus_durations(text: str, seconds: int) -> None:
    assert prom_seconds(text) == seconds
