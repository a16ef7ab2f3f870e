"""Every alert rule tested for real with ``promtool``: ``check rules`` on what GMP and Cloud Monitoring
receive, and ``test rules`` unit tests (series in, alerts out) for each alert, firing and not.

The series are named and labelled as their exporters publish them (see
:mod:`tpu_platform.monitoring.metrics`: kueue v0.19.2 ``pkg/metrics/metrics.go``, the controller's
``tpu_platform/hotswap/adapter/metrics.py``). Bounds are the stack defaults.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.monitoring import promtool
from tpu_platform.config import PlatformConfig
from tpu_platform.monitoring import alert_rules, rule_file, rules_objects
from tpu_platform.monitoring.alerts import cloud_rules
from tpu_platform.plan import list_stacks, load_stack_config, parse_stack_config
from tpu_platform.plan.stacks import stack_file

CQ = 'cluster_queue="research-cq",replica_role="leader"'
WAIT = "kueue_admission_wait_time_seconds_bucket"
TPU_CQ = 'cohort="dev",flavor="tpu-v6e-4x4",resource="google.com/tpu"'
AT_QUOTA = "ClusterQueue research-cq uses all of its tpu-v6e-4x4 quota with work pending, for 2h"
AT_QUOTA_WHY = (
    "The team's nominal TPU quota is exhausted and workloads wait: more quota, or borrowing in the cohort."
)
UNREPAIRED = "GKE has not repaired the slice in time; `tpu-platform status` names the pool and why."


def dev() -> PlatformConfig:
    return parse_stack_config(load_stack_config(stack_file("dev")))


def alert(name: str, at: str, *expected: dict[str, Any]) -> dict[str, Any]:
    return {"eval_time": at, "alertname": name, "exp_alerts": list(expected)}


def fired(labels: dict[str, str], summary: str, description: str) -> dict[str, Any]:
    return {"exp_labels": labels, "exp_annotations": {"summary": summary, "description": description}}


PENDING_DESCRIPTION = (
    "{n} workload(s) wait in the admission queue. `tpu-platform status` lists them with priority and time "
    "waiting (Kueue's pending-workload metrics carry no priority)."
)

SCENARIOS: dict[str, list[dict[str, Any]]] = {
    "KueueWorkloadsPendingTooLong": [
        {
            "interval": "1m",
            "input_series": [
                # two replicas report the same gauge (replica_role): max, not sum
                {
                    "series": f'kueue_pending_workloads{{{CQ},status="active",pod="kueue-a"}}',
                    "values": "3x60",
                },
                {
                    "series": f'kueue_pending_workloads{{{CQ},status="active",pod="kueue-b"}}',
                    "values": "3x60",
                },
                {
                    "series": f'kueue_pending_workloads{{{CQ},status="inadmissible",pod="kueue-a"}}',
                    "values": "9x60",
                },
                {
                    "series": 'kueue_pending_workloads{cluster_queue="idle-cq",status="active"}',
                    "values": "0x60",
                },
                {
                    "series": 'kueue_pending_workloads{cluster_queue="brief-cq",status="active"}',
                    "values": "2x10 0x50",
                },
            ],
            "alert_rule_test": [
                alert("KueueWorkloadsPendingTooLong", "20m"),
                alert(
                    "KueueWorkloadsPendingTooLong",
                    "45m",
                    fired(
                        {"cluster_queue": "research-cq", "severity": "ticket"},
                        "ClusterQueue research-cq has had workloads pending for 30m",
                        PENDING_DESCRIPTION.format(n=3),
                    ),
                ),
            ],
        }
    ],
    "KueueHighPriorityAdmissionSlow": [
        {
            "interval": "1m",
            "input_series": [
                *(
                    {
                        "series": f'{WAIT}{{{CQ},priority_class="{pc}",le="{le}"}}',
                        "values": values,
                    }
                    for pc in ("high-priority-job", "low-priority-job")
                    for le, values in (
                        ("60", "0x90"),
                        ("600", "0x90"),
                        ("1000", "0+1x90"),
                        ("+Inf", "0+1x90"),
                    )
                ),
            ],
            "alert_rule_test": [
                alert("KueueHighPriorityAdmissionSlow", "2m"),
                alert(
                    "KueueHighPriorityAdmissionSlow",
                    "80m",
                    fired(
                        {"cluster_queue": "research-cq", "severity": "page"},
                        "high-priority-job work in research-cq waits over 600s for admission",
                        "p95 admission wait over the last hour is 980s.",
                    ),
                ),
            ],
        },
        {
            "interval": "1m",
            "input_series": [
                {
                    "series": f'{WAIT}{{{CQ},priority_class="high-priority-job",le="{le}"}}',
                    "values": values,
                }
                for le, values in (("60", "0+1x90"), ("600", "0+1x90"), ("+Inf", "0+1x90"))
            ],
            "alert_rule_test": [alert("KueueHighPriorityAdmissionSlow", "80m")],
        },
    ],
    "KueueQueueAtQuota": [
        {
            "interval": "1m",
            "input_series": [
                *(
                    {
                        "series": f'{metric}{{{TPU_CQ},cluster_queue="{cq}"}}',
                        "values": v,
                    }
                    for metric, cq, v in (
                        ("kueue_cluster_queue_resource_usage", "research-cq", "32x200"),
                        ("kueue_cluster_queue_nominal_quota", "research-cq", "32x200"),
                        ("kueue_cluster_queue_resource_usage", "applied-cq", "16x200"),
                        ("kueue_cluster_queue_nominal_quota", "applied-cq", "16x200"),
                        ("kueue_cluster_queue_resource_usage", "empty-cq", "0x200"),
                        ("kueue_cluster_queue_nominal_quota", "empty-cq", "0x200"),
                        ("kueue_cluster_queue_resource_usage", "roomy-cq", "16x200"),
                        ("kueue_cluster_queue_nominal_quota", "roomy-cq", "32x200"),
                    )
                ),
                # the team at quota with work waiting; applied-cq at quota with nothing waiting
                {
                    "series": 'kueue_pending_workloads{cluster_queue="research-cq",status="active"}',
                    "values": "2x200",
                },
                {
                    "series": 'kueue_pending_workloads{cluster_queue="applied-cq",status="active"}',
                    "values": "0x200",
                },
                {
                    "series": 'kueue_pending_workloads{cluster_queue="empty-cq",status="active"}',
                    "values": "5x200",
                },
                {
                    "series": 'kueue_pending_workloads{cluster_queue="roomy-cq",status="active"}',
                    "values": "5x200",
                },
            ],
            "alert_rule_test": [
                alert("KueueQueueAtQuota", "100m"),
                alert(
                    "KueueQueueAtQuota",
                    "130m",
                    fired(
                        {"cluster_queue": "research-cq", "flavor": "tpu-v6e-4x4", "severity": "ticket"},
                        AT_QUOTA,
                        AT_QUOTA_WHY,
                    ),
                ),
            ],
        }
    ],
    "HotswapNoLeader": [
        {
            "interval": "1m",
            "input_series": [
                {"series": 'hotswap_is_leader{pod="hotswap-a"}', "values": "1x5 0x20"},
                {"series": 'hotswap_is_leader{pod="hotswap-b"}', "values": "0x25"},
            ],
            "alert_rule_test": [
                alert("HotswapNoLeader", "4m"),
                alert("HotswapNoLeader", "9m"),
                alert(
                    "HotswapNoLeader",
                    "15m",
                    fired(
                        {"severity": "page"},
                        "No hotswap controller replica holds the leader Lease",
                        "Failed slices are not tainted or recovered until a replica leads again.",
                    ),
                ),
            ],
        },
        {
            # no replica reports at all (none running, or not scraped)
            "interval": "1m",
            "input_series": [{"series": 'hotswap_unhealthy_pools{pod="x"}', "values": "0x20"}],
            "alert_rule_test": [
                alert(
                    "HotswapNoLeader",
                    "10m",
                    fired(
                        {"severity": "page"},
                        "No hotswap controller replica holds the leader Lease",
                        "Failed slices are not tainted or recovered until a replica leads again.",
                    ),
                )
            ],
        },
        {
            # a leader hand-over: one replica stops leading as the other takes over
            "interval": "1m",
            "input_series": [
                {"series": 'hotswap_is_leader{pod="hotswap-a"}', "values": "1x10 0x20"},
                {"series": 'hotswap_is_leader{pod="hotswap-b"}', "values": "0x10 1x20"},
            ],
            "alert_rule_test": [alert("HotswapNoLeader", "25m")],
        },
    ],
    "HotswapPoolUnhealthyTooLong": [
        {
            "interval": "1m",
            "input_series": [
                {"series": 'hotswap_unhealthy_pools{pod="hotswap-a"}', "values": "0x5 1x50"},
                {"series": 'hotswap_unhealthy_pools{pod="hotswap-b"}', "values": "0x5 1x50"},
            ],
            "alert_rule_test": [
                alert("HotswapPoolUnhealthyTooLong", "30m"),
                alert(
                    "HotswapPoolUnhealthyTooLong",
                    "40m",
                    fired(
                        {"severity": "ticket"},
                        "1 slice pool(s) declared unhealthy for 30m",
                        UNREPAIRED,
                    ),
                ),
            ],
        },
        {
            # recovered after 20 minutes: never alerts
            "interval": "1m",
            "input_series": [{"series": 'hotswap_unhealthy_pools{pod="hotswap-a"}', "values": "1x20 0x40"}],
            "alert_rule_test": [alert("HotswapPoolUnhealthyTooLong", "35m")],
        },
    ],
    "HotswapApiErrors": [
        {
            "interval": "1m",
            "input_series": [
                {
                    "series": 'hotswap_api_requests_total{verb="list",resource="pods",code="200"}',
                    "values": "0+10x40",
                },
                {
                    "series": 'hotswap_api_requests_total{verb="patch",resource="nodes",code="500"}',
                    "values": "0+5x40",
                },
            ],
            "alert_rule_test": [
                alert("HotswapApiErrors", "8m"),
                alert(
                    "HotswapApiErrors",
                    "25m",
                    fired(
                        {"severity": "page"},
                        "The hotswap controller's Kubernetes API requests fail",
                        "33.33% of requests got no reply, 401/403, 429 or 5xx.",
                    ),
                ),
            ],
        },
        {
            # conflicts and vanished objects are how a controller races the cluster: no alert
            "interval": "1m",
            "input_series": [
                {
                    "series": 'hotswap_api_requests_total{verb="list",resource="pods",code="200"}',
                    "values": "0+10x40",
                },
                {
                    "series": 'hotswap_api_requests_total{verb="patch",resource="nodes",code="409"}',
                    "values": "0+5x40",
                },
                {
                    "series": 'hotswap_api_requests_total{verb="evict",resource="pods",code="404"}',
                    "values": "0+5x40",
                },
            ],
            "alert_rule_test": [alert("HotswapApiErrors", "25m")],
        },
        {
            # no reply at all (status 0) counts
            "interval": "1m",
            "input_series": [
                {
                    "series": 'hotswap_api_requests_total{verb="watch",resource="pods",code="0"}',
                    "values": "0+1x40",
                },
            ],
            "alert_rule_test": [
                alert(
                    "HotswapApiErrors",
                    "25m",
                    fired(
                        {"severity": "page"},
                        "The hotswap controller's Kubernetes API requests fail",
                        "100% of requests got no reply, 401/403, 429 or 5xx.",
                    ),
                )
            ],
        },
    ],
}


def test_every_alert_has_a_unit_test() -> None:
    assert sorted(r.name for r in alert_rules(dev())) == sorted(SCENARIOS)


@pytest.mark.parametrize("stack", list_stacks())
def test_promtool_accepts_the_rules_of_every_stack(stack: str, tmp_path: Path) -> None:
    cfg = parse_stack_config(load_stack_config(stack_file(stack)))
    for i, obj in enumerate(rules_objects(cfg)):
        result = promtool.check_rules(tmp_path, obj["spec"])
        assert result.returncode == 0, f"Rules {i}: {result.stdout}{result.stderr}"
    scoped = cloud_rules(cfg)
    if scoped:
        result = promtool.check_rules(tmp_path, rule_file(scoped))
        assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_alert_fires_on_its_series_and_only_then(name: str, tmp_path: Path) -> None:
    rules = [r for r in alert_rules(dev()) if r.name == name]
    result = promtool.unit_test_rules(tmp_path, rule_file(rules), SCENARIOS[name])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout + result.stderr


def test_a_wrong_expectation_fails(tmp_path: Path) -> None:
    """The harness can fail: the pending alert does not fire before its bound."""
    rules = [r for r in alert_rules(dev()) if r.name == "KueueWorkloadsPendingTooLong"]
    scenario = dict(SCENARIOS["KueueWorkloadsPendingTooLong"][0])
    early = [
        alert(
            "KueueWorkloadsPendingTooLong",
            "20m",
            fired({"cluster_queue": "research-cq", "severity": "ticket"}, "x", "y"),
        )
    ]
    result = promtool.unit_test_rules(tmp_path, rule_file(rules), [{**scenario, "alert_rule_test": early}])
    assert result.returncode != 0
