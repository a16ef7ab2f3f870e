"""The ``teams`` section: per team its namespaces, one ClusterQueue with quota per slice shape,
its preemption policy and its LocalQueues."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from ..constants import BUILTIN_NAMESPACES
from .base import StackModel, check_dns_label, check_dns_subdomain, fair_sharing_weight
from .formats import check_label_key, check_label_value
from .quota import QuotaConfig

RECLAIM_OUT_OF_COHORT = (
    "reclaimOutOfCohort exists in no Kueue version (the seed document invented it; Kueue would "
    "drop it or reject the object). To take back quota this queue lent to its cohort, use "
    "preemption.reclaimWithinCohort (Never | LowerPriority | Any); to preempt lower-priority work "
    "while borrowing, use preemption.borrowWithinCohort.policy: LowerPriority"
)


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

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: dict[str, str]) -> dict[str, str]:
        for key, label in value.items():
            check_label_key(key)
            check_label_value(key, label)
        return value

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

    @field_validator("max_priority_threshold")
    @classmethod
    def _int32(cls, value: int | str | None) -> int | str | None:
        """Kueue's ``maxPriorityThreshold`` is an ``*int32`` (apis/kueue/v1beta2/clusterqueue_types.go)."""
        if isinstance(value, int) and not -(2**31) <= value < 2**31:
            raise ValueError(f"maxPriorityThreshold {value} does not fit Kueue's int32 priority")
        return value


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
        return fair_sharing_weight(value)

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
