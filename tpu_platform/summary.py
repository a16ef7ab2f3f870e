"""A short human summary of a stack: slices and chips by shape and by capacity source, and
each team's guaranteed and borrowable chips (the stack's ``tpu_platform.quota``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .config import PlatformConfig
from .quota import quota_layout
from .slices import capacity_by_shape, expand_slices


@dataclass(frozen=True)
class PlatformSummary:
    """What a reviewer wants to see first: how much TPU the stack asks for, and where."""

    cluster: str
    zone: str
    slices: int
    nodes: int
    chips: int
    by_shape: list[dict[str, Any]]
    chips_by_capacity: dict[str, int]
    teams: list[dict[str, Any]] = field(default_factory=list)
    unassigned: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    workers: list[WorkerSummary] = field(default_factory=list)  # a fleet: each worker's own

    def as_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "cluster": self.cluster,
            "zone": self.zone,
            "slices": self.slices,
            "nodes": self.nodes,
            "chips": self.chips,
            "byShape": self.by_shape,
            "chipsByCapacity": self.chips_by_capacity,
        }
        if self.teams:
            doc["teams"] = self.teams
            doc["unassigned"] = self.unassigned
        doc.update(self.extra)
        if self.workers:
            doc["fleet"] = {
                "manager": self.cluster,
                "workers": [{"name": w.name, **w.summary.as_dict()} for w in self.workers],
            }
        return doc

    def as_text(self) -> str:
        what = (
            f"fleet: manager {self.cluster} ({self.zone}), {len(self.workers)} workers"
            if self.workers
            else (f"cluster {self.cluster} ({self.zone})")
        )
        lines = [f"{what}: {self.slices} TPU v6e slices, {self.nodes} nodes, {self.chips} chips"]
        for row in self.by_shape:
            lines.append(
                f"  {row['topology']:>6} x{row['slices']:<3} {row['chips']:>5} chips ({row['machineType']})"
            )
        capacity = ", ".join(f"{kind} {chips}" for kind, chips in self.chips_by_capacity.items())
        lines.append(f"  chips by capacity: {capacity}")
        if self.teams:
            lines.append("  teams (chips guaranteed / borrowable from the cohort):")
        for team in self.teams:
            cohort = f", cohort {team['cohort']}" if team.get("cohort") else ""
            shapes = ", ".join(
                f"{f['topology']} {f['guaranteedSlices']}+{f['borrowableSlices']}" for f in team["byFlavor"]
            )
            lines.append(
                f"    {team['team']:<16} {team['guaranteedChips']:>5} / {team['borrowableChips']:<5} "
                f"({team['clusterQueue']}{cohort}; slices {shapes})"
            )
            if team.get("submitTo"):
                lines.append(f"      submit to {', '.join(team['submitTo'])} (namespace/LocalQueue)")
        idle = [row for row in self.unassigned if row["slices"]]
        if idle:
            text = ", ".join(f"{row['topology']} x{row['slices']} ({row['chips']} chips)" for row in idle)
            lines.append(f"  not in any nominal quota: {text}")
        for worker in self.workers:
            lines.append(f"  worker {worker.name} (MultiKueueCluster):")
            lines.extend(f"    {line}" for line in worker.summary.as_text().splitlines())
        return "\n".join(lines)


def _with_queues(team: dict[str, Any], submit_to: list[str]) -> dict[str, Any]:
    """A team's quota with where its members submit: ``namespace/LocalQueue``, the JobSet's
    namespace and its ``kueue.x-k8s.io/queue-name`` label."""
    return {**team, "submitTo": submit_to} if submit_to else team


@dataclass(frozen=True)
class WorkerSummary:
    """One worker of a fleet: its MultiKueueCluster name and its platform's summary."""

    name: str
    summary: PlatformSummary


def summarize(cfg: PlatformConfig) -> PlatformSummary:
    """Totals computed from the same slice expansion the node pools use; a fleet's totals are the
    manager's queues over every worker's slices, then each worker's own."""
    specs = expand_slices(cfg)
    plan = quota_layout(cfg)
    by_capacity: Counter[str] = Counter()
    for spec in specs:
        by_capacity[spec.capacity] += spec.chips
    queues = {team.name: [f"{ns}/{lq}" for ns, lq in team.local_queue_list()] for team in cfg.teams}
    return PlatformSummary(
        cluster=cfg.cluster.name,
        zone=cfg.zone,
        slices=len(specs),
        nodes=sum(spec.nodes for spec in specs),
        chips=sum(spec.chips for spec in specs),
        by_shape=[
            {
                "topology": cap.shape.topology,
                "multiHost": cap.shape.multi_host,
                "machineType": cap.shape.machine_type,
                "slices": cap.slices,
                "chips": cap.chips,
            }
            for cap in capacity_by_shape(specs)
        ],
        chips_by_capacity=dict(sorted(by_capacity.items())),
        teams=[_with_queues(team.as_dict(), queues.get(team.team, [])) for team in plan.team_quotas()],
        unassigned=[
            {"topology": shape.topology, "slices": slices, "chips": slices * shape.chips}
            for shape, slices in plan.unassigned().items()
        ],
        workers=[
            WorkerSummary(worker.name, summarize(cfg.worker_platform(worker)))
            for worker in (cfg.fleet.workers if cfg.fleet is not None else [])
        ],
    )
