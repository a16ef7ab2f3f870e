"""The ``priorities`` section: priority levels for kube-scheduler, Kueue and the hotswap controller."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from .base import StackModel, check_dns_subdomain

# Kubernetes reserves priority values above one billion (and the ``system-`` prefix) for system classes.
MAX_USER_PRIORITY = 1_000_000_000
MIN_PRIORITY = -2_147_483_648


class PriorityConfig(StackModel):
    """One priority level: rendered as a PriorityClass (for kube-scheduler and hotswap) and a
    Kueue WorkloadPriorityClass with the same name and value (for admission order)."""

    name: str
    value: int = Field(ge=MIN_PRIORITY, le=MAX_USER_PRIORITY)
    description: str | None = Field(None, max_length=2048)
    global_default: bool = False
    preemption_policy: Literal["PreemptLowerPriority", "Never"] = "PreemptLowerPriority"
    teams: list[str] | None = Field(
        None,
        description=(
            "The teams granted this priority: only their namespaces may use it, on pods, Jobs, JobSets "
            "and Workloads (an admission policy the API server enforces). Default: every namespace."
        ),
    )

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
