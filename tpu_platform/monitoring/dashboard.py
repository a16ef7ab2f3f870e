"""The Cloud Monitoring dashboard of a stack: every chart a PromQL query over the cluster's metrics.

Layout and widget fields follow the Dashboards API v1 (``mosaicLayout``, ``xyChart``,
``timeSeriesQuery.prometheusQuery``; https://cloud.google.com/monitoring/api/ref_v3/rest/v1/projects.dashboards).
Cloud Monitoring sees every cluster of the project, so each selector names this stack's cluster
(Managed Prometheus adds ``cluster`` to every series it collects).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..config import PlatformConfig
from ..constants import JOBSET_NAMESPACE, KUEUE_NAMESPACE
from . import metrics as m
from .alerts import highest_priority
from .promql import sel

COLUMNS = 48
TILE_W = 24
TILE_H = 16


@dataclass(frozen=True)
class Series:
    query: str
    legend: str
    plot: str = "LINE"


@dataclass(frozen=True)
class Chart:
    title: str
    unit: str
    series: tuple[Series, ...]


def _kueue_preemptions(scope: dict[str, str]) -> Series:
    return Series(
        f"sum by (preempting_cluster_queue, reason) (increase({sel(m.KUEUE_PREEMPTED, scope)}[1h]))",
        "Kueue: ${labels.preempting_cluster_queue} ${labels.reason}",
    )


def _quota_chart(scope: dict[str, str]) -> Chart:
    """Exported by Kueue only with ``enableClusterQueueResources``."""
    return Chart(
        "TPU chips per team: used against nominal",
        "1",
        (
            Series(
                f"max by (cluster_queue) ({sel(m.KUEUE_USAGE, scope, resource=m.TPU)})",
                "${labels.cluster_queue} used",
            ),
            Series(
                f"max by (cluster_queue) ({sel(m.KUEUE_NOMINAL, scope, resource=m.TPU)})",
                "${labels.cluster_queue} nominal",
            ),
        ),
    )


def charts(cfg: PlatformConfig) -> list[Chart]:
    """The dashboard's charts in reading order: slices, recovery, preemptions, queues, pending, controller."""
    c = {"cluster": cfg.cluster.name}
    hot = {**c, "namespace": cfg.hotswap.namespace}
    kq = {**c, "namespace": KUEUE_NAMESPACE}
    out: list[Chart] = []
    if cfg.hotswap.enabled and cfg.hotswap.pod_monitoring:
        out += [
            Chart(
                "Slices by state",
                "1",
                (
                    Series(f"max({sel(m.HOTSWAP_UNHEALTHY_POOLS, hot)})", "declared unhealthy"),
                    Series(
                        f"sum(increase({sel(m.HOTSWAP_DETECTIONS, hot)}[1h]))", "declared in the last hour"
                    ),
                    Series(
                        f"sum(increase({sel(m.HOTSWAP_RECOVERIES, hot)}[1h]))", "recovered in the last hour"
                    ),
                    Series(f"max({sel(m.HOTSWAP_HOLD, hot)})", "mass-outage hold"),
                ),
            ),
            Chart(
                "Slice recovery time",
                "s",
                tuple(
                    Series(
                        f"histogram_quantile({q}, sum by (le) "
                        f"(rate({sel(m.HOTSWAP_RECOVERY_SECONDS + '_bucket', hot)}[6h])))",
                        f"p{int(q * 100)}",
                    )
                    for q in (0.5, 0.95)
                ),
            ),
            Chart(
                "Preemptions",
                "1",
                (
                    Series(
                        f"sum(increase({sel(m.HOTSWAP_PREEMPTIONS, hot)}[1h]))",
                        "hotswap whole-slice preemptions",
                    ),
                    Series(f"sum(increase({sel(m.HOTSWAP_PREEMPTED_SLICES, hot)}[1h]))", "slices freed"),
                )
                + ((_kueue_preemptions(kq),) if cfg.monitoring.kueue_metrics else ()),
            ),
        ]
    elif cfg.monitoring.kueue_metrics:
        out.append(
            Chart(
                "Preemptions",
                "1",
                (_kueue_preemptions(kq),),
            )
        )
    if cfg.monitoring.kueue_metrics:
        top = highest_priority(cfg)
        if cfg.kueue.metrics.enable_cluster_queue_resources:
            out.append(_quota_chart(kq))
        out += [
            Chart(
                "Pending workloads",
                "1",
                (
                    Series(
                        f"max by (cluster_queue, status) ({sel(m.KUEUE_PENDING, kq)})",
                        "${labels.cluster_queue} ${labels.status}",
                        "STACKED_BAR",
                    ),
                ),
            ),
            Chart(
                f"{top}: admission wait p95",
                "s",
                (
                    Series(
                        "histogram_quantile(0.95, sum by (le, cluster_queue) "
                        f"(rate({sel(m.KUEUE_ADMISSION_WAIT + '_bucket', kq, priority_class=top)}[1h])))",
                        "${labels.cluster_queue}",
                    ),
                ),
            ),
        ]
    if cfg.monitoring.jobset_metrics:
        js = {**c, "namespace": JOBSET_NAMESPACE}
        out.append(
            Chart(
                "JobSets finished per hour",
                "1",
                (
                    Series(f"sum(increase({sel(m.JOBSET_COMPLETED, js)}[1h]))", "completed"),
                    Series(f"sum(increase({sel(m.JOBSET_FAILED, js)}[1h]))", "failed"),
                ),
            )
        )
    if cfg.hotswap.enabled and cfg.hotswap.pod_monitoring:
        out.append(
            Chart(
                "Hotswap controller",
                "1",
                (
                    Series(f"max({sel(m.HOTSWAP_IS_LEADER, hot)})", "a replica leads"),
                    Series(
                        f"sum(rate({sel(m.HOTSWAP_API_REQUESTS, hot, code='~' + m.API_FAILURE_CODES)}[5m]))"
                        f" / sum(rate({sel(m.HOTSWAP_API_REQUESTS, hot)}[5m]))",
                        "API request failure ratio",
                    ),
                    Series(
                        f"sum by (result) (rate({sel(m.HOTSWAP_RECONCILES, hot)}[5m]))",
                        "reconciles/s ${labels.result}",
                    ),
                ),
            )
        )
    return out


def queries(cfg: PlatformConfig) -> list[str]:
    """Every PromQL query of the dashboard (what the tests parse and evaluate)."""
    return [s.query for chart in charts(cfg) for s in chart.series]


def dashboard(cfg: PlatformConfig) -> dict[str, Any]:
    """The ``dashboardJson`` of ``gcp.monitoring.Dashboard``."""
    tiles = []
    for i, chart in enumerate(charts(cfg)):
        tiles.append(
            {
                "xPos": (i % 2) * TILE_W,
                "yPos": (i // 2) * TILE_H,
                "width": TILE_W,
                "height": TILE_H,
                "widget": {
                    "title": chart.title,
                    "xyChart": {
                        "dataSets": [
                            {
                                "timeSeriesQuery": {"prometheusQuery": s.query, "unitOverride": chart.unit},
                                "plotType": s.plot,
                                "legendTemplate": s.legend,
                                "minAlignmentPeriod": "60s",
                            }
                            for s in chart.series
                        ],
                        "yAxis": {"scale": "LINEAR"},
                    },
                },
            }
        )
    return {
        "displayName": f"tpu-platform {cfg.cluster.name}",
        "mosaicLayout": {"columns": COLUMNS, "tiles": tiles},
    }
