"""The platform's alert rules, from the stack: one list, rendered as GMP ``Rules`` objects, as
Prometheus rule files for ``promtool``, and as Cloud Monitoring PromQL alert conditions.

GMP's rule evaluator scopes a namespaced ``Rules`` object to its own project, location, cluster and
namespace: it adds those matchers to every selector and those labels to every result
(GoogleCloudPlatform/prometheus-engine ``pkg/operator/apis/monitoring/v1/rules_config.go``
``scope``), so the Kueue rules live in Kueue's namespace, the controller's in the controller's, and
no rule sets those labels itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from ..config import PlatformConfig
from ..constants import KUEUE_NAMESPACE, LABEL_PART_OF
from . import metrics as m
from .promql import Scope, sel

Source = Literal["kueue", "hotswap"]
RULES_API = "monitoring.googleapis.com/v1"
GROUP_INTERVAL = "1m"


@dataclass(frozen=True)
class AlertRule:
    name: str
    source: Source
    expr: str
    for_: str
    severity: Literal["page", "ticket"]
    summary: str
    description: str

    def prometheus(self) -> dict[str, Any]:
        """The rule in Prometheus' rule-file format (GMP's ``Rules`` rule has the same fields)."""
        return {
            "alert": self.name,
            "expr": self.expr,
            "for": self.for_,
            "labels": {"severity": self.severity},
            "annotations": {"summary": self.summary, "description": self.description},
        }


def highest_priority(cfg: PlatformConfig) -> str:
    return max(cfg.priorities, key=lambda p: p.value).name


def kueue_rules(cfg: PlatformConfig, scope: Scope) -> list[AlertRule]:
    b = cfg.monitoring.bounds
    pending = f"max by (cluster_queue) ({sel(m.KUEUE_PENDING, scope, status='active')})"
    usage = f"max by (cluster_queue, flavor) ({sel(m.KUEUE_USAGE, scope, resource=m.TPU)})"
    nominal = f"max by (cluster_queue, flavor) ({sel(m.KUEUE_NOMINAL, scope, resource=m.TPU)})"
    top = highest_priority(cfg)
    wait = (
        "histogram_quantile(0.95, sum by (le, cluster_queue) "
        f"(rate({sel(m.KUEUE_ADMISSION_WAIT + '_bucket', scope, priority_class=top)}[1h])))"
    )
    rules = [
        AlertRule(
            "KueueWorkloadsPendingTooLong",
            "kueue",
            f"{pending} > 0",
            b.pending,
            "ticket",
            "ClusterQueue {{ $labels.cluster_queue }} has had workloads pending for " + b.pending,
            "{{ $value }} workload(s) wait in the admission queue. `tpu-platform status` lists them with "
            "priority and time waiting (Kueue's pending-workload metrics carry no priority).",
        ),
        AlertRule(
            "KueueHighPriorityAdmissionSlow",
            "kueue",
            f"{wait} > {b.high_priority_wait_seconds}",
            "5m",
            "page",
            f"{top} work in {{{{ $labels.cluster_queue }}}} waits over "
            f"{b.high_priority_wait_seconds}s for admission",
            'p95 admission wait over the last hour is {{ printf "%.0f" $value }}s.',
        ),
        AlertRule(
            "KueueQueueAtQuota",
            "kueue",
            f"({usage} >= {nominal} and {nominal} > 0) and on (cluster_queue) ({pending} > 0)",
            b.queue_at_quota,
            "ticket",
            "ClusterQueue {{ $labels.cluster_queue }} uses all of its {{ $labels.flavor }} quota with work "
            "pending, for " + b.queue_at_quota,
            "The team's nominal TPU quota is exhausted and workloads wait: more quota, or borrowing "
            "in the cohort.",
        ),
    ]
    if not cfg.kueue.metrics.enable_cluster_queue_resources:
        # Kueue exports usage and nominal quota only with enableClusterQueueResources.
        rules = [r for r in rules if r.name != "KueueQueueAtQuota"]
    return rules


def hotswap_rules(cfg: PlatformConfig, scope: Scope) -> list[AlertRule]:
    b = cfg.monitoring.bounds
    leader = sel(m.HOTSWAP_IS_LEADER, scope)
    failed = f"sum(rate({sel(m.HOTSWAP_API_REQUESTS, scope, code='~' + m.API_FAILURE_CODES)}[5m]))"
    total = f"sum(rate({sel(m.HOTSWAP_API_REQUESTS, scope)}[5m]))"
    return [
        AlertRule(
            "HotswapNoLeader",
            "hotswap",
            f"max({leader}) < 1 or absent({leader})",
            b.leader_missing,
            "page",
            "No hotswap controller replica holds the leader Lease",
            "Failed slices are not tainted or recovered until a replica leads again.",
        ),
        AlertRule(
            "HotswapPoolUnhealthyTooLong",
            "hotswap",
            f"max({sel(m.HOTSWAP_UNHEALTHY_POOLS, scope)}) > 0",
            b.pool_unhealthy,
            "ticket",
            "{{ $value }} slice pool(s) declared unhealthy for " + b.pool_unhealthy,
            "GKE has not repaired the slice in time; `tpu-platform status` names the pool and why.",
        ),
        AlertRule(
            "HotswapApiErrors",
            "hotswap",
            f"{failed} / {total} > {b.api_error_ratio:g}",
            b.api_errors,
            "page",
            "The hotswap controller's Kubernetes API requests fail",
            "{{ $value | humanizePercentage }} of requests got no reply, 401/403, 429 or 5xx.",
        ),
    ]


def alert_rules(cfg: PlatformConfig, scope: Scope | None = None) -> list[AlertRule]:
    """Every alert the stack asks for (Kueue's when its metrics are collected, the controller's when
    it runs), with ``scope`` matchers on every selector."""
    mon = cfg.monitoring
    if not mon.alert_rules:
        return []
    s = dict(scope or {})
    out: list[AlertRule] = []
    if mon.kueue_metrics:
        out += kueue_rules(cfg, s)
    if cfg.hotswap.enabled and cfg.hotswap.pod_monitoring:
        out += hotswap_rules(cfg, s)
    return out


def rule_file(rules: list[AlertRule], group: str = "tpu-platform") -> dict[str, Any]:
    """A Prometheus rule file (``promtool check rules`` / ``test rules``)."""
    return {"groups": [{"name": group, "interval": GROUP_INTERVAL, "rules": [r.prometheus() for r in rules]}]}


def rules_objects(cfg: PlatformConfig) -> list[dict[str, Any]]:
    """GMP ``Rules`` (monitoring.googleapis.com/v1): one per namespace whose metrics its rules read."""
    namespaces = rule_namespaces(cfg)
    out = []
    for source in namespaces:
        rules = [r for r in alert_rules(cfg) if r.source == source]
        if rules:
            out.append(
                {
                    "apiVersion": RULES_API,
                    "kind": "Rules",
                    "metadata": {
                        "name": f"tpu-platform-{source}",
                        "namespace": namespaces[source],
                        "labels": {LABEL_PART_OF: "tpu-platform"},
                    },
                    "spec": rule_file(rules, f"tpu-platform-{source}"),
                }
            )
    return out


def rule_namespaces(cfg: PlatformConfig) -> dict[Source, str]:
    """Where each source's metrics are collected (and its ``Rules`` object lives)."""
    return {"kueue": KUEUE_NAMESPACE, "hotswap": cfg.hotswap.namespace}


def cloud_rules(cfg: PlatformConfig) -> list[AlertRule]:
    """The same rules for Cloud Monitoring alert policies, which see the whole project: every selector
    names this stack's cluster and the namespace the metrics come from, as GMP's scoping would."""
    out: list[AlertRule] = []
    for source, namespace in rule_namespaces(cfg).items():
        scope = {"cluster": cfg.cluster.name, "namespace": namespace}
        out += [r for r in alert_rules(cfg, scope) if r.source == source]
    return out


SEVERITY = {"page": "CRITICAL", "ticket": "WARNING"}
"""Cloud Monitoring ``AlertPolicy.severity`` per rule severity."""

_LABEL = re.compile(r"\{\{\s*\$labels\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_VALUE = re.compile(r"\{\{[^}]*\$value[^}]*\}\}(s\b)?")


def cloud_text(text: str) -> str:
    """A rule's Prometheus template text as Cloud Monitoring documentation shows it.

    Cloud Monitoring fills ``${varname}`` variables, not Go templates, so ``{{ $labels.X }}`` would
    reach the notification literally; it becomes ``${metric.label.X}`` (the labels of the time series
    that met the condition: "Annotate notifications with user-defined documentation",
    https://cloud.google.com/monitoring/alerts/doc-variables). No variable carries a PromQL
    condition's value, so a ``$value`` template becomes words."""
    labelled = _LABEL.sub(lambda m: "${metric.label." + m.group(1) + "}", text)
    return _VALUE.sub(lambda m: "the value" + (" (seconds)" if m.group(1) else ""), labelled)
