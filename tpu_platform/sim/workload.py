"""Workloads to simulate: a plausible mix built from a stack, a workload file, or a busy fleet's
closed-loop backlog for long traces.

The stack mix, per slice shape and in team order: about half of each team's guaranteed slices (rounded
so the halves add up across teams) go to one top-priority JobSet of that many replicas; the rest are
one-slice JobSets cycling through the lower priorities, lowest first. Every JobSet is submitted to its
team's first LocalQueue, uses exclusive placement, opts into hotswap, checkpoints hourly (the advice in
failure-model.md) and by default follows the repository's example JobSets: BlockingRecreate with the
podFailurePolicy that makes disruptions free.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from tpu_platform.config import PlatformConfig, TeamConfig
from tpu_platform.quota import FlavorQuota, quota_layout
from tpu_platform.sim.model import BLOCKING, RECREATE, RESTART_STRATEGIES, Pool, WorkloadSpec
from tpu_platform.slices import expand_slices

from ..yaml_errors import yaml_error_line

HOUR = 3600.0


def pools_from_stack(cfg: PlatformConfig) -> list[Pool]:
    return [
        Pool(name=s.pool_name, topology=s.shape.topology, chips=s.chips, size=s.nodes, team=s.team)
        for s in expand_slices(cfg)
    ]


def priority_levels(cfg: PlatformConfig) -> list[tuple[str, int]]:
    """(name, value), lowest first."""
    return sorted(((p.name, p.value) for p in cfg.priorities), key=lambda p: (p[1], p[0]))


def _queue(team: TeamConfig) -> tuple[str, str]:
    return team.local_queue_list()[0]


def _team_quotas(cfg: PlatformConfig) -> list[tuple[TeamConfig, list[FlavorQuota]]]:
    """Each team with its ClusterQueue's quota in the quota layout, smallest shape first."""
    plan = quota_layout(cfg)
    return [(team, plan.queue_of(team.name).ordered()) for team in cfg.teams]


def _can_preempt(cfg: PlatformConfig, name: str) -> bool:
    return next(p.preemption_policy for p in cfg.priorities if p.name == name) != "Never"


@dataclass(frozen=True, slots=True)
class MixOptions:
    high_share: float = 0.5
    restart_strategy: str = BLOCKING
    pod_failure_policy: bool = True
    checkpoint_s: float | None = HOUR
    work_s: float | None = None


def mix_from_stack(cfg: PlatformConfig, options: MixOptions | None = None) -> list[WorkloadSpec]:
    """One top-priority JobSet per team and shape, one-slice lower-priority JobSets for the rest."""
    o = options or MixOptions()
    levels = priority_levels(cfg)
    if not levels:
        raise ValueError("the stack has no priorities")
    top_name, top_value = levels[-1]
    lower = levels[:-1] or levels
    cumulative: dict[str, int] = {}
    given: dict[str, int] = {}
    specs: list[WorkloadSpec] = []
    cycle = 0
    for team, quotas in _team_quotas(cfg):
        namespace, queue = _queue(team)
        for quota in quotas:
            topology = quota.shape.topology
            cumulative[topology] = cumulative.get(topology, 0) + quota.nominal
            target = int(cumulative[topology] * o.high_share + 0.5)
            high = max(0, min(quota.nominal, target - given.get(topology, 0)))
            given[topology] = given.get(topology, 0) + high
            base = dict(
                namespace=namespace,
                queue=queue,
                topology=topology,
                restart_strategy=o.restart_strategy,
                pod_failure_policy=o.pod_failure_policy,
                checkpoint_s=o.checkpoint_s,
                work_s=o.work_s,
                team=team.name,
            )
            if high:
                specs.append(
                    WorkloadSpec(
                        name=f"{team.name}-{topology}-{_short(top_name)}",
                        priority_class=top_name,
                        priority=top_value,
                        slices=high,
                        can_preempt=_can_preempt(cfg, top_name),
                        **base,  # type: ignore[arg-type]
                    )
                )
            for i in range(quota.nominal - high):
                name, value = lower[cycle % len(lower)]
                cycle += 1
                specs.append(
                    WorkloadSpec(
                        name=f"{team.name}-{topology}-{_short(name)}-{i}",
                        priority_class=name,
                        priority=value,
                        slices=1,
                        can_preempt=_can_preempt(cfg, name),
                        **base,  # type: ignore[arg-type]
                    )
                )
    return specs


def _short(priority_class: str) -> str:
    return priority_class.removesuffix("-priority-job").removesuffix("-job")


# --- workload files --------------------------------------------------------------------------------
_FIELDS: dict[str, type | tuple[type, ...]] = {
    "name": str,
    "namespace": str,
    "queue": str,
    "team": str,
    "priority": str,
    "topology": str,
    "slices": int,
    "restartStrategy": str,
    "podFailurePolicy": bool,
    "maxRestarts": int,
    "hotswap": bool,
    "preemptible": bool,
    "checkpointSeconds": (int, float, type(None)),
    "workSeconds": (int, float, type(None)),
    "submitAt": (int, float),
}


def load_workload_file(path: Path, cfg: PlatformConfig) -> list[WorkloadSpec]:
    """``workloads: [{name, priority, topology, team | queue [+ namespace], ...}]`` (docs/benchmarks.md)."""
    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise ValueError(yaml_error_line(err, str(path))) from None
    items = doc.get("workloads") if isinstance(doc, Mapping) else None
    if not isinstance(items, list) or not items:
        raise ValueError(f"{path}: expected a mapping with a non-empty 'workloads' list")
    return [_spec(item, cfg, f"{path}: workloads[{i}]") for i, item in enumerate(items)]


def _spec(item: Any, cfg: PlatformConfig, where: str) -> WorkloadSpec:
    if not isinstance(item, Mapping):
        raise ValueError(f"{where}: expected a mapping")
    for key, value in item.items():
        if key not in _FIELDS:
            raise ValueError(f"{where}.{key}: unknown field (known: {', '.join(sorted(_FIELDS))})")
        kind = _FIELDS[key]
        if isinstance(value, bool) and kind in (int, (int, float)):
            raise ValueError(f"{where}.{key}: expected a number, got {value!r}")
        if not isinstance(value, kind):
            raise ValueError(f"{where}.{key}: unexpected value {value!r}")
    for key in ("name", "priority", "topology"):
        if key not in item:
            raise ValueError(f"{where}: missing {key}")
    priorities = {p.name: p.value for p in cfg.priorities}
    if item["priority"] not in priorities:
        raise ValueError(f"{where}.priority: {item['priority']!r} is not one of {', '.join(priorities)}")
    teams = {t.name: t for t in cfg.teams}
    if "queue" in item:
        namespace = item.get("namespace")
        if namespace is None:
            owners = [t for t in cfg.teams for ns, q in t.local_queue_list() if q == item["queue"]]
            if not owners:
                raise ValueError(f"{where}.queue: no LocalQueue named {item['queue']!r} in the stack")
            namespace = next(ns for ns, q in owners[0].local_queue_list() if q == item["queue"])
        queue = item["queue"]
    elif "team" in item:
        team = teams.get(item["team"])
        if team is None:
            raise ValueError(f"{where}.team: {item['team']!r} is not one of {', '.join(teams)}")
        namespace, queue = _queue(team)
    else:
        raise ValueError(f"{where}: give team or queue")
    strategy = item.get("restartStrategy", BLOCKING)
    if strategy not in RESTART_STRATEGIES:
        raise ValueError(
            f"{where}.restartStrategy: {strategy!r} is not one of {', '.join(RESTART_STRATEGIES)}"
        )
    return WorkloadSpec(
        name=item["name"],
        namespace=namespace,
        queue=queue,
        priority_class=item["priority"],
        priority=priorities[item["priority"]],
        topology=item["topology"],
        slices=item.get("slices", 1),
        restart_strategy=strategy,
        pod_failure_policy=item.get("podFailurePolicy", True),
        max_restarts=item.get("maxRestarts", 10),
        managed=item.get("hotswap", True),
        preemptible=item.get("preemptible", True),
        can_preempt=_can_preempt(cfg, item["priority"]),
        checkpoint_s=item.get("checkpointSeconds", HOUR),
        work_s=item.get("workSeconds"),
        submit_at=float(item.get("submitAt", 0.0)),
        team=item.get("team", ""),
    )


# --- a busy fleet for long traces ------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Backlog:
    """Closed loop: every finished JobSet is replaced by the next one of its slot, so the fleet stays busy.

    The slots are the stack mix plus ``queued_per_team`` lowest-priority JobSets waiting in each team's
    queue (they borrow idle quota). Each slot's sequence of durations and failure policies depends only
    on the seed and the slot, never on timing, so both policies run the same jobs in the same order.
    """

    seed: int
    top_priority: int
    high_hours: tuple[float, float] = (48.0, 120.0)
    low_hours: tuple[float, float] = (2.0, 12.0)
    recreate_fraction: float = 0.5
    """Share of JobSets that use Recreate without a pod failure policy (JobSet's defaults) instead of
    the repository's BlockingRecreate + podFailurePolicy."""
    queued_per_team: int = 1

    def initial(self, cfg: PlatformConfig) -> list[WorkloadSpec]:
        slots = list(mix_from_stack(cfg))
        low_name, low_value = priority_levels(cfg)[0]
        for team, quotas in _team_quotas(cfg):
            namespace, queue = _queue(team)
            for quota in quotas:
                for i in range(self.queued_per_team):
                    slots.append(
                        WorkloadSpec(
                            name=f"{team.name}-{quota.shape.topology}-queued-{i}",
                            namespace=namespace,
                            queue=queue,
                            priority_class=low_name,
                            priority=low_value,
                            topology=quota.shape.topology,
                            can_preempt=_can_preempt(cfg, low_name),
                            team=team.name,
                        )
                    )
        return [self._draw(slot, 0) for slot in slots]

    def successor(self, spec: WorkloadSpec, now: float) -> WorkloadSpec:
        slot, _, n = spec.name.rpartition("-g")
        return replace(self._draw(replace(spec, name=slot), int(n) + 1), submit_at=now)

    def _draw(self, slot: WorkloadSpec, n: int) -> WorkloadSpec:
        rng = random.Random(f"backlog:{self.seed}:{slot.name}:{n}")
        lo, hi = self.high_hours if slot.priority >= self.top_priority else self.low_hours
        recreate = rng.random() < self.recreate_fraction
        return replace(
            slot,
            name=f"{slot.name}-g{n}",
            work_s=round(rng.uniform(lo, hi) * HOUR, 1),
            restart_strategy=RECREATE if recreate else BLOCKING,
            pod_failure_policy=not recreate,
        )


Successor = Callable[[WorkloadSpec, float], "WorkloadSpec | None"]
