"""``cluster.mode: kubeconfig``: what the Kubernetes half alone cannot do, as errors that say what
to set instead.

That mode registers no Google resource of its own accord and makes no Google API call, so every part
of a stack that would need one is refused rather than silently dropped: a fleet (its workers are GKE
clusters the stack creates), a controller image built into Artifact Registry, and Cloud Monitoring's
notification channels and dashboard. Compute Engine corroboration needs a Google identity: on a GKE
cluster the stack names it (``hotswap.googleIdentity``), and without one corroboration is refused
with what the controller then loses. ``googleIdentity`` itself belongs to this mode alone: the other
modes create the controller's own service account.
"""

from __future__ import annotations

from ..platform import PlatformConfig
from ..problems import Problems

WITHOUT_CORROBORATION = (
    "without it the controller never force-deletes a silent node's pods nor resets a silent VM, so a "
    "high-priority JobSet hit by a silent host death waits for GKE's repair, as with no controller "
    "(`tpu-platform whatif STACK` prints both recoveries for the stack)"
)
"""What a controller without Compute Engine corroboration loses, in the words every message uses."""


def check_kubeconfig_mode(cfg: PlatformConfig) -> Problems:
    problems = Problems()
    _identity_outside_the_mode(cfg, problems)
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
    if hotswap.enabled and hotswap.compute_corroboration and hotswap.google_identity is None:
        problems.add(
            ("hotswap", "computeCorroboration"),
            "needs a Google identity, which mode: kubeconfig does not create: on a GKE cluster name one "
            "with hotswap.googleIdentity {serviceAccount: EMAIL, manage: true (the stack registers its "
            "access) or false (validate prints the gcloud commands)}; elsewhere set "
            f"hotswap.computeCorroboration: false, and {WITHOUT_CORROBORATION}",
        )
    if hotswap.google_identity is not None and not hotswap.compute_corroboration:
        problems.add(
            ("hotswap", "googleIdentity"),
            "names the account Compute Engine corroboration acts as, and corroboration is off: set "
            "hotswap.computeCorroboration: true, or remove googleIdentity",
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


def _identity_outside_the_mode(cfg: PlatformConfig, problems: Problems) -> None:
    """``googleIdentity`` where the stack creates the controller's service account itself."""
    if cfg.hotswap.google_identity is None or (cfg.fleet is None and cfg.cluster.reached_by_kubeconfig):
        return
    mode = "a fleet's workers" if cfg.fleet is not None else f"mode: {cfg.cluster.mode}"
    problems.add(
        ("hotswap", "googleIdentity"),
        f"is for mode: kubeconfig; with {mode} the stack creates the controller's own Google service "
        "account and its access: remove googleIdentity",
    )
