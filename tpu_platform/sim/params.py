"""Every timing the simulator uses, with its default and where the default comes from.

Figures marked *failure-model* are from shared/reference/failure-model.md; *k8s* are upstream
Kubernetes defaults; *controller* are the hotswap adapter's runtime defaults. The rest are not
published anywhere we could cite: they are marked *chosen*, kept small, and apply identically to both
policies, so they move the two policies' MTTR by the same amount.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any


@dataclass(frozen=True, slots=True)
class Timings:
    """All durations in seconds."""

    node_monitor_grace_s: float = 40.0
    """failure-model: NotReady after the kubelet goes silent (node-monitor-grace-period; 50 s from 1.32)."""
    toleration_s: float = 300.0
    """failure-model: pods on a not-ready/unreachable node are evicted after this (tolerationSeconds)."""
    auto_repair_after_s: float = 600.0
    """failure-model: GKE auto-repair starts after ~10 min NotReady."""
    repair_s: float = 600.0
    """failure-model: recovery gated by infrastructure repair, "up to 10 minutes"; the whole multi-host
    pool is recreated as a unit."""
    node_register_spread_s: float = 30.0
    """chosen: the recreated VMs of a pool register with the API server spread over this window."""
    orphan_gc_s: float = 40.0
    """k8s: PodGC deletes pods bound to a deleted Node after its 40 s quarantine."""
    pod_termination_s: float = 5.0
    """chosen: graceful exit of a pod on a live kubelet. The default grace period is 30 s, but a trainer
    without a SIGTERM handler exits at once; 5 s covers container teardown."""
    jobset_recreate_s: float = 1.0
    """chosen: JobSet controller noticing a failed Job, or the last old pod gone, and creating new Jobs."""
    follower_create_s: float = 1.0
    """chosen: exclusive placement creates followers once the leader is scheduled (Job controller retry)."""
    schedule_s: float = 1.0
    """chosen: kube-scheduler latency from a pod becoming schedulable to its binding."""
    pod_startup_s: float = 30.0
    """chosen: binding to all containers Running (cached image pull, container start, TPU runtime init).
    In-program work after that (compilation, checkpoint restore) is the same in both policies and is
    not counted in MTTR."""
    kueue_admit_s: float = 1.0
    """chosen: Kueue admission to the JobSet being unsuspended."""
    lease_renew_s: float = 10.0
    """k8s: the kubelet renews its node Lease in kube-node-lease this often (a quarter of its 40 s
    duration) while it is alive."""
    reconcile_interval_s: float = 2.0
    """controller: RuntimeConfig.reconcile_interval_seconds (upper bound between reconciles)."""
    reconcile_debounce_s: float = 0.2
    """controller: RuntimeConfig.min_reconcile_gap_seconds (watch events trigger a reconcile after it)."""
    peer_exit_s: float | None = None
    """chosen: when one host of a multi-host slice dies, the others hang in collectives (None) or exit
    with an error after this long. Hanging is what "recovery gated by infrastructure repair" implies."""

    def with_overrides(self, overrides: dict[str, Any]) -> Timings:
        """A copy with some fields replaced; unknown names raise ``ValueError`` naming them."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValueError(f"unknown timing(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return replace(self, **overrides)


def floor_seconds(t: Timings, unhealthy_after_s: float, lease_stale_s: float = 0.0) -> float:
    """The physical floor of a recovery: detection threshold plus the fastest JobSet restart.

    Detection is the kubelet going NotReady, or with the Lease signal on (``lease_stale_s`` > 0) its
    Lease going stale if that comes first, plus the controller's T_bad. The Lease is stale counted from
    its last renewal, up to one renewal interval before the kubelet died, so with it on a recovery can
    also come up to ``lease_renew_s`` under the floor. The restart is what any restart
    needs even with capacity free and nothing in its way: new Jobs, scheduling the leader, its
    followers, and container startup. It waits for no old pod (a Recreate JobSet without a pod failure
    policy does not), no preemption victim and no repair. The simulator batches scheduling, so a
    recovery can come in a fraction of a second under it when a scheduling pass was already queued.
    """
    signal = min(t.node_monitor_grace_s, lease_stale_s) if lease_stale_s > 0 else t.node_monitor_grace_s
    detection = signal + unhealthy_after_s
    restart = t.jobset_recreate_s + t.schedule_s + t.follower_create_s + t.pod_startup_s
    return detection + restart
