"""When a terminating pod still counts as leaving: the bound on what a deletion can hold back.

A terminating pod makes its JobSet *failing* (restarting: never a victim) and its pool *draining*
(capacity on its way to a waiting JobSet). Both are true only while the pod can be expected to go.
The API server sets ``deletionTimestamp`` to the deletion request plus the grace period
(``deletionGracePeriodSeconds``) and removes the pod once that passed and its finalizers are gone
(apimachinery v0.34 ``pkg/apis/meta/v1/types.go``, ``ObjectMeta.DeletionTimestamp``: "The resource
is expected to be deleted ... after the time in this field, once the finalizers list is empty"); the
kubelet sends SIGKILL at the end of the grace period (same comment). A pod still there long
after, or with a grace period far beyond what a trainer needs to save a checkpoint, is held by
something else: a finalizer its tenant owns, or a dead node (which the fail-fast rules clear,
:mod:`.failfast`). Such a pod keeps occupying its node, but it no longer stands for a restart in
progress nor for capacity on its way.
"""

from __future__ import annotations

import math

from tpu_platform.hotswap.core.model import Pod

MAX_DRAIN_GRACE_SECONDS = 120.0
"""Of a pod's grace period, this much at most counts as draining (chosen: Kubernetes' default
grace period is 30 s, GKE gives Spot VMs 30 s of graceful shutdown; shown 30-600 s in the docs). A
longer grace period still runs; the pod just stops holding decisions back after this."""
DELETION_OVERDUE_SECONDS = 30.0
"""After the grace period, the kubelet's kill and the API server's removal take seconds; a pod
still there this long after is held (chosen: three kubelet status updates of 10 s)."""


def still_draining(pod: Pod, now: float) -> bool:
    """``pod`` is terminating and its deletion is not overdue (see the module docstring)."""
    deadline = pod.deletion_timestamp
    if deadline is None or not math.isfinite(deadline):
        return False
    grace = pod.deletion_grace
    grace = max(0.0, grace) if grace is not None and math.isfinite(grace) else 0.0
    requested = deadline - grace
    return now <= requested + min(grace, MAX_DRAIN_GRACE_SECONDS) + DELETION_OVERDUE_SECONDS


__all__ = ["DELETION_OVERDUE_SECONDS", "MAX_DRAIN_GRACE_SECONDS", "still_draining"]
