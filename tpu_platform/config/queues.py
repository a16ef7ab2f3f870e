"""The ``priorities``, ``kueue``, ``cohorts`` and ``teams`` stack sections.

Who runs, in what order, and within which quota.

Kueue decides admission from ClusterQueue quotas; this stack model describes them in the
units the hardware has (whole TPU slices of one shape), so the validation here can catch
what Kueue's webhook would reject, what it would silently ignore, and what the pools can't
back. Every check reports its config path and the fix; all problems are reported at once.

Rendering lives in ``tpu_platform.kueue``; this module only parses, names and checks.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from .. import catalog
from .base import StackModel, check_dns_label, check_dns_subdomain

if TYPE_CHECKING:
    from .platform import Loc, PlatformConfig, Problems

# Namespaces every cluster has: a team may queue work there, but the platform never creates or owns them.
BUILTIN_NAMESPACES = frozenset({"default"})
# Namespaces that belong to Kubernetes, GKE or the platform's controllers: never a team's.
RESERVED_NAMESPACES = frozenset(
    {
        "kube-system",
        "kube-public",
        "kube-node-lease",
        "kueue-system",
        "jobset-system",
        "gke-managed-system",
        "gke-gmp-system",
        "gmp-system",
        "gmp-public",
    }
)

# Kubernetes reserves priority values above one billion (and the ``system-`` prefix) for system classes.
MAX_USER_PRIORITY = 1_000_000_000
MIN_PRIORITY = -2_147_483_648

DURATION_RE = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$")
WEIGHT_RE = re.compile(r"^[0-9]+(\.[0-9]+)?$")
QUANTITY_RE = re.compile(r"^[0-9]+(\.[0-9]+)?(m|Ki|Mi|Gi|Ti|k|M|G|T)?$")
FEATURE_GATE_RE = re.compile(r"^[A-Z][A-Za-z0-9]*$")

PreemptionStrategy = Literal["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
VALID_STRATEGY_SETS: tuple[tuple[str, ...], ...] = (
    ("LessThanOrEqualToFinalShare",),
    ("LessThanInitialShare",),
    ("LessThanOrEqualToFinalShare", "LessThanInitialShare"),
)

# The frameworks Kueue v0.19.2 can manage (apis/config/v1beta2 Integrations.Frameworks).
KNOWN_FRAMEWORKS = (
    "batch/job",
    "kubeflow.org/mpijob",
    "ray.io/rayjob",
    "ray.io/rayservice",
    "ray.io/raycluster",
    "jobset.x-k8s.io/jobset",
    "kubeflow.org/paddlejob",
    "kubeflow.org/pytorchjob",
    "kubeflow.org/tfjob",
    "kubeflow.org/xgboostjob",
    "kubeflow.org/jaxjob",
    "trainer.kubeflow.org/trainjob",
    "workload.codeflare.dev/appwrapper",
    "sparkoperator.k8s.io/sparkapplication",
    "pod",
    "deployment",
    "statefulset",
    "leaderworkerset.x-k8s.io/leaderworkerset",
)
REQUIRED_FRAMEWORKS = ("batch/job", "jobset.x-k8s.io/jobset")

RECLAIM_OUT_OF_COHORT = (
    "reclaimOutOfCohort exists in no Kueue version (the seed document invented it; Kueue would "
    "drop it or reject the object). To take back quota this queue lent to its cohort, use "
    "preemption.reclaimWithinCohort (Never | LowerPriority | Any); to preempt lower-priority work "
    "while borrowing, use preemption.borrowWithinCohort.policy: LowerPriority"
)


def _check_duration(value: str | None, what: str) -> str | None:
    if value is not None and not DURATION_RE.match(value):
        raise ValueError(f"{what} {value!r} is not a duration such as '30m', '1h30m' or '90s'")
    return value


def _weight(value: Any) -> str | None:
    """Fair-sharing weights: a non-negative decimal, kept as text (Kubernetes quantities)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"fair-sharing weight {value!r} must be a non-negative number such as 1 or 0.5")
    text = str(value).strip()
    if not WEIGHT_RE.match(text):
        raise ValueError(f"fair-sharing weight {value!r} must be a non-negative number such as 1 or 0.5")
    number = float(text)
    if 0 < number <= 1e-9:
        raise ValueError(
            f"fair-sharing weight {value!r} must be 0 or greater than 1e-9 (Kueue rounds it to 0)"
        )
    return text


# --------------------------------------------------------------------------- priorities


class PriorityConfig(StackModel):
    """One priority level: rendered as a PriorityClass (for kube-scheduler and hotswap) and a
    Kueue WorkloadPriorityClass with the same name and value (for admission order)."""

    name: str
    value: int = Field(ge=MIN_PRIORITY, le=MAX_USER_PRIORITY)
    description: str | None = Field(None, max_length=2048)
    global_default: bool = False
    preemption_policy: Literal["PreemptLowerPriority", "Never"] = "PreemptLowerPriority"

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        check_dns_subdomain(value, "priority name")
        if value.startswith("system-"):
            raise ValueError(f"priority name {value!r}: the 'system-' prefix is reserved by Kubernetes")
        return value


DEFAULT_PRIORITIES: tuple[PriorityConfig, ...] = (
    PriorityConfig(
        name="low-priority-job",
        value=1_000_000,
        description="This priority class should be used for low priority pods only.",
    ),
    PriorityConfig(
        name="high-priority-job",
        value=2_000_000,
        description="This priority class should be used for critical pods only.",
    ),
)


# --------------------------------------------------------------------------- kueue


def _default_strategies() -> list[PreemptionStrategy]:
    return ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]


class FairSharingConfig(StackModel):
    """Kueue fair sharing: idle quota goes to the cohort member with the lowest weighted share,
    and preemption evens shares out, so low-priority work eventually runs."""

    enabled: bool = True
    preemption_strategies: list[PreemptionStrategy] = Field(default_factory=_default_strategies)

    @field_validator("preemption_strategies")
    @classmethod
    def _strategies(cls, value: list[str]) -> list[str]:
        if tuple(value) not in VALID_STRATEGY_SETS:
            valid = "; ".join(f"[{', '.join(s)}]" for s in VALID_STRATEGY_SETS)
            raise ValueError(
                f"preemptionStrategies {value} is not a combination Kueue accepts; use one of {valid}"
            )
        return value


class RequeuingStrategyConfig(StackModel):
    """How a workload evicted for not becoming ready is queued again."""

    timestamp: Literal["Eviction", "Creation"] = "Eviction"
    backoff_limit_count: int | None = Field(None, ge=0, description="Unset: requeue forever.")
    backoff_base_seconds: int = Field(60, ge=0)
    backoff_max_seconds: int = Field(3600, ge=0)


class WaitForPodsReadyConfig(StackModel):
    """Evict and requeue a workload whose pods are not all ready in time (on by default since Kueue 0.19).

    For TPU slices this frees quota held by a JobSet whose slice never came up; ``recoveryTimeout``
    also bounds how long a running workload may wait for replacement pods after a failure.
    """

    enabled: bool = True
    timeout: str = "30m"
    recovery_timeout: str | None = Field(None, description="Defaults to timeout; '0s' disables it.")
    block_admission: bool = False
    requeuing_strategy: RequeuingStrategyConfig | None = None

    @field_validator("timeout", "recovery_timeout")
    @classmethod
    def _durations(cls, value: str | None) -> str | None:
        return _check_duration(value, "duration")


class MetricsConfig(StackModel):
    """Kueue's Prometheus metrics."""

    enable_cluster_queue_resources: bool = Field(True, description="Quota and usage per ClusterQueue.")
    service_monitor: bool = Field(
        False, description="Create a ServiceMonitor (needs the prometheus-operator CRDs in the cluster)."
    )


class ResourceListConfig(StackModel):
    """CPU and memory of a controller container."""

    cpu: str | None = None
    memory: str | None = None

    @field_validator("cpu", "memory")
    @classmethod
    def _quantity(cls, value: str | None) -> str | None:
        if value is not None and not QUANTITY_RE.match(str(value)):
            raise ValueError(f"{value!r} is not a Kubernetes quantity such as '500m', '2' or '1Gi'")
        return value


class ControllerConfig(StackModel):
    """Replicas and resources of a controller; unset values are sized from the fleet."""

    replicas: int | None = Field(None, ge=1, le=5)
    requests: ResourceListConfig | None = None
    limits: ResourceListConfig | None = None


class FlavorNameConfig(StackModel):
    """Name the ResourceFlavor of one slice shape (default ``tpu-v6e-<topology>``)."""

    topology: str
    multi_host: bool | None = None
    name: str

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_dns_subdomain(value, "flavor name")


class KueueConfig(StackModel):
    """Kueue's controller Configuration and the two installs (Kueue 0.19.2, JobSet 0.12.0)."""

    misused_keys: ClassVar[dict[str, str]] = {
        "enableVisibilityAPF": (
            "enableVisibilityAPF stays off on GKE: GKE's flowcontrol guardrail webhook rejects Kueue's "
            "FlowSchema (kueue issue #5374), which fails the whole install; remove it"
        ),
        "version": "Kueue is pinned to 0.19.2 and JobSet to 0.12.0 by the platform; remove it",
        "managerConfig": (
            "the Kueue Configuration is rendered from this section (fairSharing, waitForPodsReady, "
            "metrics, integrations, ...); remove managerConfig"
        ),
    }

    fair_sharing: FairSharingConfig = FairSharingConfig()
    wait_for_pods_ready: WaitForPodsReadyConfig = WaitForPodsReadyConfig()
    metrics: MetricsConfig = MetricsConfig()
    integrations: list[str] = Field(
        default_factory=list, description="Frameworks besides batch/job and jobset.x-k8s.io/jobset."
    )
    manage_jobs_without_queue_name: bool = Field(
        False, description="Suspend jobs without a queue-name label in the teams' namespaces."
    )
    quota_check_strategy: Literal["IgnoreUndeclared", "BlockUndeclared"] = Field(
        "IgnoreUndeclared",
        description="IgnoreUndeclared: only google.com/tpu is quota-checked; BlockUndeclared would hold "
        "every pod that also requests cpu or memory, which TPU ClusterQueues do not cover.",
    )
    allow_overcommit: bool = Field(
        False, description="Let nominal quotas add up to more slices than the pools have."
    )
    feature_gates: dict[str, bool] = Field(default_factory=dict)
    controller: ControllerConfig = ControllerConfig()
    jobset: ControllerConfig = ControllerConfig()
    flavors: list[FlavorNameConfig] = Field(default_factory=list)

    @field_validator("integrations")
    @classmethod
    def _integrations(cls, value: list[str]) -> list[str]:
        for framework in value:
            if framework not in KNOWN_FRAMEWORKS:
                raise ValueError(
                    f"integration {framework!r} is not a Kueue 0.19 framework; valid: "
                    f"{', '.join(KNOWN_FRAMEWORKS)}"
                )
        return value

    @field_validator("feature_gates")
    @classmethod
    def _gates(cls, value: dict[str, bool]) -> dict[str, bool]:
        for name in value:
            if not FEATURE_GATE_RE.match(name):
                raise ValueError(
                    f"feature gate {name!r} is not a Kueue feature gate name such as "
                    f"'TopologyAwareScheduling'"
                )
        if "DisableWaitForPodsReady" in value:
            raise ValueError(
                "use waitForPodsReady.enabled instead of the DisableWaitForPodsReady feature gate"
            )
        return value

    def frameworks(self) -> list[str]:
        """Integrations Kueue manages: batch/job and JobSet always, then the stack's extras."""
        return list(dict.fromkeys([*REQUIRED_FRAMEWORKS, *self.integrations]))

    def flavor_name(self, shape: catalog.SliceShape) -> str:
        """The ResourceFlavor name of a slice shape: the stack's choice, else ``tpu-v6e-<topology>``."""
        for entry in self.flavors:
            if _entry_shape(entry.topology, entry.multi_host) == shape:
                return entry.name
        return default_flavor_name(shape)


def default_flavor_name(shape: catalog.SliceShape) -> str:
    """``tpu-v6e-4x4``; the two-VM form of 2x4 (the one that shares labels) is ``tpu-v6e-2x4-multihost``."""
    base = f"tpu-v6e-{shape.topology}"
    if shape == catalog.lookup(shape.topology):
        return base
    return f"{base}-multihost"


def _entry_shape(topology: str, multi_host: bool | None) -> catalog.SliceShape | None:
    try:
        return catalog.lookup(topology, multi_host)
    except catalog.UnsupportedSliceError:
        return None


# --------------------------------------------------------------------------- quotas


class QuotaConfig(StackModel):
    """Quota of one slice shape, in whole slices (or in chips that make whole slices).

    ``slices``/``chips`` is the nominal quota: guaranteed to this queue. ``borrowingLimit*``
    caps what it may borrow from its cohort on top (unset: no cap); ``lendingLimit*`` caps what
    it lends to the cohort (unset: everything it is not using). Limits need a cohort.
    """

    misused_keys: ClassVar[dict[str, str]] = {
        "nominalQuota": "write the nominal quota as slices: <n> (whole slices) or chips: <n>",
        "borrowingLimit": "write borrowingLimitSlices: <n> (or borrowingLimitChips)",
        "lendingLimit": "write lendingLimitSlices: <n> (or lendingLimitChips)",
        "flavor": (
            "name the shape with topology (and multiHost for 2x4); flavors are named in "
            "tpu-platform:kueue.flavors"
        ),
        "name": (
            "name the shape with topology (and multiHost for 2x4); flavors are named in "
            "tpu-platform:kueue.flavors"
        ),
    }

    topology: str
    multi_host: bool | None = None
    slices: int | None = Field(None, ge=0)
    chips: int | None = Field(None, ge=0)
    borrowing_limit_slices: int | None = Field(None, ge=0)
    borrowing_limit_chips: int | None = Field(None, ge=0)
    lending_limit_slices: int | None = Field(None, ge=0)
    lending_limit_chips: int | None = Field(None, ge=0)

    def shape(self) -> catalog.SliceShape | None:
        return _entry_shape(self.topology, self.multi_host)

    def resolve(self) -> ResolvedQuota:
        """Whole slices of a validated entry (the cross-checks guarantee the chips divide)."""
        shape = self.shape()
        if shape is None:
            raise ValueError(f"quota for unknown topology {self.topology!r}")
        return ResolvedQuota(
            shape=shape,
            nominal=_as_slices(self.slices, self.chips, shape) or 0,
            borrowing_limit=_as_slices(self.borrowing_limit_slices, self.borrowing_limit_chips, shape),
            lending_limit=_as_slices(self.lending_limit_slices, self.lending_limit_chips, shape),
        )


@dataclass(frozen=True, slots=True)
class ResolvedQuota:
    """One flavor's quota in whole slices; ``None`` limits mean "no limit"."""

    shape: catalog.SliceShape
    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


def _as_slices(slices: int | None, chips: int | None, shape: catalog.SliceShape) -> int | None:
    if slices is not None:
        return slices
    if chips is not None:
        return chips // shape.chips
    return None


# --------------------------------------------------------------------------- cohorts and teams


class CohortConfig(StackModel):
    """A Kueue Cohort object: a node of the borrowing tree, optionally under ``parentName``
    (hierarchical cohorts), with a fair-sharing weight and optional shared quota of its own."""

    misused_keys: ClassVar[dict[str, str]] = {
        "parent": "write parentName (the Kueue v1beta2 field)",
        "cohort": "write parentName to nest this cohort under another",
        "weight": "write fairSharingWeight",
    }

    name: str
    parent_name: str | None = None
    fair_sharing_weight: str | None = None
    quota: list[QuotaConfig] = Field(default_factory=list)

    @field_validator("fair_sharing_weight", mode="before")
    @classmethod
    def _fair_sharing_weight(cls, value: Any) -> str | None:
        return _weight(value)

    @field_validator("name", "parent_name")
    @classmethod
    def _names(cls, value: str | None) -> str | None:
        return None if value is None else check_dns_subdomain(value, "cohort name")


class NamespaceConfig(StackModel):
    """A namespace whose workloads the team's ClusterQueue admits."""

    name: str
    create: bool | None = Field(
        None, description="Create and own it (default), or use an existing one; 'default' is never created."
    )
    labels: dict[str, str] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_dns_label(value, "namespace")

    @property
    def created(self) -> bool:
        return self.name not in BUILTIN_NAMESPACES if self.create is None else self.create


class LocalQueueConfig(StackModel):
    """A LocalQueue: what jobs name in their ``kueue.x-k8s.io/queue-name`` label."""

    name: str | None = Field(None, description="Default: <team>-queue.")
    namespace: str | None = Field(None, description="Default: the team's first namespace.")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        return None if value is None else check_dns_subdomain(value, "local queue name")


class BorrowWithinCohortConfig(StackModel):
    """Preempt other cohort members' lower-priority work while borrowing."""

    policy: Literal["Never", "LowerPriority"] = "Never"
    max_priority_threshold: int | str | None = Field(
        None, description="A priority name or value: only workloads at or below it are preempted."
    )


class PreemptionConfig(StackModel):
    """The ClusterQueue's preemption policy (Kueue's defaults: never preempt)."""

    misused_keys: ClassVar[dict[str, str]] = {"reclaimOutOfCohort": RECLAIM_OUT_OF_COHORT}

    within_cluster_queue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] = "Never"
    reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] = "Never"
    borrow_within_cohort: BorrowWithinCohortConfig | None = None


class TeamConfig(StackModel):
    """A team: its namespaces, one ClusterQueue with quota per slice shape, and its LocalQueues."""

    misused_keys: ClassVar[dict[str, str]] = {
        "cohort": (
            "write cohortName: 'cohort' is the Kueue v1beta1 field; v1beta2 ClusterQueues use cohortName"
        ),
        "reclaimOutOfCohort": RECLAIM_OUT_OF_COHORT,
        "namespaceSelector": (
            "list the team's namespaces under namespaces; the platform renders a selector that admits "
            "exactly those (a null selector would admit no namespace, {} every namespace)"
        ),
        "resourceGroups": "write quota: [{topology: 4x4, slices: 2}]; the platform renders resourceGroups",
        "nominalQuota": "write quota: [{topology: 4x4, slices: 2}]",
        "namespace": "write namespaces: [<name>] (a list)",
        "localQueue": "write localQueues: [{name: ..., namespace: ...}] (a list)",
        "clusterQueue": "write clusterQueueName: <name>",
        "weight": "write fairSharingWeight",
        "fairSharing": "write fairSharingWeight: <number>",
    }

    name: str
    cluster_queue_name: str | None = Field(None, description="Default: <team>-cq.")
    cohort_name: str | None = None
    namespaces: list[NamespaceConfig] | None = Field(None, description="Default: [<team>], created.")
    local_queues: list[LocalQueueConfig] | None = Field(None, description="Default: <team>-queue.")
    quota: list[QuotaConfig] = Field(default_factory=list)
    queueing_strategy: Literal["BestEffortFIFO", "StrictFIFO"] = "BestEffortFIFO"
    preemption: PreemptionConfig = PreemptionConfig()
    fair_sharing_weight: str | None = None
    stop_policy: Literal["None", "Hold", "HoldAndDrain"] | None = None

    @field_validator("fair_sharing_weight", mode="before")
    @classmethod
    def _fair_sharing_weight(cls, value: Any) -> str | None:
        return _weight(value)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_dns_label(value, "team name")

    @field_validator("cluster_queue_name", "cohort_name")
    @classmethod
    def _object_names(cls, value: str | None) -> str | None:
        return None if value is None else check_dns_subdomain(value, "name")

    @model_validator(mode="before")
    @classmethod
    def _namespace_shorthand(cls, data: Any) -> Any:
        """``namespaces: [research]`` is short for ``[{name: research}]``."""
        if isinstance(data, dict) and isinstance(data.get("namespaces"), list):
            data = dict(data)
            data["namespaces"] = [{"name": n} if isinstance(n, str) else n for n in data["namespaces"]]
        return data

    @property
    def cluster_queue(self) -> str:
        return self.cluster_queue_name or f"{self.name}-cq"

    def namespace_list(self) -> list[NamespaceConfig]:
        if self.namespaces is None:
            return [NamespaceConfig(name=self.name)]
        return list(self.namespaces)

    def namespace_names(self) -> list[str]:
        return [ns.name for ns in self.namespace_list()]

    def local_queue_list(self) -> list[tuple[str, str]]:
        """``(namespace, name)`` of each LocalQueue, defaults filled in."""
        namespaces = self.namespace_names()
        first = namespaces[0] if namespaces else self.name
        entries = self.local_queues if self.local_queues is not None else [LocalQueueConfig()]
        return [(lq.namespace or first, lq.name or f"{self.name}-queue") for lq in entries]

    def resolved_quota(self) -> list[ResolvedQuota]:
        """Quota per shape, in catalog order (smallest slice first)."""
        order = {shape: i for i, shape in enumerate(catalog.all_shapes())}
        return sorted((q.resolve() for q in self.quota), key=lambda rq: order[rq.shape])


# --------------------------------------------------------------------------- cross-checks


def pool_slices_by_shape(cfg: PlatformConfig) -> dict[catalog.SliceShape, int]:
    """Slices per shape the slice pools provide (pools with unknown shapes are skipped)."""
    counts: Counter[catalog.SliceShape] = Counter()
    for pool in cfg.slice_pools:
        shape = _entry_shape(pool.topology, pool.multi_host)
        if shape is not None:
            counts[shape] += pool.count
    return dict(counts)


def _describe_shape(shape: catalog.SliceShape) -> str:
    if shape.topology == "2x4":
        return f"2x4 ({'multi' if shape.multi_host else 'single'}-host)"
    return shape.topology


def _closest(name: str, options: list[str]) -> str:
    close = difflib.get_close_matches(name, options, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_priorities(cfg: PlatformConfig, problems: Problems) -> None:
    names: dict[str, int] = {}
    values: dict[int, str] = {}
    defaults: list[str] = []
    for index, prio in enumerate(cfg.priorities):
        here: Loc = ("priorities", index)
        if prio.name in names:
            problems.add((*here, "name"), f"priority {prio.name!r} is also priorities[{names[prio.name]}]")
        else:
            names[prio.name] = index
        if prio.value in values:
            problems.add(
                (*here, "value"),
                f"{prio.value} is also the value of {values[prio.value]!r}; give each priority a distinct "
                "value so the admission order between them is defined",
            )
        else:
            values[prio.value] = prio.name
        if prio.global_default:
            defaults.append(prio.name)
    if len(defaults) > 1:
        problems.add(
            ("priorities",),
            f"{', '.join(defaults)} are all globalDefault; Kubernetes allows at most one default "
            f"PriorityClass",
        )


def check_kueue(cfg: PlatformConfig, problems: Problems) -> None:
    provided = pool_slices_by_shape(cfg)
    seen_shapes: dict[catalog.SliceShape, int] = {}
    seen_names: dict[str, int] = {}
    for index, entry in enumerate(cfg.kueue.flavors):
        here: Loc = ("kueue", "flavors", index)
        shape = _check_shape(entry.topology, entry.multi_host, here, problems)
        if shape is None:
            continue
        if shape not in provided:
            problems.add(
                (*here, "topology"),
                f"no slice pool provides {_describe_shape(shape)} slices; name flavors only for shapes in "
                f"slicePools",
            )
        if shape in seen_shapes:
            problems.add(
                here, f"{_describe_shape(shape)} is already named by kueue.flavors[{seen_shapes[shape]}]"
            )
        seen_shapes[shape] = index
        if entry.name in seen_names:
            problems.add(
                (*here, "name"),
                f"flavor name {entry.name!r} is also used by kueue.flavors[{seen_names[entry.name]}]",
            )
        seen_names[entry.name] = index
    defaults = {default_flavor_name(shape): shape for shape in provided if shape not in seen_shapes}
    for index, entry in enumerate(cfg.kueue.flavors):
        other = defaults.get(entry.name)
        if other is not None:
            problems.add(
                ("kueue", "flavors", index, "name"),
                f"{entry.name!r} is the default flavor name of the {_describe_shape(other)} slices; choose "
                f"another name",
            )


def _check_shape(
    topology: str, multi_host: bool | None, here: Loc, problems: Problems
) -> catalog.SliceShape | None:
    try:
        return catalog.lookup(topology, multi_host)
    except catalog.UnsupportedSliceError as err:
        problems.add((*here, "topology"), str(err))
        return None


def check_cohorts(cfg: PlatformConfig, problems: Problems) -> None:
    declared: dict[str, int] = {}
    for index, cohort in enumerate(cfg.cohorts):
        if cohort.name in declared:
            problems.add(
                ("cohorts", index, "name"), f"cohort {cohort.name!r} is also cohorts[{declared[cohort.name]}]"
            )
        else:
            declared[cohort.name] = index
    for index, cohort in enumerate(cfg.cohorts):
        here: Loc = ("cohorts", index)
        parent = cohort.parent_name
        if parent is not None and parent not in declared:
            problems.add(
                (*here, "parentName"),
                f"parent cohort {parent!r} is not declared in "
                f"tpu-platform:cohorts{_closest(parent, list(declared))}; "
                "declare it so the hierarchy is explicit",
            )
        if cohort.fair_sharing_weight is not None and not cfg.kueue.fair_sharing.enabled:
            problems.add(
                (*here, "fairSharingWeight"),
                "has no effect while tpu-platform:kueue.fairSharing.enabled is false; remove it or enable "
                "fair sharing",
            )
        _check_quota_entries(
            cohort.quota, here, has_parent=parent is not None, kind="cohort", cfg=cfg, problems=problems
        )
    # Cycles: Kueue deactivates every cohort on a cycle.
    parents = {c.name: c.parent_name for c in cfg.cohorts}
    reported: set[str] = set()
    for start in parents:
        path: list[str] = []
        node: str | None = start
        while node is not None and node in parents and node not in path:
            path.append(node)
            node = parents[node]
        if node is not None and node in path:
            cycle = path[path.index(node) :]
            if not reported.intersection(cycle):
                reported.update(cycle)
                problems.add(
                    ("cohorts", declared[node], "parentName"),
                    f"cohorts form a cycle ({' -> '.join([*cycle, node])}); Kueue deactivates every cohort "
                    f"on "
                    "it: make one of them a root (no parentName)",
                )


def _check_quota_entries(
    entries: list[QuotaConfig],
    here: Loc,
    *,
    has_parent: bool,
    kind: Literal["team", "cohort"],
    cfg: PlatformConfig,
    problems: Problems,
) -> None:
    provided = pool_slices_by_shape(cfg)
    seen: dict[catalog.SliceShape, int] = {}
    parent_key = "cohortName" if kind == "team" else "parentName"
    for index, entry in enumerate(entries):
        loc: Loc = (*here, "quota", index)
        shape = _check_shape(entry.topology, entry.multi_host, loc, problems)
        if entry.multi_host is not None and entry.topology != "2x4":
            problems.add((*loc, "multiHost"), "only 2x4 has two forms; remove multiHost")
        if shape is None:
            continue
        if shape in seen:
            problems.add(
                loc,
                f"{_describe_shape(shape)} already has a quota in quota[{seen[shape]}]; merge the two "
                f"entries",
            )
        seen[shape] = index
        if shape not in provided:
            others = [_describe_shape(s) for s in provided if s.topology == shape.topology]
            hint = f"; the pools have {others[0]} slices: set multiHost accordingly" if others else ""
            problems.add(
                (*loc, "topology"),
                f"no slice pool provides {_describe_shape(shape)} slices, so a workload admitted on this "
                f"quota "
                f"could never be scheduled; add a slicePools entry with topology {shape.topology} or remove "
                f"this quota{hint}",
            )
        nominal = _check_amount((entry.slices, entry.chips), ("slices", "chips"), shape, loc, problems)
        if entry.slices is None and entry.chips is None:
            problems.add(loc, "needs the nominal quota: slices: <n> (whole slices) or chips: <n>")
        borrowing = _check_amount(
            (entry.borrowing_limit_slices, entry.borrowing_limit_chips),
            ("borrowingLimitSlices", "borrowingLimitChips"),
            shape,
            loc,
            problems,
        )
        lending = _check_amount(
            (entry.lending_limit_slices, entry.lending_limit_chips),
            ("lendingLimitSlices", "lendingLimitChips"),
            shape,
            loc,
            problems,
        )
        for key, value in (("borrowingLimit", borrowing), ("lendingLimit", lending)):
            if value is not None and not has_parent:
                where = "a cohort (cohortName)" if kind == "team" else "a parent cohort (parentName)"
                problems.add(
                    (*loc, f"{key}Slices" if _uses_slices(entry, key) else f"{key}Chips"),
                    f"{key} needs {where}: Kueue rejects it otherwise; set {parent_key} or remove the limit",
                )
        if kind == "team" and nominal is not None and lending is not None and lending > nominal:
            problems.add(
                (*loc, "lendingLimitSlices" if _uses_slices(entry, "lendingLimit") else "lendingLimitChips"),
                f"lends {lending} slices but the nominal quota is only {nominal}; Kueue rejects a "
                f"lendingLimit "
                "above nominalQuota: lower it to at most the nominal quota",
            )


def _uses_slices(entry: QuotaConfig, key: str) -> bool:
    return (
        getattr(entry, "borrowing_limit_slices" if key == "borrowingLimit" else "lending_limit_slices")
        is not None
    )


def _check_amount(
    amount: tuple[int | None, int | None],
    keys: tuple[str, str],
    shape: catalog.SliceShape,
    loc: Loc,
    problems: Problems,
) -> int | None:
    """Whole slices of a (slices, chips) pair, reporting both-set and partial slices."""
    slices, chips = amount
    slices_key, chips_key = keys
    if slices is not None and chips is not None:
        problems.add(loc, f"set either {slices_key} or {chips_key}, not both")
        return slices
    if chips is not None and chips % shape.chips:
        below, above = chips // shape.chips, chips // shape.chips + 1
        problems.add(
            (*loc, chips_key),
            f"{chips} chips is not a whole number of {_describe_shape(shape)} slices ({shape.chips} chips "
            f"each); "
            f"JobSets with exclusive placement use whole slices, so the rest could never be used: "
            f"use {below * shape.chips} or {above * shape.chips} chips ({slices_key}: {below} or {above})",
        )
        return None
    return _as_slices(slices, chips, shape)


def check_teams(cfg: PlatformConfig, problems: Problems) -> None:
    team_names: dict[str, int] = {}
    cq_names: dict[str, int] = {}
    created_by: dict[str, int] = {}
    local_queues: dict[tuple[str, str], int] = {}
    declared_cohorts = [c.name for c in cfg.cohorts]
    priorities = {p.name: p.value for p in cfg.priorities}
    for index, team in enumerate(cfg.teams):
        here: Loc = ("teams", index)
        if team.name in team_names:
            problems.add((*here, "name"), f"team {team.name!r} is also teams[{team_names[team.name]}]")
        team_names.setdefault(team.name, index)
        cq = team.cluster_queue
        if cq in cq_names:
            problems.add(
                (*here, "clusterQueueName"),
                f"ClusterQueue {cq!r} is also the ClusterQueue of teams[{cq_names[cq]}]; give each team its "
                f"own",
            )
        cq_names.setdefault(cq, index)
        cohort = team.cohort_name
        if cohort is not None and declared_cohorts and cohort not in declared_cohorts:
            problems.add(
                (*here, "cohortName"),
                f"cohort {cohort!r} is not declared in "
                f"tpu-platform:cohorts{_closest(cohort, declared_cohorts)}; "
                "declare it or fix the name",
            )
        _check_team_namespaces(team, here, created_by, local_queues, problems)
        if not team.quota:
            problems.add(
                (*here, "quota"),
                "the ClusterQueue would have no quota and admit nothing; add quota entries such as "
                "[{topology: 4x4, slices: 2}] (slices: 0 with a cohort to only borrow)",
            )
        _check_quota_entries(
            team.quota, here, has_parent=cohort is not None, kind="team", cfg=cfg, problems=problems
        )
        _check_preemption(team, here, priorities, problems)
        if team.fair_sharing_weight is not None:
            if not cfg.kueue.fair_sharing.enabled:
                problems.add(
                    (*here, "fairSharingWeight"),
                    "has no effect while tpu-platform:kueue.fairSharing.enabled is false; remove it or "
                    "enable fair sharing",
                )
            elif cohort is None:
                problems.add(
                    (*here, "fairSharingWeight"),
                    "weights only share a cohort's idle quota; set cohortName or remove fairSharingWeight",
                )
    for index, pool in enumerate(cfg.slice_pools):
        if cfg.teams and pool.team is not None and pool.team not in team_names:
            problems.add(
                ("slicePools", index, "team"),
                f"{pool.team!r} is not a team in tpu-platform:teams{_closest(pool.team, list(team_names))}",
            )
    _check_capacity(cfg, problems)


def _check_team_namespaces(
    team: TeamConfig,
    here: Loc,
    created_by: dict[str, int],
    local_queues: dict[tuple[str, str], int],
    problems: Problems,
) -> None:
    index = here[-1]
    if team.namespaces is not None and not team.namespaces:
        problems.add(
            (*here, "namespaces"),
            "an empty list would leave the ClusterQueue admitting no namespace; list at least one "
            "(or remove the key for a namespace named after the team)",
        )
    seen: set[str] = set()
    for ns_index, ns in enumerate(team.namespace_list()):
        loc: Loc = (*here, "namespaces", ns_index) if team.namespaces is not None else (*here, "name")
        if ns.name in seen:
            problems.add(loc, f"namespace {ns.name!r} is listed twice")
        seen.add(ns.name)
        if ns.name in RESERVED_NAMESPACES:
            problems.add(
                loc,
                f"{ns.name!r} belongs to Kubernetes, GKE or the platform's controllers (Kueue does not "
                f"manage jobs "
                "in kube-system or kueue-system); give the team its own namespace",
            )
            continue
        if ns.name in BUILTIN_NAMESPACES and ns.create:
            problems.add(
                (*loc, "create"),
                f"{ns.name!r} exists in every cluster and must not be created or owned by the platform "
                "(deleting the stack would try to delete it); remove create",
            )
        if ns.created:
            if ns.name in created_by:
                problems.add(
                    loc,
                    f"namespace {ns.name!r} is already created by teams[{created_by[ns.name]}]; set create: "
                    f"false "
                    "here to share it",
                )
            else:
                created_by[ns.name] = int(index)
        elif ns.labels:
            problems.add(
                (*loc, "labels"),
                f"labels only apply to namespaces the platform creates; {ns.name!r} is not created (create: "
                f"false)",
            )
    for lq_index, (namespace, name) in enumerate(team.local_queue_list()):
        loc = (*here, "localQueues", lq_index) if team.local_queues is not None else (*here, "name")
        if namespace not in seen:
            problems.add(
                (*loc, "namespace"),
                f"namespace {namespace!r} is not one of the team's namespaces "
                f"({', '.join(sorted(seen)) or 'none'}), "
                "so its ClusterQueue would not admit this queue's workloads; add it to namespaces",
            )
        key = (namespace, name)
        if key in local_queues:
            problems.add(
                loc,
                f"LocalQueue {namespace}/{name} is also defined by teams[{local_queues[key]}]; "
                "queue names must be unique within a namespace",
            )
        local_queues.setdefault(key, int(index))
    if team.local_queues is not None and not team.local_queues:
        problems.add(
            (*here, "localQueues"), "no LocalQueue means no job can reach the ClusterQueue; list at least one"
        )


def _check_preemption(team: TeamConfig, here: Loc, priorities: dict[str, int], problems: Problems) -> None:
    pre = team.preemption
    loc: Loc = (*here, "preemption")
    borrow = pre.borrow_within_cohort
    if team.cohort_name is None:
        if pre.reclaim_within_cohort != "Never":
            problems.add(
                (*loc, "reclaimWithinCohort"),
                "has no effect without a cohort (Kueue ignores it); set cohortName or remove it",
            )
        if borrow is not None and borrow.policy != "Never":
            problems.add(
                (*loc, "borrowWithinCohort"),
                "has no effect without a cohort (Kueue ignores it); set cohortName or remove it",
            )
    if borrow is not None and borrow.policy != "Never" and pre.reclaim_within_cohort == "Never":
        problems.add(
            (*loc, "borrowWithinCohort", "policy"),
            "Kueue rejects borrowWithinCohort.policy other than Never while reclaimWithinCohort is Never; "
            "set reclaimWithinCohort to LowerPriority or Any",
        )
    if borrow is not None and borrow.max_priority_threshold is not None:
        threshold = borrow.max_priority_threshold
        if borrow.policy == "Never":
            problems.add(
                (*loc, "borrowWithinCohort", "maxPriorityThreshold"),
                "only applies with policy: LowerPriority; set the policy or remove the threshold",
            )
        if isinstance(threshold, str) and threshold not in priorities:
            problems.add(
                (*loc, "borrowWithinCohort", "maxPriorityThreshold"),
                f"unknown priority {threshold!r}{_closest(threshold, list(priorities))}; "
                f"use one of {', '.join(priorities) or 'the priorities'} or a number",
            )


def _check_capacity(cfg: PlatformConfig, problems: Problems) -> None:
    """Nominal quotas are guarantees: they must add up to no more slices than the pools have."""
    if cfg.kueue.allow_overcommit:
        return
    provided = pool_slices_by_shape(cfg)
    claims: dict[catalog.SliceShape, list[tuple[str, int]]] = defaultdict(list)
    owners: list[tuple[str, list[QuotaConfig]]] = [
        *((f"team {t.name}", t.quota) for t in cfg.teams),
        *((f"cohort {c.name}", c.quota) for c in cfg.cohorts),
    ]
    for owner, entries in owners:
        for entry in entries:
            shape = entry.shape()
            if shape is None or shape not in provided:
                continue  # reported by the quota checks
            if entry.chips is not None and entry.chips % shape.chips:
                continue
            nominal = _as_slices(entry.slices, entry.chips, shape)
            if nominal:
                claims[shape].append((owner, nominal))
    for shape, owned in claims.items():
        total = sum(n for _, n in owned)
        have = provided[shape]
        if total > have:
            parts = ", ".join(f"{owner} {n}" for owner, n in owned)
            problems.add(
                ("teams",),
                f"nominal quotas for {_describe_shape(shape)} add up to {total} slices "
                f"({total * shape.chips} chips: "
                f"{parts}) but the slice pools have {have} ({have * shape.chips} chips); Kueue would admit "
                f"work "
                "that can never be scheduled. Lower the quotas, add slices, or set "
                "tpu-platform:kueue.allowOvercommit: true",
            )


QUEUE_CHECKS = [check_priorities, check_kueue, check_cohorts, check_teams]
