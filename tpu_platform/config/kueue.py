"""The ``kueue`` section: Kueue's controller Configuration, flavor names and the two installs."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator

from .. import catalog
from ..hotswap.formats.duration import NANOSECONDS_PER_SECOND, DurationError, parse_duration
from .base import StackModel, check_dns_subdomain
from .formats import check_quantity
from .kueue_gates import KUEUE_FEATURE_GATES, LOCKED_FEATURE_GATES
from .problems import did_you_mean
from .shapes import default_flavor_name, entry_shape

MAX_DURATION_SECONDS = 366 * 86400
"""No Kueue timeout is longer than a year; a longer one is a typo."""
# Caps on a controller container: no node the system pool runs offers more.
MAX_CPU = "64"
MAX_MEMORY = "512Gi"

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


def check_duration(value: str | None, what: str) -> str | None:
    """Go ``time.ParseDuration`` syntax (what ``metav1.Duration`` in Kueue's Configuration decodes),
    neither negative (Kueue's ``validateWaitForPodsReady`` rejects it) nor longer than a year."""
    if value is None:
        return None
    too_long = f"{what} {value!r} is longer than a year; use a duration such as '30m'"
    try:
        nanoseconds = parse_duration(value)
    except DurationError as err:
        if err.problem == "overflow":
            raise ValueError(too_long) from None
        raise ValueError(f"{what} {value!r} is not a duration such as '30m', '1h30m' or '90s'") from None
    if nanoseconds < 0:
        raise ValueError(f"{what} {value!r} is negative, which Kueue rejects; use a duration such as '30m'")
    if nanoseconds > MAX_DURATION_SECONDS * NANOSECONDS_PER_SECOND:
        raise ValueError(too_long)
    return value


def duration_seconds(value: str) -> float:
    """Seconds of a duration that passed ``check_duration``."""
    return parse_duration(value) / NANOSECONDS_PER_SECOND


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
    backoff_limit_count: int | None = Field(None, ge=0, le=2**31 - 1, description="Unset: requeue forever.")
    backoff_base_seconds: int = Field(60, ge=0, le=2**31 - 1)
    backoff_max_seconds: int = Field(3600, ge=0, le=2**31 - 1)


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
        return check_duration(value, "duration")

    @field_validator("timeout")
    @classmethod
    def _positive_timeout(cls, value: str) -> str:
        """Kueue rejects a zero timeout ("must be specified") and a negative one
        (kueue v0.19.2 ``pkg/config/validation.go``, ``validateWaitForPodsReady``)."""
        if duration_seconds(value) <= 0:
            raise ValueError(
                f"timeout {value!r} must be longer than 0 (Kueue rejects 0); use e.g. '30m', or set "
                "enabled: false to turn waitForPodsReady off"
            )
        return value


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

    @field_validator("cpu")
    @classmethod
    def _cpu(cls, value: str | None) -> str | None:
        if value is not None:
            check_quantity(value, "cpu", MAX_CPU)
        return value

    @field_validator("memory")
    @classmethod
    def _memory(cls, value: str | None) -> str | None:
        if value is not None:
            check_quantity(value, "memory", MAX_MEMORY)
        return value


class ControllerConfig(StackModel):
    """Replicas and resources of a controller; unset values are sized from the fleet."""

    replicas: int | None = Field(None, ge=1, le=5)
    requests: ResourceListConfig | None = None
    limits: ResourceListConfig | None = None
    chart: str | None = Field(
        None,
        description="Where the pinned chart comes from: an oci:// reference of a mirror or a local "
        "folder holding that chart version (default: the upstream registry, registry.k8s.io).",
    )

    @field_validator("chart")
    @classmethod
    def _chart(cls, value: str | None) -> str | None:
        if value is None:
            return None
        text = value.strip()
        if not text:
            raise ValueError("chart is empty: give an oci:// reference or a chart folder, or remove it")
        if "://" in text and not text.startswith("oci://"):
            raise ValueError(
                f"chart {text!r}: only oci:// references or local folders are taken (a chart "
                "repository URL also needs a chart name); push the chart to an OCI registry or "
                "unpack it into a folder"
            )
        return text


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
    existing_install: Literal["use", "upgrade", "refuse"] = Field(
        "use",
        description="What `pulumi up` does with a Kueue or JobSet a kubeconfig-mode cluster already runs: "
        "use it where it serves the stack (else stop with the fix), upgrade an older one to the pinned "
        "version, or refuse any (docs/existing-installs.md). The platform never installs a second one.",
    )

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
        if "DisableWaitForPodsReady" in value:
            raise ValueError(
                "use waitForPodsReady.enabled instead of the DisableWaitForPodsReady feature gate"
            )
        for name, enabled in value.items():
            if name not in KUEUE_FEATURE_GATES:
                raise ValueError(
                    f"{name!r} is not a Kueue 0.19.2 feature gate (pkg/features/kube_features.go), so the "
                    f"manager would not start{did_you_mean(name, sorted(KUEUE_FEATURE_GATES))}"
                )
            locked = LOCKED_FEATURE_GATES.get(name)
            if locked is not None and enabled != locked:
                raise ValueError(
                    f"{name} is locked to {str(locked).lower()} in Kueue 0.19.2 (GA or deprecated); "
                    "remove it from featureGates"
                )
        return value

    def frameworks(self) -> list[str]:
        """Integrations Kueue manages: batch/job and JobSet always, then the stack's extras."""
        return list(dict.fromkeys([*REQUIRED_FRAMEWORKS, *self.integrations]))

    def flavor_name(self, shape: catalog.SliceShape) -> str:
        """The ResourceFlavor name of a slice shape: the stack's choice, else ``tpu-v6e-<topology>``."""
        for entry in self.flavors:
            if entry_shape(entry.topology, entry.multi_host) == shape:
                return entry.name
        return default_flavor_name(shape)
