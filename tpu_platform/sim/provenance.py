"""Where every simulator timing comes from: a document or code at a tag, a measurement on the live
tier's real control plane, or a choice. ``bench/mttr.py`` prints it with the run's values, and shows
the headline over a range of each chosen parameter it depends on (``SENSITIVITY``).

``ref`` names the source closely enough to check it: a file and symbol at the pinned tag, a document's
title or URL, or for a measurement the command that measures it.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from tpu_platform.sim.params import Timings

DOC, CODE, MEASURED, CHOSEN = "doc", "code", "measured", "chosen"
SOURCES = (DOC, CODE, MEASURED, CHOSEN)
_K8S = "kubernetes v1.34.12 "
_FM = "shared/reference/failure-model.md"
_CALIBRATED = "; the live tier's steps agree with the simulator's (python bench/calibrate.py)"

PROVENANCE: dict[str, tuple[str, str]] = {
    "node_monitor_grace_s": (
        CODE,
        _K8S + "cmd/kube-controller-manager/app/options (node-monitor-grace-period 50s)",
    ),
    "node_monitor_period_s": (
        CODE,
        _K8S + "cmd/kube-controller-manager/app/options (node-monitor-period 5s)",
    ),
    "not_ready_from_last_renewal": (
        MEASURED,
        _K8S + "pkg/controller/nodelifecycle/node_lifecycle_controller.go tryUpdateNodeHealth; "
        "NotReady 43-54 s after the silence on the live tier (./dev live -k incidents)",
    ),
    "toleration_s": (CODE, _K8S + "plugin/pkg/admission/defaulttolerationseconds/admission.go (300 s)"),
    "tas_toleration_s": (DOC, "Kubernetes 'Taints and Tolerations': tolerationSeconds 0 evicts at once"),
    "auto_repair_after_s": (DOC, _FM + " (GKE auto-repair after ~10 min NotReady)"),
    "repair_s": (DOC, _FM + " (recovery gated by repair, up to 10 minutes)"),
    "repair_replaces_nodes": (CHOSEN, "sources disagree; bench/mttr.py runs both"),
    "node_register_spread_s": (CHOSEN, "recreated VMs register over this window"),
    "orphan_gc_s": (CODE, _K8S + "pkg/controller/podgc/gc_controller.go quarantineTime (40 s)"),
    "pod_termination_s": (CHOSEN, "container teardown of a trainer that exits on SIGTERM"),
    "termination_grace_s": (DOC, "kueue_tas at its strongest: terminationGracePeriodSeconds 1 on the pod"),
    "frp_forceful_s": (
        CODE,
        "kueue v0.19.2 pkg/controller/failurerecovery/pod_termination_controller.go "
        "forcefulTerminationGracePeriod (1 min)",
    ),
    "jobset_recreate_s": (CHOSEN, "JobSet controller latency" + _CALIBRATED),
    "follower_create_s": (CHOSEN, "Job controller retry after the leader is scheduled" + _CALIBRATED),
    "schedule_s": (CHOSEN, "kube-scheduler latency" + _CALIBRATED),
    "pod_startup_s": (CHOSEN, "binding to containers Running; shown as a range (SENSITIVITY)"),
    "compile_s": (CHOSEN, "XLA compilation before the first step"),
    "restore_s": (CHOSEN, "checkpoint read-back"),
    "kueue_admit_s": (CHOSEN, "Kueue admission to unsuspend" + _CALIBRATED),
    "lease_renew_s": (CODE, _K8S + "pkg/kubelet/kubelet.go nodeLeaseRenewIntervalFraction 0.25 of 40 s"),
    "reconcile_interval_s": (CODE, "tpu_platform/hotswap/adapter/config.py RuntimeConfig"),
    "reconcile_debounce_s": (CODE, "tpu_platform/hotswap/adapter/config.py RuntimeConfig"),
    "peer_exit_s": (CHOSEN, "None: peers hang in collectives (what 'gated by repair' implies)"),
    "chip_repair_after_s": (CHOSEN, "GKE repair of a slice with a failed chip"),
    "chip_coordinator_report_s": (
        CHOSEN,
        "AI-Hypercomputer/maxtext benchmarks/maxtest/getting_started.md shows worker 0 logging it; "
        "the delay is chosen; bench/mttr.py's chip_signals run without it",
    ),
    "chips_withdrawn_report_s": (
        CHOSEN,
        _K8S + "kubelet nodeStatusUpdateFrequency 10 s; that GKE's device plugin withdraws chips is not "
        "documented, so bench/mttr.py's chip_signals run without it",
    ),
    "failed_pod_linger_s": (CODE, _K8S + "pkg/controller/job/job_controller.go syncJobBatchPeriod (1 s)"),
    "crash_tpu_report_fraction": (CHOSEN, "false-positive share of software crashes"),
    "maintenance_notice_s": (DOC, _FM + " (7 days' notice, scheduled-maintenance-time label)"),
    "sigterm_checkpoint_s": (CHOSEN, "checkpoint written on SIGTERM"),
    "maintenance_s": (CHOSEN, "a slice's maintenance downtime"),
    "spot_notice_s": (DOC, "https://cloud.google.com/kubernetes-engine/docs/concepts/spot-vms (30 s)"),
    "spot_return_s": (CHOSEN, "Spot capacity returns"),
    "compute_status_lag_s": (CHOSEN, "not published; shown as a range (SENSITIVITY)"),
    "hung_guest_fraction": (CHOSEN, "not published; shown as a range (SENSITIVITY)"),
    "compute_restart_fraction": (CHOSEN, "not published; shown as a range (SENSITIVITY)"),
    "compute_restart_s": (CHOSEN, "Compute Engine restart plus boot and kubelet registration"),
    "compute_reset_s": (CHOSEN, "not published; shown as a range (SENSITIVITY)"),
    "vm_boot_s": (CHOSEN, "guest boot and kubelet registration after a reset"),
    "compute_api_latency_s": (CHOSEN, "one instances.get round trip"),
    "compute_reread_s": (CODE, "tpu_platform/hotswap/adapter/config.py RuntimeConfig.compute_reread_seconds"),
    "compute_retry_s": (CODE, "tpu_platform/hotswap/adapter/compute_engine.py Evidence.retry_s"),
    "compute_api_error_rate": (CHOSEN, "shown as a range in bench/mttr.py's ablation (50 %)"),
    "checkpoint_never_answers": (CHOSEN, "share of workloads without the checkpoint protocol"),
    "checkpoint_answer_min_s": (CHOSEN, "fastest checkpoint answer"),
    "checkpoint_answer_max_s": (CHOSEN, "slowest checkpoint answer"),
    "incident_settle_s": (CHOSEN, "measurement window, not a system property"),
}

SENSITIVITY: dict[str, tuple[float, ...]] = {
    "compute_status_lag_s": (0.0, 30.0, 60.0, 120.0),
    "pod_startup_s": (30.0, 90.0, 180.0),
    "hung_guest_fraction": (0.0, 0.1, 0.3),
    "compute_restart_fraction": (0.0, 0.3, 1.0),
    "compute_reset_s": (5.0, 15.0, 60.0),
}
"""Chosen parameters the silent-host-death headline depends on, and the values it is shown over."""


def missing() -> list[str]:
    """Timings fields without a provenance entry, and entries naming no field (both must be empty)."""
    names = {f.name for f in fields(Timings)}
    return sorted(names ^ set(PROVENANCE))


def parameters(t: Timings) -> dict[str, dict[str, Any]]:
    """``{name: {value, source, ref}}`` for every timing of a run."""
    out: dict[str, dict[str, Any]] = {}
    for f in fields(t):
        source, ref = PROVENANCE[f.name]
        out[f.name] = {"value": getattr(t, f.name), "source": source, "ref": ref}
    return out
