"""Decision thresholds, with defaults justified from the failure model, and their loader.

The Pulumi component renders these into a ConfigMap; :func:`settings_from_mapping` turns the parsed
YAML/JSON back into a validated :class:`Settings`, naming the offending field on any error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any

from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.setting_values import COERCE, SettingsError


def _doc(text: str, kind: str) -> dict[str, str]:
    return {"doc": " ".join(text.split()), "kind": kind}


@dataclass(frozen=True, slots=True)
class Settings:
    """Every threshold the decision core uses. All durations are seconds.

    Defaults come from shared/reference/failure-model.md; each field's ``metadata["doc"]`` says why.
    """

    unhealthy_after_seconds: float = field(
        default=10.0,
        metadata=_doc(
            """T_bad: a pool is declared unhealthy once one of its nodes has shown a problem this long.
            The clock starts at the problem's own timestamp (e.g. the Ready condition's transition), and
            Ready only flips after the 40 s node-monitor grace period, so a dead kubelet is already 40 s
            old when counting starts. 10 s more filters kubelet restarts and status blips while keeping
            detection (about 50 s after the kubelet dies) inside the 1-minute hotswap target and far
            below the 300 s default eviction. A confirmed problem (a VM Compute Engine reads not
            running, confirmed workload reports) is not transient and declares at once.""",
            "duration",
        ),
    )
    healthy_after_seconds: float = field(
        default=120.0,
        metadata=_doc(
            """T_good: an unhealthy pool is untainted once every node has been clean this long. A
            repaired multi-host pool is recreated as a unit and its TPU runtime needs time to settle;
            two minutes of clean signals is small next to the ~10 min repair yet avoids handing the pool
            back to low-priority work just before it fails again.""",
            "duration",
        ),
    )
    flap_window_seconds: float = field(
        default=3600.0,
        metadata=_doc(
            """Window over which unhealthy declarations are counted. One hour matches the advised
            checkpoint cadence: each failure inside it can cost a job up to an hour of work.""",
            "duration",
        ),
    )
    flap_threshold: int = field(
        default=3,
        metadata=_doc(
            """Declarations within the flap window (the current one included) that make a pool
            'flapping'. Three: one failure is bad luck, a second can be repair fallout, a third is a
            pattern.""",
            "int",
        ),
    )
    flapping_healthy_after_seconds: float = field(
        default=900.0,
        metadata=_doc(
            """Clean time a flapping pool needs before it is untainted (replaces T_good). 15 min is
            longer than the ~10 min after which GKE auto-repair starts, so a flapping node gets repaired
            rather than handed work again.""",
            "duration",
        ),
    )
    dead_node_confirm_seconds: float = field(
        default=30.0,
        metadata=_doc(
            """With force_delete_unconfirmed on: a node counts as dead (its Terminating pods may be
            force-deleted) after being NotReady/unreachable this long without Compute Engine confirming
            its VM down. NotReady already means 40-55 s without kubelet status (50 s
            node-monitor-grace-period from Kubernetes 1.32, counted from the controller manager's pass
            that saw the last renewal), so the kubelet has been silent 70-85 s; a merely slow node
            stays Ready and is never touched. Nothing
            else clears these pods before GKE repair (~10 min) and BlockingRecreate waits on them
            (jobset #576).""",
            "duration",
        ),
    )
    force_delete_unconfirmed: bool = field(
        default=False,
        metadata=_doc(
            """Opt-in, unfenced: force-delete the Terminating managed pods of a node NotReady for
            dead_node_confirm_seconds even though Compute Engine has not confirmed its VM down (no
            corroboration, an API error, or no answer yet). Off by default: a kubelet restart or a hung
            guest longer than NotReady + dead_node_confirm_seconds would lose pods whose containers
            still run, and a second copy of a worker would write the same checkpoints (bench/mttr.py
            counts these as unsafe force deletions). A RUNNING answer vetoes it even when on.""",
            "bool",
        ),
    )
    preemption_pending_seconds: float = field(
        default=10.0,
        metadata=_doc(
            """A beneficiary's pods must have been unschedulable this long before the controller
            preempts for them. kube-scheduler tries (and nominates, if it can preempt) within
            milliseconds; 10 s lets it go first so the two never preempt for the same pod.""",
            "duration",
        ),
    )
    preemption_settle_seconds: float = field(
        default=120.0,
        metadata=_doc(
            """After a preemption the freed pools stay reserved for the beneficiary this long (and as
            long as the victim's pods are still terminating) so the controller does not preempt a second
            victim while the first drains and kube-scheduler binds. Two minutes covers pod deletion,
            JobSet recreation and scheduling with margin.""",
            "duration",
        ),
    )
    max_bad_node_fraction: float = field(
        default=0.55,
        metadata=_doc(
            """If more than this fraction of managed nodes show problems at once, the controller holds
            all actions: the likely cause is the control plane or network, not hardware, and evicting
            everything would do harm. 0.55 mirrors kube-controller-manager's unhealthy-zone-threshold.
            1.0 disables the guard.""",
            "fraction",
        ),
    )
    lease_stale_seconds: float = field(
        default=0.0,
        metadata=_doc(
            """Opt-in earlier failure signal: a node whose Lease in kube-node-lease has not been renewed
            this long is bad from renewTime + this (T_bad counts from there). The kubelet renews every
            10 s and NotReady needs 40-55 s of silence (Kubernetes 1.32+); 20 s (two missed renewals)
            detects a dead kubelet ~20-30 s sooner, at the risk of acting on a kubelet that is merely
            slow to renew, which is why it is off by default. 0: off; otherwise at least 20, so one
            missed renewal never counts.
            Alone never used to force-delete pods: that needs NotReady for dead_node_confirm_seconds,
            or (compute_corroboration) the VM read not running after the Lease went stale.""",
            "duration",
        ),
    )
    compute_corroboration: bool = field(
        default=False,
        metadata=_doc(
            """Opt-in: ask Compute Engine about the VM behind a suspect node (NotReady, or a stale Lease
            with lease_stale_seconds on) and force-delete its managed pods as soon as the VM is
            confirmed not running (TERMINATED, STOPPED, SUSPENDED, REPAIRING, deleted, or a
            compute.instances.hostError after the kubelet's last renewal), instead of waiting
            dead_node_confirm_seconds. Needs the controller's Google service account (Workload
            Identity) with compute.instances.get and compute.zoneOperations.list. An API error or a
            RUNNING VM confirms nothing: the conservative path applies.""",
            "bool",
        ),
    )
    reset_silent_vms: bool = field(
        default=True,
        metadata=_doc(
            """With compute_corroboration on: hard-reset (Compute Engine instances.reset) the VM of a
            suspect node of a declared pool that Compute Engine reads RUNNING, and force-delete its
            managed pods once the reset is done (no process of the guest that ran them is left). It
            bounds a hung guest and Compute Engine's status lag after a host failure by the pool's
            declaration plus the reset; a kubelet that would have come back reboots instead. Needs
            compute.instances.reset besides the reads.""",
            "bool",
        ),
    )
    instance_evidence_max_age_seconds: float = field(
        default=30.0,
        metadata=_doc(
            """Compute Engine evidence older than this is ignored. The adapter re-reads a suspect
            node's VM every 5 s (runtime compute_reread_seconds; after a failed read every 2 s); 30 s
            tolerates a few failed reads in a row without acting on a stale view.""",
            "duration",
        ),
    )
    maintenance_lead_seconds: float = field(
        default=0.0,
        metadata=_doc(
            """A node labelled with cloud.google.com/scheduled-maintenance-time counts as bad from this
            long before that time. 0: only once the window starts (notices come 7 days ahead; acting on
            them early would evict work for nothing).""",
            "duration",
        ),
    )
    maintenance_moves: bool = field(
        default=True,
        metadata=_doc(
            """Move managed work off a slice before its scheduled maintenance, at a checkpoint
            (core/maintenance.py): ask the JobSet for a checkpoint maintenance_checkpoint_seconds before
            the move deadline (window start - maintenance_move_lead_seconds), and move it (taint the pool,
            fail fast, preempt lower priority if needed) as soon as it answers, or at the deadline.
            Off: the window is handled as any other failure signal (maintenance_lead_seconds).""",
            "bool",
        ),
    )
    maintenance_move_lead_seconds: float = field(
        default=300.0,
        metadata=_doc(
            """The move deadline is this long before the window starts (the
            cloud.google.com/scheduled-maintenance-time label). The workload's pods must be gone before
            GKE drains the slice: eviction, the default 30 s terminationGracePeriodSeconds, a trainer that
            still saves on SIGTERM, and a few reconciles; 5 min covers them, while the slice idles at most
            this long before its window.""",
            "duration",
        ),
    )
    maintenance_checkpoint_seconds: float = field(
        default=300.0,
        metadata=_doc(
            """The checkpoint is requested this long before the move deadline, so the move comes at
            most this plus maintenance_move_lead_seconds (10 min) before the window. Every minute
            earlier holds one slice more out of the fleet: in the benchmark (controller README,
            Maintenance-aware moves) 900 s raised lower-priority work lost above the recipe's, 300 s
            did not. A workload whose checkpoint takes longer than 5 min should be given more, or is
            moved at the deadline with its SIGTERM grace period. Notices come 7 days ahead; a request
            made days early would idle the slice for days.""",
            "duration",
        ),
    )
    maintenance_avoid_seconds: float = field(
        default=7200.0,
        metadata=_doc(
            """A slice whose scheduled maintenance starts within this is not taken from a lower-priority
            victim for managed work: the work would restart (compile, restore) only to be moved again.
            Two hours is two advised (hourly) checkpoint intervals of useful run.""",
            "duration",
        ),
    )
    fail_fast: bool = field(
        default=True,
        metadata=_doc(
            """Evict managed pods on an unhealthy pool so JobSet restarts now rather than after the
            300 s not-ready/unreachable eviction.""",
            "bool",
        ),
    )
    clear_stuck_pods: bool = field(
        default=True,
        metadata=_doc(
            """Force-delete (grace 0) managed pods stuck Terminating on confirmed-dead nodes so
            BlockingRecreate is not blocked until repair.""",
            "bool",
        ),
    )
    preemption: bool = field(
        default=True,
        metadata=_doc(
            "Preempt whole slices of lower-priority managed JobSets for unschedulable managed JobSets.",
            "bool",
        ),
    )
    protect_restart_budget: bool = field(
        default=True,
        metadata=_doc(
            """Never choose a victim whose next restart would exceed its failurePolicy.maxRestarts
            (it would fail for good) unless its failure policy ignores disruptions
            (DisruptionTarget -> FailJob + RestartJobSetAndIgnoreMaxRestarts).""",
            "bool",
        ),
    )
    opt_out_namespaces: tuple[str, ...] = field(
        default=(),
        metadata=_doc(
            """Namespaces whose managed JobSets may opt out of being victims with the annotation
            tpu-platform.dev/preemptible: "false". Elsewhere the annotation is ignored: a JobSet that
            takes the controller's help (fail fast, preemption for it) can be preempted in turn.""",
            "strings",
        ),
    )
    teams: tuple[tuple[str, tuple[str, ...]], ...] = field(
        default=(),
        metadata=_doc(
            """The stack's teams and their namespaces (rendered from the stack's teams section). A
            tenant is a team, all its namespaces together. Two namespaces of one team are one tenant's
            word, never two independent ones, and a team whose reports alone took a pool out of service
            may preempt only its own JobSets while that pool is out. With teams declared, a namespace
            of no team is not heard on its own word (it could be any team's second voice); with none
            declared, each namespace is a tenant.""",
            "teams",
        ),
    )
    managed_accelerators: tuple[str, ...] = field(
        default=("tpu-v6e-slice",),
        metadata=_doc(
            "Values of cloud.google.com/gke-tpu-accelerator whose node pools the controller manages.",
            "strings",
        ),
    )
    problem_condition_types: tuple[str, ...] = field(
        default=(
            "KernelDeadlock",
            "ReadonlyFilesystem",
            "FrequentKubeletRestart",
            "FrequentContainerdRestart",
        ),
        metadata=_doc(
            """Node condition types that mean trouble when status is True (node-problem-detector). Ready,
            the not-ready/unreachable taints and GKE maintenance signals are always checked.""",
            "strings",
        ),
    )
    problem_taint_keys: tuple[str, ...] = field(
        default=(),
        metadata=_doc(
            """Extra taint keys that mark a node bad (e.g. a TPU health checker's own taint). No
            documented TPU chip/ICI signal exists for v6e, so this is left to the operator.""",
            "strings",
        ),
    )

    workload_signals: bool = field(
        default=True,
        metadata=_doc(
            """Read TPU errors that workloads report when their container fails (a non-zero exit whose
            termination reason or message contains one of tpu_error_patterns): one report makes the pool
            suspect (logged, nothing done); it is declared unhealthy only once confirmed by a second,
            independent signal (the device plugin withdrawing chips of one of its nodes) or by
            repetition (workload_signal_repeats reports from distinct pods within the window). Reports
            of one tenant (a team, see teams) confirm by repetition only while no other tenant's pod
            runs on the pool: a tenant can write anything in a termination message, so it alone must
            never take a pool that runs someone else's work out of service, and a pool declared on
            tenants' reports alone (no system signal: withdrawn chips, a node condition or taint, a
            Compute Engine answer) lets those tenants preempt only their own JobSets while it is out
            (workload_signal_team_limit bounds how often). A chip or ICI failure leaves the
            kubelet alive and the node Ready, so no node signal shows it (see the README's section
            "Chip and ICI failures").""",
            "bool",
        ),
    )
    tpu_error_patterns: tuple[str, ...] = field(
        default=("SLICE_FAILURE_CHIP_DRIVER_ERROR",),
        metadata=_doc(
            """Substrings of a failed container's termination reason or message that report a TPU
            hardware error. The default is the TPU runtime's slice failure "due to a chip driver
            reporting some error (could correspond to bad TPU or ICI link going down)" (openxla/xla
            xla/pjrt/c/pjrt_c_api_callback_extension.h, PJRT_Callback_Tpu_SliceFailureType). The
            runtime logs it; it reaches the termination message with terminationMessagePolicy
            FallbackToLogsOnError (the last log lines) or when the workload writes it there. No exit
            code for a chip error is documented, so exit codes alone never count.""",
            "strings",
        ),
    )
    workload_signal_window_seconds: float = field(
        default=600.0,
        metadata=_doc(
            """How long a workload's TPU-error report counts. Ten minutes is the "up to 10 minutes" of
            infrastructure repair (failure-model.md): reports on a slice within it are taken as the
            same fault, and a confirmed pool stays bad at least this long after the last report, so
            it is not handed back before a repair could have started. A JobSet restarting on the same
            slice fails again well within it (a restart takes under a minute).""",
            "duration",
        ),
    )
    workload_signal_repeats: int = field(
        default=2,
        metadata=_doc(
            """Reports from distinct pods that confirm a pool by repetition. Two: a multi-host slice's
            failure is seen by the host with the bad chip and by the runtime's coordinator (worker 0
            logs the detected slice failure, AI-Hypercomputer/maxtext
            benchmarks/maxtest/getting_started.md), and a restart on the same broken slice fails
            again; one report alone is a single tenant's word. At least 2.""",
            "int",
        ),
    )
    workload_signal_team_limit: int = field(
        default=1,
        metadata=_doc(
            """Pools a tenant's reports alone may take out of service within
            workload_signal_team_window_seconds; past it, that tenant's reports only make pools suspect
            until the oldest declaration leaves the window. One: a chip or ICI fault breaks one slice,
            and a second slice of the same team failing on the team's word within the hour is likelier
            the workload's own bug (or a forged report) than a second independent hardware fault. A
            system signal (withdrawn chips, a node condition) confirms whatever the count. At least 1.""",
            "int",
        ),
    )
    workload_signal_team_window_seconds: float = field(
        default=3600.0,
        metadata=_doc(
            """The window of workload_signal_team_limit. One hour, the flap window: each declaration
            can cost the team up to an hour of work at the advised checkpoint cadence. A declaration is
            also kept for as long as the pool it took out stays out, however long that is.""",
            "duration",
        ),
    )
    chips_withdrawn_signal: bool = field(
        default=True,
        metadata=_doc(
            """A node whose allocatable google.com/tpu is below its capacity has chips the device
            plugin marked Unhealthy (the kubelet counts only healthy devices as allocatable:
            kubernetes/kubernetes pkg/kubelet/cm/devicemanager/manager.go, GetCapacity). Written by
            the kubelet, not by a tenant, it confirms a workload's TPU-error report on the pool at
            once. Alone it only makes the pool suspect: the kubelet also marks every device Unhealthy
            while the device plugin is disconnected (markResourceUnhealthy, e.g. a plugin restart).
            GKE does not document whether its TPU device plugin reports chips Unhealthy.""",
            "bool",
        ),
    )

    def __post_init__(self) -> None:
        _validate(self)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON/YAML-ready dict (tuples become lists)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.metadata["kind"] == "teams":
                out[f.name] = {team: list(namespaces) for team, namespaces in value}
            else:
                out[f.name] = list(value) if isinstance(value, tuple) else value
        return out


MIN_LEASE_STALE_SECONDS = 20.0
"""The kubelet renews its node Lease every 10 s: below two renewals one late renewal would count."""

MIN_WORKLOAD_SIGNAL_REPEATS = 2
"""One workload report is one tenant's word: repetition means at least two."""
MAX_TPU_ERROR_PATTERNS = 16
MAX_TPU_ERROR_PATTERN_CHARS = 256


def _validate(s: Settings) -> None:
    for f in fields(s):
        COERCE[f.metadata["kind"]](f.name, getattr(s, f.name))
    if s.flap_threshold < 1:
        raise SettingsError("flap_threshold", f"must be >= 1, got {s.flap_threshold}")
    if not 0.0 < s.max_bad_node_fraction <= 1.0:
        raise SettingsError("max_bad_node_fraction", f"must be in (0, 1], got {s.max_bad_node_fraction}")
    if s.flapping_healthy_after_seconds < s.healthy_after_seconds:
        raise SettingsError(
            "flapping_healthy_after_seconds",
            f"must be >= healthy_after_seconds ({s.healthy_after_seconds}), "
            f"got {s.flapping_healthy_after_seconds}",
        )
    if s.lease_stale_seconds and s.lease_stale_seconds < MIN_LEASE_STALE_SECONDS:
        raise SettingsError(
            "lease_stale_seconds",
            f"must be 0 (off) or >= {MIN_LEASE_STALE_SECONDS:g} (two kubelet renewals), "
            f"got {s.lease_stale_seconds}",
        )
    if s.compute_corroboration and s.instance_evidence_max_age_seconds <= 0:
        raise SettingsError(
            "instance_evidence_max_age_seconds", "must be > 0 with compute_corroboration on, got 0"
        )
    if s.workload_signal_repeats < MIN_WORKLOAD_SIGNAL_REPEATS:
        raise SettingsError(
            "workload_signal_repeats",
            f"must be >= {MIN_WORKLOAD_SIGNAL_REPEATS} (one report is one tenant's word), "
            f"got {s.workload_signal_repeats}",
        )
    if s.workload_signals and s.workload_signal_window_seconds <= 0:
        raise SettingsError("workload_signal_window_seconds", "must be > 0 with workload_signals on, got 0")
    if s.workload_signal_team_limit < 1:
        raise SettingsError(
            "workload_signal_team_limit",
            f"must be >= 1 (0 would ignore every report), got {s.workload_signal_team_limit}",
        )
    if len(s.tpu_error_patterns) > MAX_TPU_ERROR_PATTERNS or any(
        len(p) > MAX_TPU_ERROR_PATTERN_CHARS for p in s.tpu_error_patterns
    ):
        raise SettingsError(
            "tpu_error_patterns",
            f"at most {MAX_TPU_ERROR_PATTERNS} patterns of at most {MAX_TPU_ERROR_PATTERN_CHARS} characters",
        )
    if not s.managed_accelerators:
        raise SettingsError("managed_accelerators", "must name at least one accelerator")
    if k.UNHEALTHY_TAINT_KEY in s.problem_taint_keys:
        raise SettingsError("problem_taint_keys", "must not contain the controller's own taint")


def settings_from_mapping(data: Mapping[str, Any] | None) -> Settings:
    """Build validated settings from a parsed document; missing fields keep their defaults."""
    if data is None:
        return Settings()
    if not isinstance(data, Mapping):
        raise SettingsError("", f"settings must be a mapping, got {type(data).__name__}")
    known = {f.name: f for f in fields(Settings)}
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        if name not in known:
            raise SettingsError(str(name), f"unknown field (known: {', '.join(sorted(known))})")
        kwargs[name] = COERCE[known[name].metadata["kind"]](name, value)
    return Settings(**kwargs)


def settings_from_json(text: str) -> Settings:
    try:
        data = json.loads(text) if text.strip() else None
    except json.JSONDecodeError as err:
        raise SettingsError("", f"invalid JSON: {err}") from err
    return settings_from_mapping(data)


def settings_from_yaml(text: str) -> Settings:
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise SettingsError("", f"invalid YAML: {err}") from err
    return settings_from_mapping(data)


def settings_schema() -> dict[str, dict[str, Any]]:
    """Field name -> {kind, default, doc}: for docs and the Pulumi component's ConfigMap."""
    out: dict[str, dict[str, Any]] = {}
    defaults = Settings().to_dict()
    for f in fields(Settings):
        assert f.default is not MISSING
        out[f.name] = {"kind": f.metadata["kind"], "default": defaults[f.name], "doc": f.metadata["doc"]}
    return out
