"""Which Kubernetes minor a stack's control plane runs, and the node lifecycle defaults that follow.

The node lifecycle controller marks a silent node NotReady after ``node-monitor-grace-period``: 40 s
up to Kubernetes 1.31, 50 s from 1.32 (kubernetes/kubernetes #126287, which changed the default in
``pkg/controller/nodelifecycle/config/v1alpha1/defaults.go``). A stack pins a version with
``cluster.minMasterVersion``; without one, GKE runs its release channel's default version. Those
defaults move every few weeks (GKE release notes, https://cloud.google.com/kubernetes-engine/docs/release-notes);
the minors below are *chosen* as the channels' defaults at the time of writing, and every one of them
is at or past 1.32, so the grace period is 50 s whichever channel a stack uses.
"""

from __future__ import annotations

import re

from tpu_platform.config import PlatformConfig

GRACE_BEFORE_1_32_S = 40.0
GRACE_FROM_1_32_S = 50.0

CHANNEL_DEFAULT_MINOR: dict[str, int] = {"RAPID": 35, "REGULAR": 34, "STABLE": 33}
"""chosen: the release channels' default Kubernetes minors (1.x)."""

_VERSION = re.compile(r"^v?1\.(\d+)(?:\.|$|-)")


def kubernetes_minor(version: str) -> int:
    """The minor of a GKE/Kubernetes version string such as ``1.31.2-gke.1115000`` or ``1.33``."""
    m = _VERSION.match(version.strip())
    if m is None:
        raise ValueError(
            f"cluster.minMasterVersion: {version!r} is not a 1.<minor> version (e.g. 1.33.1-gke.1000)"
        )
    return int(m.group(1))


def stack_minor(cfg: PlatformConfig) -> int:
    """The control plane's minor: the pinned ``minMasterVersion``, else the channel's default."""
    cluster = cfg.cluster
    if cluster.min_master_version:
        return kubernetes_minor(cluster.min_master_version)
    return CHANNEL_DEFAULT_MINOR[cluster.release_channel or "REGULAR"]


def node_monitor_grace_s(minor: int) -> float:
    """``node-monitor-grace-period`` of kube-controller-manager 1.<minor> (kubernetes/kubernetes #126287)."""
    return GRACE_FROM_1_32_S if minor >= 32 else GRACE_BEFORE_1_32_S
