"""The whole stack as one model: every section of ``stacks/Pulumi.<stack>.yaml``.

Structure only (pydantic); cross-field checks live in ``checks``, reading in ``loader``.
"""

from __future__ import annotations

from pydantic import Field, field_validator

from .base import StackModel
from .cluster import ClusterConfig
from .cohorts import CohortConfig
from .formats import check_project_id
from .hotswap import HotswapConfig
from .kueue import KueueConfig
from .monitoring import MonitoringConfig
from .pools import SlicePoolConfig
from .priorities import DEFAULT_PRIORITIES, PriorityConfig
from .teams import TeamConfig


class PlatformConfig(StackModel):
    """Everything one environment needs, as read from ``stacks/Pulumi.<stack>.yaml``."""

    project: str
    region: str
    zone: str
    cluster: ClusterConfig
    # Caps on absurd sizes: far above any real fleet, low enough that a typo cannot render
    # tens of thousands of objects.
    slice_pools: list[SlicePoolConfig] = Field(min_length=1, max_length=256)
    priorities: list[PriorityConfig] = Field(default_factory=lambda: list(DEFAULT_PRIORITIES), max_length=64)
    kueue: KueueConfig = KueueConfig()
    cohorts: list[CohortConfig] = Field(default_factory=list, max_length=1000)
    teams: list[TeamConfig] = Field(default_factory=list, max_length=1000)
    hotswap: HotswapConfig = HotswapConfig()
    acknowledge_replacement: list[str] = Field(default_factory=list)  # TPU pools `plan --check` may replace
    monitoring: MonitoringConfig = MonitoringConfig()

    @field_validator("project")
    @classmethod
    def _project(cls, value: str) -> str:
        return check_project_id(value)

    @property
    def cluster_location(self) -> str:
        """Where the control plane lives: the configured location, else the region."""
        return self.cluster.location or self.region

    def pool_zone(self, pool: SlicePoolConfig) -> str:
        """The single zone a slice pool is pinned to (COMPACT placement needs one zone)."""
        return pool.zone or self.zone
