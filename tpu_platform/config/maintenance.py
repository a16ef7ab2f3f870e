"""The ``cluster.maintenance`` section: when GKE may upgrade the cluster, and when it may not.

GKE upgrades a multi-host TPU slice by recreating its node pool, which kills the job on it, so a
training campaign wants a recurring window outside working hours and exclusions while it runs.
Rendered as the cluster's ``maintenance_policy`` (pulumi-gcp 10.2.0
``container.ClusterMaintenancePolicyArgs``: ``recurring_window`` and ``maintenance_exclusions``).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Literal

from pydantic import Field, field_validator

from .base import StackModel

# RFC 3339 in UTC ("Zulu"): the provider notes GKE returns UTC, so other offsets diff forever.
RFC3339_Z_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
# RFC 5545 RRULEs as GKE's examples write them: daily, or weekly on some days.
RRULE_RE = re.compile(r"^FREQ=(DAILY|WEEKLY;BYDAY=(MO|TU|WE|TH|FR|SA|SU)(,(MO|TU|WE|TH|FR|SA|SU))*)$")
EXCLUSION_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")

ExclusionScope = Literal["NO_UPGRADES", "NO_MINOR_UPGRADES", "NO_MINOR_OR_NODE_UPGRADES"]


def parse_time(value: str) -> datetime:
    """An RFC 3339 UTC timestamp such as ``2026-01-03T02:00:00Z``."""
    if not RFC3339_Z_RE.match(value):
        raise ValueError(f"{value!r} is not an RFC 3339 UTC time such as '2026-01-03T02:00:00Z'")
    try:
        return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        raise ValueError(f"{value!r} is not a real date and time") from None


class MaintenanceWindowConfig(StackModel):
    """A recurring window: ``start``'s date is the first occurrence, ``end`` fixes the length."""

    start: str
    end: str
    recurrence: str = Field(description="RFC 5545 RRULE, e.g. FREQ=WEEKLY;BYDAY=SA,SU.")

    @field_validator("start", "end")
    @classmethod
    def _time(cls, value: str) -> str:
        parse_time(value)
        return value

    @field_validator("recurrence")
    @classmethod
    def _rrule(cls, value: str) -> str:
        if not RRULE_RE.match(value):
            raise ValueError(
                f"recurrence {value!r} is not an RRULE GKE takes here; use FREQ=DAILY or "
                "FREQ=WEEKLY;BYDAY=SA,SU"
            )
        return value

    def hours(self) -> float:
        return (parse_time(self.end) - parse_time(self.start)).total_seconds() / 3600

    def occurrences_per_32_days(self) -> int:
        """Least number of occurrences in any 32-day span."""
        if self.recurrence == "FREQ=DAILY":
            return 32
        days = len(self.recurrence.split("BYDAY=")[1].split(","))
        return days * 4  # 32 days hold four full weeks (and 4 spare days that may miss every BYDAY)


class MaintenanceExclusionConfig(StackModel):
    """No automatic upgrades of ``scope`` between ``start`` and ``end``."""

    name: str
    start: str
    end: str
    scope: ExclusionScope = "NO_MINOR_OR_NODE_UPGRADES"

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not EXCLUSION_NAME_RE.match(value):
            raise ValueError(f"exclusion name {value!r}: use lowercase letters, digits and dashes")
        return value

    @field_validator("start", "end")
    @classmethod
    def _time(cls, value: str) -> str:
        parse_time(value)
        return value

    def days(self) -> float:
        return (parse_time(self.end) - parse_time(self.start)).total_seconds() / 86400


class MaintenanceConfig(StackModel):
    """One recurring window and up to 20 exclusions (the provider's limit per cluster)."""

    window: MaintenanceWindowConfig | None = None
    exclusions: list[MaintenanceExclusionConfig] = Field(default_factory=list, max_length=20)
