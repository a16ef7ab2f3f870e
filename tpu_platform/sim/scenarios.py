"""The seed document's scenarios as small, valid stacks: one high- and one low-priority JobSet on 4x4
slices, with or without a spare slice, and a failure of a node under the high-priority one.

Used by the tests and handy for trying a timing change: ``compare(seed_scenario(spare=False))``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tpu_platform.config import PlatformConfig, parse_platform
from tpu_platform.sim.model import BLOCKING, WorkloadSpec
from tpu_platform.sim.params import Timings
from tpu_platform.sim.run import Scenario, stack_scenario, stack_timings
from tpu_platform.sim.traces import Failure

HIGH = "high-priority-job"
LOW = "low-priority-job"


def seed_stack(slices: int, *, preemption_policy: str = "PreemptLowerPriority") -> PlatformConfig:
    """The seed stack's shape: one team, one ClusterQueue owning all ``slices`` 4x4 slices, two priorities."""
    raw: dict[str, Any] = {
        "project": "sim-project",
        "region": "us-east5",
        "zone": "us-east5-b",
        "cluster": {"name": "tpu-sim"},
        "slicePools": [{"name": "seed-4x4", "topology": "4x4", "count": slices}],
        "priorities": [
            {"name": LOW, "value": 1_000_000, "preemptionPolicy": preemption_policy},
            {"name": HIGH, "value": 2_000_000, "preemptionPolicy": preemption_policy},
        ],
        "teams": [
            {
                "name": "training",
                "namespaces": ["default"],
                "localQueues": [{"name": "default-queue", "namespace": "default"}],
                "quota": [{"topology": "4x4", "slices": slices}],
                "preemption": {"withinClusterQueue": "LowerPriority"},
            }
        ],
    }
    return parse_platform(raw)


def seed_jobsets(
    *,
    restart_strategy: str = BLOCKING,
    pod_failure_policy: bool = True,
    can_preempt: bool = True,
    low_checkpoints: tuple[float | None, ...] = (3600.0,),
) -> list[WorkloadSpec]:
    """``high`` (one 4x4 slice) and a ``low-<i>`` per entry of ``low_checkpoints`` (its checkpoint period)."""
    common: dict[str, Any] = dict(
        namespace="default",
        queue="default-queue",
        topology="4x4",
        restart_strategy=restart_strategy,
        pod_failure_policy=pod_failure_policy,
        can_preempt=can_preempt,
        team="training",
    )
    specs = [WorkloadSpec(name="high", priority_class=HIGH, priority=2_000_000, **common)]
    for i, checkpoint in enumerate(low_checkpoints):
        specs.append(
            WorkloadSpec(
                name=f"low-{i}",
                priority_class=LOW,
                priority=1_000_000,
                checkpoint_s=checkpoint,
                submit_at=1.0 + i,
                **common,
            )
        )
    return specs


def seed_scenario(
    *,
    spare: bool,
    restart_strategy: str = BLOCKING,
    pod_failure_policy: bool = True,
    scheduler_preemption: bool = True,
    low_checkpoints: tuple[float | None, ...] = (3600.0,),
    fail_at: float = 1800.0,
    reboot_after: float | None = None,
    after: float = 3600.0,
    timings: Timings | None = None,
    seed: int = 0,
) -> Scenario:
    """High and low JobSets on as many 4x4 slices as they need (plus one spare if ``spare``); a node under
    the high-priority JobSet fails at ``fail_at`` (and reboots after ``reboot_after``, if given). Its
    VM stays down until repair (``host_fates.STOPPED``) unless ``timings`` give the other fates a share."""
    policy = "PreemptLowerPriority" if scheduler_preemption else "Never"
    jobsets = seed_jobsets(
        restart_strategy=restart_strategy,
        pod_failure_policy=pod_failure_policy,
        can_preempt=scheduler_preemption,
        low_checkpoints=low_checkpoints,
    )
    cfg = seed_stack(len(jobsets) + (1 if spare else 0), preemption_policy=policy)
    if timings is None:
        timings = replace(stack_timings(cfg), hung_guest_fraction=0.0, compute_restart_fraction=0.0)
    return stack_scenario(
        cfg,
        trace=(Failure(fail_at, "", back_after=reboot_after),),
        end=fail_at + after,
        seed=seed,
        workloads=jobsets,
        timings=timings,
    )
