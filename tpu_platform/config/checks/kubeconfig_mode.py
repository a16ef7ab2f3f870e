"""``cluster.mode: kubeconfig``: what the Kubernetes half alone cannot do, as errors that say what
to set instead.

That mode registers no Google resource and makes no Google API call, so every part of a stack that
would need one is refused rather than silently dropped: a fleet (its workers are GKE clusters the
stack creates), a controller image built into Artifact Registry, Compute Engine corroboration (a
Google service account and its IAM), and Cloud Monitoring's notification channels and dashboard.
"""

from __future__ import annotations

from ..platform import PlatformConfig
from ..problems import Problems


def check_kubeconfig_mode(cfg: PlatformConfig) -> Problems:
    problems = Problems()
    if cfg.fleet is not None:
        if cfg.fleet.manager.cluster.reached_by_kubeconfig:  # workers: check_workers requires create
            problems.add(
                ("fleet", "manager", "cluster", "mode"),
                "a fleet wires MultiKueue between GKE clusters it creates or adopts; mode: kubeconfig is "
                "for one existing cluster: use create or adopt here",
            )
        return problems
    if not cfg.cluster.reached_by_kubeconfig:
        return problems
    hotswap = cfg.hotswap
    if hotswap.enabled and hotswap.image is None:
        problems.add(
            ("hotswap", "image"),
            "mode: kubeconfig builds no image (that needs Artifact Registry); set hotswap.image to a "
            "built controller image, or hotswap.enabled: false",
        )
    if hotswap.enabled and hotswap.compute_corroboration:
        problems.add(
            ("hotswap", "computeCorroboration"),
            "needs a Google service account and IAM, which mode: kubeconfig does not create; set "
            "hotswap.computeCorroboration: false",
        )
    monitoring = cfg.monitoring
    if monitoring.notification_channels:
        problems.add(
            ("monitoring", "notificationChannels"),
            "Cloud Monitoring channels and alert policies are Google resources; remove them with "
            "mode: kubeconfig (the GMP Rules still alert where Managed Prometheus runs)",
        )
    if "dashboard" in monitoring.model_fields_set and monitoring.dashboard:
        problems.add(
            ("monitoring", "dashboard"),
            "a Cloud Monitoring dashboard is a Google resource; remove it with mode: kubeconfig",
        )
    return problems
