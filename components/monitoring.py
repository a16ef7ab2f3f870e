"""``Monitoring``: Kueue's and JobSet's metrics collected by Managed Prometheus, the platform's alert
rules, notification channels and alert policies, and a Cloud Monitoring dashboard, from the stack.

What each object is and why it looks as it does: :mod:`tpu_platform.monitoring` (pure renderers);
this component only registers them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from tpu_platform.config import NotificationChannelConfig, PlatformConfig
from tpu_platform.monitoring import alerts, dashboard, scrape

from .kube_object import KubeObject

CHANNEL_TYPES = {
    "email": ("email", "email_address"),
    "pubsub": ("pubsub", "topic"),
    "webhook": ("webhook_tokenauth", "url"),
}
"""Stack channel type -> (Cloud Monitoring channel type, its label), per notificationChannelDescriptors."""


@dataclass(frozen=True)
class MonitoringArgs:
    config: PlatformConfig
    provider: k8s.Provider
    kueue_ready: Sequence[pulumi.Resource] = field(default_factory=tuple)
    """The Kueue and JobSet installs: their namespaces and pods exist once these are ready."""
    hotswap: Sequence[pulumi.Resource] = field(default_factory=tuple)
    """The controller, whose namespace the controller's Rules live in."""


def _typed(cls: Any, name: str, obj: dict[str, Any], opts: pulumi.ResourceOptions) -> Any:
    """A typed Kubernetes resource from a plain object (the tests check it against the schemas)."""
    fields = {key: value for key, value in obj.items() if key not in ("apiVersion", "kind")}
    if "automountServiceAccountToken" in fields:
        fields["automount_service_account_token"] = fields.pop("automountServiceAccountToken")
    if "roleRef" in fields:
        fields["role_ref"] = fields.pop("roleRef")
    return cls(name, **fields, opts=opts)


class Monitoring(pulumi.ComponentResource):
    """Scraping, alerting and the dashboard of one platform."""

    def __init__(self, name: str, args: MonitoringArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("tpu-platform:monitoring:Monitoring", name, None, opts)
        cfg = args.config
        mon = cfg.monitoring
        k8s_opts = pulumi.ResourceOptions(
            parent=self, provider=args.provider, depends_on=list(args.kueue_ready)
        )
        gmp = cfg.managed_prometheus  # PodMonitoring and Rules need GMP's CRDs on the cluster
        google = not cfg.cluster.reached_by_kubeconfig  # Cloud Monitoring objects are Google resources
        targets = [
            t
            for t, on in ((scrape.KUEUE, mon.kueue_metrics), (scrape.JOBSET, mon.jobset_metrics))
            if on and gmp
        ]
        if targets:
            reader = _typed(
                k8s.rbac.v1.ClusterRole, f"{name}-metrics-reader", scrape.metrics_reader_role(), k8s_opts
            )
            for target in targets:
                self._scrape(f"{name}-{target.name}", target, reader, k8s_opts)
        for obj in alerts.rules_objects(cfg) if gmp else []:
            deps = list(args.kueue_ready) + (
                list(args.hotswap) if obj["metadata"]["name"].endswith("hotswap") else []
            )
            KubeObject(
                f"{name}-{obj['metadata']['name']}",
                obj,
                opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=deps),
            )
        gcp_opts = pulumi.ResourceOptions(parent=self)
        channels = [
            self._channel(f"{name}-channel-{c.name}", cfg, c, gcp_opts)
            for c in (mon.notification_channels if google else [])
        ]
        if channels:
            for rule in alerts.cloud_rules(cfg):
                gcp.monitoring.AlertPolicy(
                    f"{name}-alert-{rule.name}",
                    project=cfg.project,
                    display_name=f"{cfg.cluster.name}: {rule.name}",
                    combiner="OR",
                    severity=alerts.SEVERITY[rule.severity],
                    conditions=[
                        {
                            "display_name": alerts.cloud_text(rule.summary),
                            "condition_prometheus_query_language": {
                                "query": rule.expr,
                                "duration": _seconds(rule.for_),
                                "evaluation_interval": "60s",
                                "alert_rule": rule.name,
                                "rule_group": f"tpu-platform-{rule.source}",
                                "labels": {"severity": rule.severity},
                                # The series appear only once Kueue and the controller export them;
                                # without it, creating the policy before then is refused
                                # (terraform-provider-google v7.44.0 resource_monitoring_alert_policy.go,
                                # disable_metric_validation: "alerting policies to be defined on
                                # metrics that do not yet exist").
                                "disable_metric_validation": True,
                            },
                        }
                    ],
                    documentation={
                        "content": alerts.cloud_text(rule.description),
                        "mime_type": "text/markdown",
                    },
                    notification_channels=[c.id for c in channels],
                    opts=gcp_opts,
                )
        if google and mon.dashboard and dashboard.charts(cfg):
            gcp.monitoring.Dashboard(
                f"{name}-dashboard",
                project=cfg.project,
                dashboard_json=json.dumps(dashboard.dashboard(cfg), sort_keys=True),
                opts=gcp_opts,
            )
        self.register_outputs({})

    def _scrape(self, name: str, target: scrape.Target, reader: Any, opts: pulumi.ResourceOptions) -> None:
        objs = scrape.scrape_objects(target)
        account = _typed(k8s.core.v1.ServiceAccount, f"{name}-scraper", objs["account"], opts)
        token = _typed(
            k8s.core.v1.Secret,
            f"{name}-scraper-token",
            objs["token"],
            pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[account])),
        )
        _typed(
            k8s.rbac.v1.ClusterRoleBinding,
            f"{name}-scraper-reader",
            objs["reader-binding"],
            pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[account, reader])),
        )
        role = _typed(k8s.rbac.v1.Role, f"{name}-scraper-token-reader", objs["token-role"], opts)
        binding = _typed(
            k8s.rbac.v1.RoleBinding,
            f"{name}-scraper-token-reader",
            objs["token-binding"],
            pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[role])),
        )
        KubeObject(
            f"{name}-podmonitoring",
            objs["podmonitoring"],
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[token, binding])),
        )

    @staticmethod
    def _channel(
        name: str, cfg: PlatformConfig, channel: NotificationChannelConfig, opts: pulumi.ResourceOptions
    ) -> gcp.monitoring.NotificationChannel:
        kind, label = CHANNEL_TYPES[channel.type]
        return gcp.monitoring.NotificationChannel(
            name,
            project=cfg.project,
            type=kind,
            display_name=channel.display_name or channel.name,
            labels={label: channel.address},
            opts=opts,
        )


def _seconds(duration: str) -> str:
    """A Prometheus duration as the ``"<n>s"`` Cloud Monitoring's Duration fields take."""
    from tpu_platform.config.monitoring import prom_seconds

    return f"{prom_seconds(duration)}s"
