"""Decision thresholds: one frozen pydantic model, read from the stack file and from the controller's
config file alike.

Each field carries why its default is what it is (its description), its unit, its group and its source
(:func:`about`); the stack writes the camelCase aliases, the controller's file the snake_case names
(each reads both). Values are read by the kinds below (seconds take a Go duration through
``tpu_platform/hotswap/formats/duration.py``); :func:`settings_from_mapping` raises
:class:`SettingsError` naming the offending field.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Mapping
from typing import Annotated, Any, NamedTuple

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    TypeAdapter,
    ValidationError,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo
from pydantic_core import InitErrorDetails, PydanticCustomError

from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.formats.duration import DurationError, duration_seconds


class SettingsError(ValueError):
    """A settings value is invalid; ``field`` names it (``""`` for the document as a whole)."""

    def __init__(self, field_name: str, message: str) -> None:
        self.field = field_name
        super().__init__(f"settings field {field_name!r}: {message}" if field_name else message)


# -- value kinds: each reader takes what the config files hold and says what it expected ----------

_SECONDS = re.compile(r"[0-9]+(\.[0-9]+)?")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def _seconds(value: Any) -> float:
    """A number of seconds, or a Go duration (``90s``, ``1h30m``, ``500ms``) read by the one parser
    the stack's Kueue timeouts go through too; a bare number in text is seconds."""
    if isinstance(value, bool):
        raise ValueError(f"expected a duration in seconds, got {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        seconds = _duration_text(value)
    else:
        raise ValueError(f"expected seconds or a duration like '30s', '2m', got {value!r}")
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"must be a finite number >= 0, got {value!r}")
    return seconds


def _duration_text(value: str) -> float:
    text = value.strip()
    if _SECONDS.fullmatch(text):
        return float(text)
    try:
        return duration_seconds(text)
    except DurationError as err:
        raise ValueError(f"expected seconds or a duration like '30s', '2m', got {value!r}") from err


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected an integer, got {value!r}")
    return value


def _fraction(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a number in (0, 1], got {value!r}")
    return float(value)


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value


def _names(value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise ValueError(f"expected a list of strings, got {value!r}")
    for item in value:
        if not isinstance(item, str) or not item:
            raise ValueError(f"expected non-empty strings, got {item!r}")
    return tuple(value)


def team_pairs(value: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``{team: [namespace, ...]}`` (or its pairs) as sorted pairs. Teams may share a namespace (the
    stack allows it with ``create: false``); they are then one tenant (core/tenancy.py)."""
    items = value.items() if isinstance(value, Mapping) else value
    if not isinstance(items, list | tuple) and not isinstance(value, Mapping):
        raise ValueError(f"expected a mapping of team name to its namespaces, got {value!r}")
    out: list[tuple[str, tuple[str, ...]]] = []
    for item in items:
        if not isinstance(item, list | tuple) or len(item) != 2:
            raise ValueError(f"expected a mapping of team name to its namespaces, got {value!r}")
        team, namespaces = item
        if not isinstance(team, str) or not _DNS_LABEL.match(team):
            raise ValueError(f"team name {team!r} is not a DNS label")
        try:
            listed = _names(namespaces)
        except ValueError as err:
            raise ValueError(f"team {team!r}: {err}") from None
        for ns in listed:
            if not _DNS_LABEL.match(ns):
                raise ValueError(f"team {team!r}: namespace {ns!r} is not a DNS label")
        out.append((team, tuple(sorted(set(listed)))))
    if len({team for team, _ in out}) != len(out):
        raise ValueError("a team is listed twice")
    return tuple(sorted(out))


def _team_mapping(value: tuple[tuple[str, tuple[str, ...]], ...]) -> dict[str, list[str]]:
    return {team: list(namespaces) for team, namespaces in value}


Seconds = Annotated[float, BeforeValidator(_seconds)]
Count = Annotated[int, BeforeValidator(_count)]
Fraction = Annotated[float, BeforeValidator(_fraction)]
Flag = Annotated[bool, BeforeValidator(_flag)]
Names = Annotated[tuple[str, ...], BeforeValidator(_names)]
Teams = Annotated[
    tuple[tuple[str, tuple[str, ...]], ...],
    BeforeValidator(team_pairs),
    PlainSerializer(_team_mapping),
]


# -- what each field says about itself ---------------------------------------------------------

GROUPS: dict[str, str] = {
    "scope": "Which pools the controller manages.",
    "health": "When a pool is declared unhealthy, and when it is handed back.",
    "signals": "What counts as a problem on a node, besides NotReady, the not-ready/unreachable taints "
    "and GKE's maintenance signals (always read).",
    "recovery": "What the controller does for the work on an unhealthy pool.",
    "corroboration": "Compute Engine's word on the VM behind a suspect node.",
    "preemption": "Whole-slice preemption of lower-priority managed JobSets.",
    "maintenance": "Scheduled maintenance: moving work off a slice before its window.",
    "workload signals": "Chip and ICI failures, which leave the kubelet alive and the node Ready.",
    "tenancy": "Who counts as one tenant, and how far one tenant's word goes.",
}
"""The groups of the settings reference, in its order, each with what its settings decide."""

_FAILURE_MODEL = "shared/reference/failure-model.md"
_K8S = "kubernetes v1.34"


class About(NamedTuple):
    """What a setting says about itself besides its value."""

    doc: str
    unit: str
    group: str
    source: str


def _setting(default: Any, *, group: str, unit: str, source: str, doc: str) -> Any:
    """A settings field: its default, and its doc (why the default), unit, group and source."""
    assert group in GROUPS, group
    return Field(
        default,
        description=" ".join(doc.split()),
        json_schema_extra={"group": group, "unit": unit, "source": " ".join(source.split())},
    )


def about(name: str) -> About:
    """The doc, unit, group and source of the field ``name`` (snake_case)."""
    info: FieldInfo = Settings.model_fields[name]
    extra = info.json_schema_extra
    assert isinstance(extra, dict) and info.description is not None
    return About(info.description, str(extra["unit"]), str(extra["group"]), str(extra["source"]))


# -- each field's own range, next to its kind ---------------------------------------------------

MIN_LEASE_STALE_SECONDS = 20.0
"""The kubelet renews its node Lease every 10 s: below two renewals one late renewal would count."""

MIN_WORKLOAD_SIGNAL_REPEATS = 2
"""One workload report is one tenant's word: repetition means at least two."""
MAX_TPU_ERROR_PATTERNS = 16
MAX_TPU_ERROR_PATTERN_CHARS = 256


def _at_least_one(value: int) -> int:
    if value < 1:
        raise ValueError(f"must be >= 1, got {value}")
    return value


def _share(value: float) -> float:
    if not 0.0 < value <= 1.0:
        raise ValueError(f"must be in (0, 1], got {value}")
    return value


def _off_or_two_renewals(value: float) -> float:
    if value and value < MIN_LEASE_STALE_SECONDS:
        raise ValueError(
            f"must be 0 (off) or >= {MIN_LEASE_STALE_SECONDS:g} (two kubelet renewals), got {value}"
        )
    return value


def _repetition(value: int) -> int:
    if value < MIN_WORKLOAD_SIGNAL_REPEATS:
        raise ValueError(
            f"must be >= {MIN_WORKLOAD_SIGNAL_REPEATS} (one report is one tenant's word), got {value}"
        )
    return value


def _some_pools(value: int) -> int:
    if value < 1:
        raise ValueError(f"must be >= 1 (0 would ignore every report), got {value}")
    return value


def _bounded_patterns(value: tuple[str, ...]) -> tuple[str, ...]:
    if len(value) > MAX_TPU_ERROR_PATTERNS or any(len(p) > MAX_TPU_ERROR_PATTERN_CHARS for p in value):
        raise ValueError(
            f"at most {MAX_TPU_ERROR_PATTERNS} patterns of at most {MAX_TPU_ERROR_PATTERN_CHARS} characters"
        )
    return value


def _some_accelerator(value: tuple[str, ...]) -> tuple[str, ...]:
    if not value:
        raise ValueError("must name at least one accelerator")
    return value


def _not_our_taint(value: tuple[str, ...]) -> tuple[str, ...]:
    if k.UNHEALTHY_TAINT_KEY in value:
        raise ValueError("must not contain the controller's own taint")
    return value


class Settings(BaseModel):
    """Every threshold the decision core uses. All durations are seconds.

    Defaults come from shared/reference/failure-model.md; each field's description says why, and
    :func:`about` gives its unit, group and source too.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        extra="forbid",
        frozen=True,
    )

    unhealthy_after_seconds: Seconds = _setting(
        10.0,
        group="health",
        unit="seconds",
        source=f"{_FAILURE_MODEL} (the 1-minute hotswap target); {_K8S} node-monitor-grace-period (NotReady "
        "after 40-50 s of silence) and DefaultTolerationSeconds (eviction after 300 s)",
        doc="""T_bad: a pool is declared unhealthy once one of its nodes has shown a problem this long.
            The clock starts at the problem's own timestamp (e.g. the Ready condition's transition), and
            Ready only flips after the 40 s node-monitor grace period, so a dead kubelet is already 40 s
            old when counting starts. 10 s more filters kubelet restarts and status blips while keeping
            detection (about 50 s after the kubelet dies) inside the 1-minute hotswap target and far
            below the 300 s default eviction. A confirmed problem (a VM Compute Engine reads not
            running, confirmed workload reports) is not transient and declares at once.""",
    )
    healthy_after_seconds: Seconds = _setting(
        120.0,
        group="health",
        unit="seconds",
        source=f"{_FAILURE_MODEL} (a multi-host pool is repaired as a unit in ~10 min)",
        doc="""T_good: an unhealthy pool is untainted once every node has been clean this long. A
            repaired multi-host pool is recreated as a unit and its TPU runtime needs time to settle;
            two minutes of clean signals is small next to the ~10 min repair yet avoids handing the pool
            back to low-priority work just before it fails again.""",
    )
    flap_window_seconds: Seconds = _setting(
        3600.0,
        group="health",
        unit="seconds",
        source=f"{_FAILURE_MODEL} (the advised hourly checkpoint cadence)",
        doc="""Window over which unhealthy declarations are counted. One hour matches the advised
            checkpoint cadence: each failure inside it can cost a job up to an hour of work.""",
    )
    flap_threshold: Annotated[Count, AfterValidator(_at_least_one)] = _setting(
        3,
        group="health",
        unit="declarations",
        source="chosen: one failure is bad luck, a second can be repair fallout, a third is a pattern",
        doc="""Declarations within the flap window (the current one included) that make a pool
            'flapping'. Three: one failure is bad luck, a second can be repair fallout, a third is a
            pattern.""",
    )
    flapping_healthy_after_seconds: Seconds = _setting(
        900.0,
        group="health",
        unit="seconds",
        source=f"{_FAILURE_MODEL} (GKE auto-repair starts after ~10 min NotReady)",
        doc="""Clean time a flapping pool needs before it is untainted (replaces T_good). 15 min is
            longer than the ~10 min after which GKE auto-repair starts, so a flapping node gets repaired
            rather than handed work again.""",
    )
    dead_node_confirm_seconds: Seconds = _setting(
        30.0,
        group="recovery",
        unit="seconds",
        source=f"{_K8S} node-monitor-grace-period (50 s from 1.32); kubernetes-sigs/jobset #576 "
        "(BlockingRecreate waits on Terminating pods)",
        doc="""With force_delete_unconfirmed on: a node counts as dead (its Terminating pods may be
            force-deleted) after being NotReady/unreachable this long without Compute Engine confirming
            its VM down. NotReady already means 40-55 s without kubelet status (50 s
            node-monitor-grace-period from Kubernetes 1.32, counted from the controller manager's pass
            that saw the last renewal), so the kubelet has been silent 70-85 s; a merely slow node
            stays Ready and is never touched. Nothing
            else clears these pods before GKE repair (~10 min) and BlockingRecreate waits on them
            (jobset #576).""",
    )
    force_delete_unconfirmed: Flag = _setting(
        False,
        group="recovery",
        unit="on/off",
        source="chosen: off (unfenced; bench/mttr.py counts unsafe force deletions)",
        doc="""Opt-in, unfenced: force-delete the Terminating managed pods of a node NotReady for
            dead_node_confirm_seconds even though Compute Engine has not confirmed its VM down (no
            corroboration, an API error, or no answer yet). Off by default: a kubelet restart or a hung
            guest longer than NotReady + dead_node_confirm_seconds would lose pods whose containers
            still run, and a second copy of a worker would write the same checkpoints (bench/mttr.py
            counts these as unsafe force deletions). A RUNNING answer vetoes it even when on.""",
    )
    preemption_pending_seconds: Seconds = _setting(
        10.0,
        group="preemption",
        unit="seconds",
        source=f"{_K8S} kube-scheduler preemption (nominates within milliseconds)",
        doc="""A beneficiary's pods must have been unschedulable this long before the controller
            preempts for them. kube-scheduler tries (and nominates, if it can preempt) within
            milliseconds; 10 s lets it go first so the two never preempt for the same pod.""",
    )
    preemption_settle_seconds: Seconds = _setting(
        120.0,
        group="preemption",
        unit="seconds",
        source="chosen: pod deletion, JobSet recreation and scheduling, with margin",
        doc="""After a preemption the freed pools stay reserved for the beneficiary this long (and as
            long as the victim's pods are still terminating) so the controller does not preempt a second
            victim while the first drains and kube-scheduler binds. Two minutes covers pod deletion,
            JobSet recreation and scheduling with margin.""",
    )
    max_bad_node_fraction: Annotated[Fraction, AfterValidator(_share)] = _setting(
        0.55,
        group="health",
        unit="fraction",
        source=f"{_K8S} kube-controller-manager --unhealthy-zone-threshold (0.55)",
        doc="""If more than this fraction of managed nodes show problems at once, the controller holds
            all actions: the likely cause is the control plane or network, not hardware, and evicting
            everything would do harm. 0.55 mirrors kube-controller-manager's unhealthy-zone-threshold.
            1.0 disables the guard.""",
    )
    lease_stale_seconds: Annotated[Seconds, AfterValidator(_off_or_two_renewals)] = _setting(
        0.0,
        group="signals",
        unit="seconds",
        source=f"{_K8S} kubelet node Lease renewal every 10 s (nodeLeaseRenewIntervalFraction 0.25 of "
        "40 s) and node-monitor-grace-period (50 s)",
        doc="""Opt-in earlier failure signal: a node whose Lease in kube-node-lease has not been renewed
            this long is bad from renewTime + this (T_bad counts from there). The kubelet renews every
            10 s and NotReady needs 40-55 s of silence (Kubernetes 1.32+); 20 s (two missed renewals)
            detects a dead kubelet ~20-30 s sooner, at the risk of acting on a kubelet that is merely
            slow to renew, which is why it is off by default. 0: off; otherwise at least 20, so one
            missed renewal never counts.
            Alone never used to force-delete pods: that needs NotReady for dead_node_confirm_seconds,
            or (compute_corroboration) the VM read not running after the Lease went stale.""",
    )
    compute_corroboration: Flag = _setting(
        False,
        group="corroboration",
        unit="on/off",
        source="Compute Engine instances.get and zoneOperations.list through Workload Identity; a stack "
        "sets it with hotswap.computeCorroboration (on by default), which creates that access",
        doc="""Opt-in: ask Compute Engine about the VM behind a suspect node (NotReady, or a stale Lease
            with lease_stale_seconds on) and force-delete its managed pods as soon as the VM is
            confirmed not running (TERMINATED, STOPPED, SUSPENDED, REPAIRING, deleted, or a
            compute.instances.hostError after the kubelet's last renewal), instead of waiting
            dead_node_confirm_seconds. Needs the controller's Google service account (Workload
            Identity) with compute.instances.get and compute.zoneOperations.list. An API error or a
            RUNNING VM confirms nothing: the conservative path applies.""",
    )
    reset_silent_vms: Flag = _setting(
        True,
        group="corroboration",
        unit="on/off",
        source="Compute Engine instances.reset (the controller README, The fence)",
        doc="""With compute_corroboration on: hard-reset (Compute Engine instances.reset) the VM of a
            suspect node of a declared pool that Compute Engine reads RUNNING, and force-delete its
            managed pods once the reset is done (no process of the guest that ran them is left). It
            bounds a hung guest and Compute Engine's status lag after a host failure by the pool's
            declaration plus the reset; a kubelet that would have come back reboots instead. Needs
            compute.instances.reset besides the reads.""",
    )
    instance_evidence_max_age_seconds: Seconds = _setting(
        30.0,
        group="corroboration",
        unit="seconds",
        source="the controller's runtime compute_reread_seconds (5 s; 2 s after a failed read)",
        doc="""Compute Engine evidence older than this is ignored. The adapter re-reads a suspect
            node's VM every 5 s (runtime compute_reread_seconds; after a failed read every 2 s); 30 s
            tolerates a few failed reads in a row without acting on a stale view.""",
    )
    maintenance_lead_seconds: Seconds = _setting(
        0.0,
        group="maintenance",
        unit="seconds",
        source=f"{_FAILURE_MODEL} (maintenance is announced 7 days ahead with the "
        "cloud.google.com/scheduled-maintenance-time label)",
        doc="""A node labelled with cloud.google.com/scheduled-maintenance-time counts as bad from this
            long before that time. 0: only once the window starts (notices come 7 days ahead; acting on
            them early would evict work for nothing).""",
    )
    maintenance_moves: Flag = _setting(
        True,
        group="maintenance",
        unit="on/off",
        source="core/maintenance.py; the controller README, Maintenance-aware moves",
        doc="""Move managed work off a slice before its scheduled maintenance, at a checkpoint
            (core/maintenance.py): ask the JobSet for a checkpoint maintenance_checkpoint_seconds before
            the move deadline (window start - maintenance_move_lead_seconds), and move it (taint the pool,
            fail fast, preempt lower priority if needed) as soon as it answers, or at the deadline.
            Off: the window is handled as any other failure signal (maintenance_lead_seconds).""",
    )
    maintenance_move_lead_seconds: Seconds = _setting(
        300.0,
        group="maintenance",
        unit="seconds",
        source=f"{_K8S} default terminationGracePeriodSeconds (30 s); GKE drains the slice at the window",
        doc="""The move deadline is this long before the window starts (the
            cloud.google.com/scheduled-maintenance-time label). The workload's pods must be gone before
            GKE drains the slice: eviction, the default 30 s terminationGracePeriodSeconds, a trainer that
            still saves on SIGTERM, and a few reconciles; 5 min covers them, while the slice idles at most
            this long before its window.""",
    )
    maintenance_checkpoint_seconds: Seconds = _setting(
        300.0,
        group="maintenance",
        unit="seconds",
        source="bench/mttr.py's maintenance run (the controller README, Maintenance-aware moves)",
        doc="""The checkpoint is requested this long before the move deadline, so the move comes at
            most this plus maintenance_move_lead_seconds (10 min) before the window. Every minute
            earlier holds one slice more out of the fleet: in the benchmark (controller README,
            Maintenance-aware moves) 900 s raised lower-priority work lost above the recipe's, 300 s
            did not. A workload whose checkpoint takes longer than 5 min should be given more, or is
            moved at the deadline with its SIGTERM grace period. Notices come 7 days ahead; a request
            made days early would idle the slice for days.""",
    )
    maintenance_avoid_seconds: Seconds = _setting(
        7200.0,
        group="maintenance",
        unit="seconds",
        source=f"{_FAILURE_MODEL} (the advised hourly checkpoint cadence)",
        doc="""A slice whose scheduled maintenance starts within this is not taken from a lower-priority
            victim for managed work: the work would restart (compile, restore) only to be moved again.
            Two hours is two advised (hourly) checkpoint intervals of useful run.""",
    )
    fail_fast: Flag = _setting(
        True,
        group="recovery",
        unit="on/off",
        source=f"{_K8S} DefaultTolerationSeconds (not-ready/unreachable eviction after 300 s)",
        doc="""Evict managed pods on an unhealthy pool so JobSet restarts now rather than after the
            300 s not-ready/unreachable eviction.""",
    )
    clear_stuck_pods: Flag = _setting(
        True,
        group="recovery",
        unit="on/off",
        source="kubernetes-sigs/jobset #576 (BlockingRecreate waits on Terminating pods)",
        doc="""Force-delete (grace 0) managed pods stuck Terminating on confirmed-dead nodes so
            BlockingRecreate is not blocked until repair.""",
    )
    preemption: Flag = _setting(
        True,
        group="preemption",
        unit="on/off",
        source="the controller README, Preemption",
        doc="Preempt whole slices of lower-priority managed JobSets for unschedulable managed JobSets.",
    )
    protect_restart_budget: Flag = _setting(
        True,
        group="preemption",
        unit="on/off",
        source="JobSet failurePolicy (maxRestarts; rules DisruptionTarget -> FailJob + "
        "RestartJobSetAndIgnoreMaxRestarts)",
        doc="""Never choose a victim whose next restart would exceed its failurePolicy.maxRestarts
            (it would fail for good) unless its failure policy ignores disruptions
            (DisruptionTarget -> FailJob + RestartJobSetAndIgnoreMaxRestarts).""",
    )
    opt_out_namespaces: Names = _setting(
        (),
        group="preemption",
        unit="namespaces",
        source="the stack's hotswap.settings.optOutNamespaces (team namespaces only)",
        doc="""Namespaces whose managed JobSets may opt out of being victims with the annotation
            tpu-platform.dev/preemptible: "false". Elsewhere the annotation is ignored: a JobSet that
            takes the controller's help (fail fast, preemption for it) can be preempted in turn.""",
    )
    teams: Teams = _setting(
        (),
        group="tenancy",
        unit="team: namespaces",
        source="the stack's teams section (each team's namespaces), never hotswap.settings",
        doc="""The stack's teams and their namespaces (rendered from the stack's teams section). A
            tenant is a team, all its namespaces together. Two namespaces of one team are one tenant's
            word, never two independent ones, and a team whose reports alone took a pool out of service
            may preempt only its own JobSets while that pool is out. With teams declared, a namespace
            of no team is not heard on its own word (it could be any team's second voice); with none
            declared, each namespace is a tenant.""",
    )
    managed_accelerators: Annotated[Names, AfterValidator(_some_accelerator)] = _setting(
        ("tpu-v6e-slice",),
        group="scope",
        unit="accelerator names",
        source="GKE node label cloud.google.com/gke-tpu-accelerator (TPU v6e: tpu-v6e-slice)",
        doc="Values of cloud.google.com/gke-tpu-accelerator whose node pools the controller manages.",
    )
    problem_condition_types: Names = _setting(
        (
            "KernelDeadlock",
            "ReadonlyFilesystem",
            "FrequentKubeletRestart",
            "FrequentContainerdRestart",
        ),
        group="signals",
        unit="condition types",
        source="node-problem-detector's default problem conditions",
        doc="""Node condition types that mean trouble when status is True (node-problem-detector). Ready,
            the not-ready/unreachable taints and GKE maintenance signals are always checked.""",
    )
    problem_taint_keys: Annotated[Names, AfterValidator(_not_our_taint)] = _setting(
        (),
        group="signals",
        unit="taint keys",
        source="none documented for TPU v6e: the operator's own health checker",
        doc="""Extra taint keys that mark a node bad (e.g. a TPU health checker's own taint). No
            documented TPU chip/ICI signal exists for v6e, so this is left to the operator.""",
    )
    workload_signals: Flag = _setting(
        True,
        group="workload signals",
        unit="on/off",
        source="the controller README, Chip and ICI failures",
        doc="""Read TPU errors that workloads report when their container fails (a non-zero exit whose
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
    )
    tpu_error_patterns: Annotated[Names, AfterValidator(_bounded_patterns)] = _setting(
        ("SLICE_FAILURE_CHIP_DRIVER_ERROR",),
        group="workload signals",
        unit="substrings",
        source="openxla/xla xla/pjrt/c/pjrt_c_api_callback_extension.h (PJRT_Callback_Tpu_SliceFailureType)",
        doc="""Substrings of a failed container's termination reason or message that report a TPU
            hardware error. The default is the TPU runtime's slice failure "due to a chip driver
            reporting some error (could correspond to bad TPU or ICI link going down)" (openxla/xla
            xla/pjrt/c/pjrt_c_api_callback_extension.h, PJRT_Callback_Tpu_SliceFailureType). The
            runtime logs it; it reaches the termination message with terminationMessagePolicy
            FallbackToLogsOnError (the last log lines) or when the workload writes it there. No exit
            code for a chip error is documented, so exit codes alone never count.""",
    )
    workload_signal_window_seconds: Seconds = _setting(
        600.0,
        group="workload signals",
        unit="seconds",
        source=f"{_FAILURE_MODEL} (infrastructure repair takes up to 10 minutes)",
        doc="""How long a workload's TPU-error report counts. Ten minutes is the "up to 10 minutes" of
            infrastructure repair (failure-model.md): reports on a slice within it are taken as the
            same fault, and a confirmed pool stays bad at least this long after the last report, so
            it is not handed back before a repair could have started. A JobSet restarting on the same
            slice fails again well within it (a restart takes under a minute).""",
    )
    workload_signal_repeats: Annotated[Count, AfterValidator(_repetition)] = _setting(
        2,
        group="workload signals",
        unit="reports",
        source="AI-Hypercomputer/maxtext benchmarks/maxtest/getting_started.md (worker 0 logs the "
        "detected slice failure too)",
        doc="""Reports from distinct pods that confirm a pool by repetition. Two: a multi-host slice's
            failure is seen by the host with the bad chip and by the runtime's coordinator (worker 0
            logs the detected slice failure, AI-Hypercomputer/maxtext
            benchmarks/maxtest/getting_started.md), and a restart on the same broken slice fails
            again; one report alone is a single tenant's word. At least 2.""",
    )
    workload_signal_team_limit: Annotated[Count, AfterValidator(_some_pools)] = _setting(
        1,
        group="tenancy",
        unit="pools",
        source="chosen: a chip or ICI fault breaks one slice",
        doc="""Pools a tenant's reports alone may take out of service within
            workload_signal_team_window_seconds; past it, that tenant's reports only make pools suspect
            until the oldest declaration leaves the window. One: a chip or ICI fault breaks one slice,
            and a second slice of the same team failing on the team's word within the hour is likelier
            the workload's own bug (or a forged report) than a second independent hardware fault. A
            system signal (withdrawn chips, a node condition) confirms whatever the count. At least 1.""",
    )
    workload_signal_team_window_seconds: Seconds = _setting(
        3600.0,
        group="tenancy",
        unit="seconds",
        source=f"flap_window_seconds: {_FAILURE_MODEL} (the advised hourly checkpoint cadence)",
        doc="""The window of workload_signal_team_limit. One hour, the flap window: each declaration
            can cost the team up to an hour of work at the advised checkpoint cadence. A declaration is
            also kept for as long as the pool it took out stays out, however long that is.""",
    )
    chips_withdrawn_signal: Flag = _setting(
        True,
        group="workload signals",
        unit="on/off",
        source="kubernetes/kubernetes pkg/kubelet/cm/devicemanager/manager.go (GetCapacity, "
        "markResourceUnhealthy)",
        doc="""A node whose allocatable google.com/tpu is below its capacity has chips the device
            plugin marked Unhealthy (the kubelet counts only healthy devices as allocatable:
            kubernetes/kubernetes pkg/kubelet/cm/devicemanager/manager.go, GetCapacity). Written by
            the kubelet, not by a tenant, it confirms a workload's TPU-error report on the pool at
            once. Alone it only makes the pool suspect: the kubelet also marks every device Unhealthy
            while the device plugin is disconnected (markResourceUnhealthy, e.g. a plugin restart).
            GKE does not document whether its TPU device plugin reports chips Unhealthy.""",
    )

    def __init__(self, **values: Any) -> None:
        """Built directly, settings are validated as a document's are, and refused the same way."""
        try:
            super().__init__(**values)
        except ValidationError as err:
            raise _settings_error(err) from None

    # Marked as pydantic's own initializer, so a Settings validated inside another model (the stack's
    # hotswap.settings) is built by pydantic directly and keeps each error's field path.
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    @model_validator(mode="after")
    def _between_fields(self) -> Settings:
        """The rules that tie one field to another, each reported on the field it refuses."""
        problems: list[tuple[str, str]] = []
        if self.flapping_healthy_after_seconds < self.healthy_after_seconds:
            problems.append(
                (
                    "flapping_healthy_after_seconds",
                    f"must be >= healthy_after_seconds ({self.healthy_after_seconds}), "
                    f"got {self.flapping_healthy_after_seconds}",
                )
            )
        if self.compute_corroboration and self.instance_evidence_max_age_seconds <= 0:
            problems.append(
                ("instance_evidence_max_age_seconds", "must be > 0 with compute_corroboration on, got 0")
            )
        if self.workload_signals and self.workload_signal_window_seconds <= 0:
            problems.append(("workload_signal_window_seconds", "must be > 0 with workload_signals on, got 0"))
        if problems:
            raise ValidationError.from_exception_data(
                type(self).__name__,
                [
                    InitErrorDetails(
                        type=PydanticCustomError("value_error", "{reason}", {"reason": reason}),
                        loc=(type(self).model_fields[name].alias or name,),
                        input=getattr(self, name),
                    )
                    for name, reason in problems
                ],
            )
        return self

    def replace(self, **changes: Any) -> Settings:
        """A copy with these fields (by name) changed, validated as a new one is."""
        return type(self)(**{**dict(self), **changes})

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON/YAML-ready dict by field name (tuples become lists, teams a mapping)."""
        return self.model_dump(mode="json")


_NAMES = {info.alias or name: name for name, info in Settings.model_fields.items()}
"""Field name by its camelCase alias (and by itself)."""
_NAMES.update({name: name for name in Settings.model_fields})


def _settings_error(err: ValidationError) -> SettingsError:
    """The first problem pydantic found, naming the field as the controller's file does."""
    first = err.errors(include_url=False)[0]
    key = str(first["loc"][0]) if first["loc"] else ""
    name = _NAMES.get(key, key)
    if first["type"] == "extra_forbidden":
        close = difflib.get_close_matches(key, list(_NAMES), n=1)
        meant = f" (did you mean {_NAMES[close[0]]!r}?)" if close else ""
        return SettingsError(name, f"unknown field{meant}; known: {', '.join(Settings.model_fields)}")
    return SettingsError(name, str(first["msg"]).removeprefix("Value error, "))


def settings_from_mapping(data: Mapping[str, Any] | None) -> Settings:
    """Build validated settings from a parsed document; missing fields keep their defaults."""
    if data is None:
        return Settings()
    if not isinstance(data, Mapping):
        raise SettingsError("", f"settings must be a mapping, got {type(data).__name__}")
    try:
        return Settings.model_validate(dict(data))
    except ValidationError as err:
        raise _settings_error(err) from None


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


def setting_value(name: str, value: Any) -> Any:
    """One setting's value as the model reads it: its kind and its own range (not the rules between
    fields), or SettingsError naming it. ``name`` is the field's name or its camelCase alias."""
    field = _NAMES.get(name)
    if field is None:
        raise SettingsError(name, "unknown field")
    info = Settings.model_fields[field]
    try:
        return TypeAdapter(info.rebuild_annotation()).validate_python(value)
    except ValidationError as err:
        raise SettingsError(field, str(err.errors()[0]["msg"]).removeprefix("Value error, ")) from None


def settings_schema() -> dict[str, dict[str, Any]]:
    """Field name -> {key (the stack's), group, unit, default, source, doc}, in the fields' order: the
    settings reference (``tpu_platform/hotswap/settings_doc.py``) is written from it."""
    defaults = Settings().to_dict()
    out: dict[str, dict[str, Any]] = {}
    for name, info in Settings.model_fields.items():
        said = about(name)
        out[name] = {
            "key": info.alias,
            "group": said.group,
            "unit": said.unit,
            "default": defaults[name],
            "source": said.source,
            "doc": said.doc,
        }
    return out
