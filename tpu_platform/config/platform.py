"""The whole stack as one model: every section of ``stacks/Pulumi.<stack>.yaml``.

Structure only (pydantic); cross-field checks live in ``checks``, reading in ``loader``.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from ..hotswap.core.settings import Settings
from .base import StackModel
from .cluster import ClusterConfig
from .cohorts import CohortConfig
from .fleet import FleetConfig, FleetWorkerConfig
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
    fleet: FleetConfig | None = None  # a manager and worker clusters (MultiKueue) instead of one cluster

    @model_validator(mode="before")
    @classmethod
    def _fleet_view(cls, data: Any) -> Any:
        """A fleet stack read as one platform: the manager's cluster and every worker's slices.

        This view is what the manager's queues are planned, linted and summarized against (its
        quotas against the sum of the workers' capacity); each worker is built from
        ``worker_platform``. Pools keep their worker's zone.
        """
        if not isinstance(data, dict) or not isinstance(data.get("fleet"), dict):
            return data
        fleet = data["fleet"]
        data = dict(data)
        manager = fleet.get("manager")
        if isinstance(manager, dict) and "cluster" in manager:
            data.setdefault("cluster", manager["cluster"])
        pools: list[Any] = []
        workers = fleet.get("workers")
        for worker in workers if isinstance(workers, list) else []:
            if not isinstance(worker, dict) or not isinstance(worker.get("slicePools"), list):
                continue
            zone = worker.get("zone")
            pools.extend(
                {**pool, "zone": zone}
                if isinstance(pool, dict) and "zone" not in pool and isinstance(zone, str)
                else pool
                for pool in worker["slicePools"]
            )
        data.setdefault("slicePools", pools)
        return data

    @field_validator("project")
    @classmethod
    def _project(cls, value: str) -> str:
        return check_project_id(value)

    def team_namespaces(self) -> dict[str, list[str]]:
        """Each team's namespaces: one tenant each for the hotswap controller."""
        return {team.name: team.namespace_names() for team in self.teams}

    def controller_settings(self) -> Settings:
        """The hotswap controller's settings as the stack deploys them (its teams included)."""
        return self.hotswap.controller_settings(self.team_namespaces())

    @property
    def managed_prometheus(self) -> bool:
        """Whether the stack renders GMP objects: as the monitoring section says, else everywhere but
        on a cluster reached only through a kubeconfig."""
        if self.monitoring.managed_prometheus is not None:
            return self.monitoring.managed_prometheus
        return not self.cluster.reached_by_kubeconfig

    @property
    def cluster_location(self) -> str:
        """Where the control plane lives: the configured location, else the region."""
        return self.cluster.location or self.region

    def pool_zone(self, pool: SlicePoolConfig) -> str:
        """The single zone a slice pool is pinned to (COMPACT placement needs one zone)."""
        return pool.zone or self.zone

    def worker_platform(self, worker: FleetWorkerConfig) -> PlatformConfig:
        """One worker as a whole platform: its own cluster, region and slices, the stack's
        priorities, Kueue settings, cohorts and hotswap, and the manager's teams with the
        worker's quotas (same ClusterQueue and LocalQueue names, as MultiKueue needs)."""
        quotas = {team.name: team.quota for team in worker.teams}
        return PlatformConfig(
            project=worker.project or self.project,
            region=worker.region,
            zone=worker.zone,
            cluster=worker.cluster,
            slice_pools=worker.slice_pools,
            priorities=self.priorities,
            kueue=self.kueue,
            cohorts=self.cohorts,
            teams=[team.model_copy(update={"quota": quotas.get(team.name, [])}) for team in self.teams],
            hotswap=self.hotswap,
            acknowledge_replacement=self.acknowledge_replacement,
            monitoring=self.monitoring,
        )
