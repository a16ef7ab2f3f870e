"""Every timing the simulator uses, with its default and where the default comes from.

Figures marked *failure-model* are from shared/reference/failure-model.md; *k8s*, *jobset* and *kueue*
are upstream defaults (source named on the field); *controller* are the hotswap adapter's runtime
defaults. The rest are not published anywhere we could cite: they are marked *chosen*, kept small, and
apply identically to every policy.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from tpu_platform.sim.failures import (
    CHIP_ERROR,
    HOST_DEATH,
    KUBELET_RESTART,
    MAINTENANCE,
    MASS_EVENT,
    SPOT_PREEMPTION,
    WORKLOAD_CRASH,
)


@dataclass(frozen=True, slots=True)
class Timings:
    """All durations in seconds."""

    node_monitor_grace_s: float = 50.0
    """k8s: NotReady after the kubelet goes silent (node-monitor-grace-period): 50 s from Kubernetes 1.32,
    40 s before (kubernetes/kubernetes #126287). ``stack_timings`` sets it from the stack's version."""
    node_monitor_period_s: float = 5.0
    """k8s: the node lifecycle controller checks node health this often (kube-controller-manager
    ``--node-monitor-period``, default 5 s); it notices a Lease renewal, and a silence, on a pass."""
    not_ready_from_last_renewal: bool = True
    """k8s, measured: NotReady counts from the last Lease renewal the node lifecycle controller saw
    (``node_lifecycle.not_ready_after``: 40-55 s after the silence; the live tier measured 43-54 s),
    not from the silence. Off: NotReady exactly ``node_monitor_grace_s`` after the silence."""
    toleration_s: float = 300.0
    """k8s: pods on a not-ready/unreachable node are evicted after this (the DefaultTolerationSeconds
    admission plugin adds ``tolerationSeconds: 300``; kubernetes/kubernetes
    ``plugin/pkg/admission/defaulttolerationseconds/admission.go``)."""
    tas_toleration_s: float = 0.0
    """kueue_tas at its strongest documented setup: the pod template's not-ready/unreachable
    ``tolerationSeconds`` is 0 (Kubernetes "Taints and Tolerations": the pod is evicted as soon as the
    taint is added), so taint eviction starts Kueue's node replacement at once. ``bench/mttr.py`` also
    runs the mid setup (30 s, ``KUEUE_TAS_MID``)."""
    auto_repair_after_s: float = 600.0
    """failure-model: GKE auto-repair starts after ~10 min NotReady."""
    repair_s: float = 600.0
    """failure-model: recovery gated by infrastructure repair, "up to 10 minutes"; the whole multi-host
    pool is recreated as a unit."""
    repair_replaces_nodes: bool = True
    """chosen (sources disagree): GKE's repair of a multi-host pool deletes its Node objects and new ones
    register (True), or the VMs are recreated under the same Node objects, which go Ready again (False).
    The benchmark runs both."""
    node_register_spread_s: float = 30.0
    """chosen: the recreated VMs of a pool register with the API server spread over this window."""
    orphan_gc_s: float = 40.0
    """k8s: PodGC deletes pods bound to a deleted Node after its 40 s quarantine
    (``pkg/controller/podgc/gc_controller.go``, ``quarantineTime``)."""
    pod_termination_s: float = 5.0
    """chosen: graceful exit of a pod on a live kubelet. The default grace period is 30 s, but a trainer
    without a SIGTERM handler exits at once; 5 s covers container teardown."""
    termination_grace_s: float = 1.0
    """kueue_tas at its strongest: the pod template's ``terminationGracePeriodSeconds`` (1 s; the
    Kubernetes default is 30 s, the mid setup's). A deleted pod's deletionTimestamp is this far after
    the delete request, which is what Kueue's FailureRecoveryPolicy counts from."""
    frp_forceful_s: float = 60.0
    """kueue: FailureRecoveryPolicy force-fails and deletes a terminating pod on an unreachable node this
    long after its deletionTimestamp (``pkg/controller/failurerecovery/pod_termination_controller.go``,
    ``defaultOptions.forcefulTerminationGracePeriod``)."""
    jobset_recreate_s: float = 1.0
    """chosen: JobSet controller noticing a failed Job, or the last old pod gone, and creating new Jobs."""
    follower_create_s: float = 1.0
    """chosen: exclusive placement creates followers once the leader is scheduled (Job controller retry)."""
    schedule_s: float = 1.0
    """chosen: kube-scheduler latency from a pod becoming schedulable to its binding."""
    pod_startup_s: float = 30.0
    """chosen: binding to all containers Running (cached image pull, container start, TPU runtime init).
    This is where "pods Running" is measured."""
    compile_s: float = 120.0
    """chosen: XLA compilation after the containers start, before the first step (no persistent cache)."""
    restore_s: float = 60.0
    """chosen: reading the last checkpoint back. Training resumes after pods Running + compile + restore."""
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
    chip_repair_after_s: float = 600.0
    """chosen: GKE repairs a slice whose TPU chip or ICI link failed (kubelet alive) after this long."""
    chip_coordinator_report_s: float | None = 1.0
    """chosen: after a chip/ICI error the runtime's coordinator (worker 0 of the slice's Job) also logs
    the slice failure and exits this long after the failed host's worker (AI-Hypercomputer/maxtext
    benchmarks/maxtest/getting_started.md shows worker 0 logging it); None: only the failed host's
    worker reports."""
    chips_withdrawn_report_s: float | None = 10.0
    """After a chip error the device plugin marks the node's chips Unhealthy and the kubelet's next
    node status (``nodeStatusUpdateFrequency``, 10 s by default) shows allocatable below capacity,
    which kube-scheduler reads too; None: the device plugin never does (GKE does not document that it
    does), so TPU pods keep landing on the node and fail when their runtime initializes."""
    failed_pod_linger_s: float = 1.0
    """k8s: a failed pod stays in the API until its Job's next sync fails the Job and JobSet restarts
    (the Job controller batches pod events for 1 s, ``pkg/controller/job/job_controller.go``,
    ``syncJobBatchPeriod``); the simulator's JobSet deletes it at once, so the controller's snapshots
    keep it this long (what its pod watch would have shown)."""
    crash_tpu_report_fraction: float = 0.25
    """chosen: share of software crashes whose termination message carries the TPU runtime's slice
    failure anyway (one worker's report, no hardware fault): the signal's false positive."""
    maintenance_notice_s: float = 7 * 86400.0
    """failure-model: scheduled maintenance is announced 7 days ahead (the node label
    ``cloud.google.com/scheduled-maintenance-time``)."""
    sigterm_checkpoint_s: float = 60.0
    """chosen: a trainer told to stop by maintenance writes a checkpoint before it exits (GKE grants TPU
    pods up to 60 min of grace there, failure-model), so maintenance loses no work."""
    maintenance_s: float = 3600.0
    """chosen: how long a slice is down for its maintenance before its nodes are back."""
    spot_notice_s: float = 30.0
    """GKE "Spot VMs" (https://cloud.google.com/kubernetes-engine/docs/concepts/spot-vms): the VM shuts
    down 30 s after the preemption notice; the node is tainted
    ``cloud.google.com/impending-node-termination`` and the kubelet stops its pods within 15 s."""
    spot_return_s: float = 1800.0
    """chosen: a preempted Spot slice gets capacity back and its nodes register after this long."""
    compute_status_lag_s: float = 30.0
    """chosen (not published): after a host dies silently, Compute Engine's ``instances.get`` reports
    the VM as not running (TERMINATED, REPAIRING) this long after the death. The benchmark's ablation
    also runs it longer."""
    hung_guest_fraction: float = 0.1
    """chosen: share of silent host deaths where the guest hangs on a VM Compute Engine keeps reporting
    RUNNING (a kernel hang, stuck storage): nothing confirms the VM down until GKE auto-repair
    recreates it, and its pods may resume if the guest does, so force-deleting them is unsafe."""
    compute_restart_fraction: float = 0.3
    """chosen: share of the other silent host deaths after which Compute Engine restarts the VM on a
    healthy host ("About host events": a host error restarts a VM whose availability policy allows
    it): it reads TERMINATED until ``compute_restart_s``, RUNNING after, with a
    ``compute.instances.hostError`` operation from the death on; its kubelet registers again and the
    containers that ran are gone."""
    compute_restart_s: float = 90.0
    """chosen: from a host error to the restarted VM RUNNING with its kubelet back."""
    compute_reset_s: float = 15.0
    """chosen (not published): from the controller's ``instances.reset`` call to its Operation
    ``DONE``, for a hung guest and for a VM whose host died but which Compute Engine still reads
    RUNNING alike. Shown as a range (SENSITIVITY)."""
    vm_boot_s: float = 90.0
    """chosen: from a reset done to the VM's kubelet registered again (guest boot, kubelet start)."""
    compute_api_latency_s: float = 0.5
    """chosen: one ``instances.get`` round trip; the answer describes the VM as it was when sent."""
    compute_reread_s: float = 5.0
    """controller: RuntimeConfig.compute_reread_seconds. The adapter re-reads a suspect node's VM once
    its usable answer is this old (``adapter/compute_engine.py``), so a VM that turns TERMINATED after a
    RUNNING answer is seen up to this late."""
    compute_retry_s: float = 2.0
    """controller: ``Evidence.retry_s``. A suspect node without a usable answer (none, read before its
    suspicion, or its last read failed) is read again at most this often."""
    compute_api_error_rate: float = 0.05
    """chosen: share of Compute Engine reads that fail (503, deadline, 403 while a token rotates); a
    failed read confirms nothing and is retried at the next reconcile."""
    checkpoint_never_answers: float = 0.1
    """chosen: share of checkpoint requests (maintenance-aware moves) a workload never answers, as one
    that does not implement the protocol; it is moved at the deadline without a fresh checkpoint. The
    same share writes no ``last-checkpoint-time`` annotation, so the controller (which reads only
    that) ranks its victims' lost work without it (``snapshot.annotates_checkpoints``)."""
    checkpoint_answer_min_s: float = 10.0
    """chosen: the fastest a trainer writes the requested checkpoint and answers."""
    checkpoint_answer_max_s: float = 300.0
    """chosen: the slowest (a large model to persistent storage); answers are uniform in between."""
    incident_settle_s: float = 1800.0
    """chosen: an incident that has not interrupted a high-priority JobSet this long after it happened
    counts as a recovery of 0 s for it (e.g. a short kubelet restart that nothing reacted to)."""

    def with_overrides(self, overrides: dict[str, Any]) -> Timings:
        """A copy with some fields replaced; unknown names raise ``ValueError`` naming them."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValueError(f"unknown timing(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return replace(self, **overrides)


def restart_seconds(t: Timings) -> float:
    """An unobstructed restart once the old pods are out of the way: a victim's drain (the fleet is
    full, so some slice must be freed) overlapping the new Jobs' creation, then scheduling the leader,
    creating its followers and starting the containers."""
    return (
        max(t.pod_termination_s, t.jobset_recreate_s) + t.schedule_s + t.follower_create_s + t.pod_startup_s
    )


def signal_seconds(t: Timings, kind: str) -> float:
    """The earliest moment after an incident at which the signals then available say the workload must
    move: NotReady for a silent host (the kubelet's last status is all there is), the pod's own failure
    for a chip/ICI error or a Spot notice (at once), the drain a trainer needs to write its checkpoint
    for maintenance with notice. A kubelet restart needs no move at all."""
    if kind in (HOST_DEATH, MASS_EVENT):
        return t.node_monitor_grace_s
    if kind == MAINTENANCE:
        return max(0.0, t.sigterm_checkpoint_s - t.pod_termination_s)
    if kind in (CHIP_ERROR, SPOT_PREEMPTION, WORKLOAD_CRASH):
        return 0.0
    if kind == KUBELET_RESTART:
        return 0.0
    raise ValueError(f"unknown failure kind {kind!r}")


def floor_seconds(t: Timings, kind: str = HOST_DEATH) -> float:
    """The honest floor of "pods Running again" for one incident of ``kind``: the earliest signal, plus
    an unobstructed restart that includes a victim's drain (``restart_seconds``). It assumes the pod on a
    dead node is force-deleted the moment NotReady shows (no confirmation wait) and no detection delay
    of any controller. A kubelet restart has floor 0: nothing needs to stop."""
    if kind == KUBELET_RESTART:
        return 0.0
    return signal_seconds(t, kind) + restart_seconds(t)


def resumed_floor_seconds(t: Timings, kind: str = HOST_DEATH) -> float:
    """The floor of "training resumed": the running floor plus compile and checkpoint restore (the work
    since the last checkpoint comes on top and is the same for every policy)."""
    if kind == KUBELET_RESTART:
        return 0.0
    return floor_seconds(t, kind) + t.compile_s + t.restore_s
