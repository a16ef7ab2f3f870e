"""The ``monitoring`` section: what Google Managed Prometheus scrapes, the alert rules and their
bounds, the Cloud Monitoring dashboard and where alerts are sent."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from .base import StackModel, check_dns_label

PROM_DURATION_RE = re.compile(
    r"^(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?$"
)
"""Prometheus' duration format (``model.ParseDuration``, prometheus/common): units largest first."""


def check_prom_duration(value: str, what: str) -> str:
    if not value or not PROM_DURATION_RE.match(value) or value == "0s":
        raise ValueError(f"{what} {value!r} is not a Prometheus duration such as '5m', '1h30m' or '2h'")
    return value


class AlertBoundsConfig(StackModel):
    """How long a condition must hold before its alert fires (Prometheus ``for``)."""

    leader_missing: str = Field("5m", description="No controller replica holds the Lease.")
    pool_unhealthy: str = Field("30m", description="A slice pool stays declared unhealthy.")
    pending: str = Field("30m", description="A ClusterQueue keeps workloads pending.")
    high_priority_wait_seconds: int = Field(
        600, ge=1, description="p95 time the highest priority waits for admission, over an hour."
    )
    queue_at_quota: str = Field(
        "2h", description="A ClusterQueue uses its whole nominal quota with work pending."
    )
    api_errors: str = Field("10m", description="The controller's API requests keep failing.")
    api_error_ratio: float = Field(
        0.05, gt=0, le=1, description="Failed share of the controller's API requests."
    )

    @field_validator("leader_missing", "pool_unhealthy", "pending", "queue_at_quota", "api_errors")
    @classmethod
    def _durations(cls, value: str) -> str:
        return check_prom_duration(value, "bound")


class NotificationChannelConfig(StackModel):
    """A Cloud Monitoring notification channel the alert policies page."""

    name: str = Field(description="Short name; the channel's display name unless displayName is set.")
    type: Literal["email", "pubsub", "webhook"]
    address: str = Field(
        description="email: the address; pubsub: projects/P/topics/T; webhook: an https URL."
    )
    display_name: str | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_dns_label(value, "notification channel name")


class MonitoringConfig(StackModel):
    """Metrics collection, alerting and the dashboard; on by default."""

    managed_prometheus: bool | None = Field(
        None,
        description="Google Managed Prometheus objects (PodMonitoring, Rules) and the metrics scrape "
        "tokens. Default: on, except with cluster.mode: kubeconfig, where the cluster may not run GMP "
        "(its monitoring.googleapis.com CRDs).",
    )
    kueue_metrics: bool = Field(True, description="A PodMonitoring (and its scrape token) for Kueue.")
    jobset_metrics: bool = Field(True, description="A PodMonitoring (and its scrape token) for JobSet.")
    alert_rules: bool = Field(True, description="GMP Rules for Kueue and the controller.")
    dashboard: bool = Field(True, description="A Cloud Monitoring dashboard.")
    bounds: AlertBoundsConfig = AlertBoundsConfig()
    notification_channels: list[NotificationChannelConfig] = Field(
        default_factory=list,
        description="When given, one Cloud Monitoring alert policy per alert rule notifies them.",
    )


_UNIT_SECONDS = {"y": 365 * 86400, "w": 7 * 86400, "d": 86400, "h": 3600, "m": 60, "s": 1}


def prom_seconds(duration: str) -> int:
    """Whole seconds of a Prometheus duration (``ms`` parts are dropped)."""
    total = 0
    for amount, unit in re.findall(r"([0-9]+)(ms|y|w|d|h|m|s)", duration):
        if unit != "ms":
            total += int(amount) * _UNIT_SECONDS[unit]
    return total
