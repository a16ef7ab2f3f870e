"""The ``cohorts`` section: Kueue Cohort objects, the inner nodes of the borrowing tree."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field, field_validator

from .base import StackModel, check_dns_subdomain, fair_sharing_weight
from .quota import QuotaConfig


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
        return fair_sharing_weight(value)

    @field_validator("name", "parent_name")
    @classmethod
    def _names(cls, value: str | None) -> str | None:
        return None if value is None else check_dns_subdomain(value, "cohort name")
