"""A lint context from a validated stack: its queues, nominal quotas, priorities and slices."""

from __future__ import annotations

from dataclasses import replace

from ..catalog import SliceShape
from ..config import PlatformConfig
from ..constants import TPU_RESOURCE
from ..kueue import queue_directory
from ..kueue.entitlements import entitlements
from ..quota import quota_layout
from .context import LintContext, context_from_queue_directory

TPU_ONLY = frozenset({TPU_RESOURCE})


def context_from_stack(cfg: PlatformConfig) -> LintContext:
    """Everything the rules check a JobSet against, as the stack will deploy it.

    Quotas are the ClusterQueues' nominal chips per flavor and the slices are the pools' real
    capacity, both from the stack's quota layout. Covered resources are known only under
    ``BlockUndeclared``, where Kueue refuses workloads asking for anything but TPU chips. A
    fleet's queues are the manager's, and the slices those of its largest worker per shape.
    """
    plan = quota_layout(cfg)
    base = context_from_queue_directory(
        queue_directory(cfg),
        _largest_cluster(cfg) if cfg.fleet is not None else plan.capacity(),
        manage_jobs_without_queue_name=cfg.kueue.manage_jobs_without_queue_name,
    )
    nominal = {
        (node.name, quota.flavor): quota.nominal_chips
        for node in plan.cluster_queues
        for quota in node.quotas
    }
    # Kueue admits a workload only within nominal quota plus what the queue may borrow (its
    # borrowingLimit, what the cohort can lend): the plan's potential, per flavor.
    ceiling = {
        (team.cluster_queue, f.flavor): f.guaranteed_chips + f.borrowable_chips
        for team in plan.team_quotas()
        for f in team.flavors
    }
    covered = TPU_ONLY if cfg.kueue.quota_check_strategy == "BlockUndeclared" else None
    queues = {
        key: replace(
            target,
            flavors=tuple(
                replace(
                    flavor,
                    chips=nominal.get((target.cluster_queue, flavor.name)),
                    ceiling_chips=ceiling.get((target.cluster_queue, flavor.name)),
                )
                for flavor in target.flavors
            ),
            covered_resources=covered,
            multikueue=cfg.fleet is not None,
        )
        for key, target in base.local_queues.items()
    }
    return replace(base, local_queues=queues, entitlements=entitlements(cfg))


def _largest_cluster(cfg: PlatformConfig) -> dict[SliceShape, int]:
    """A fleet: a JobSet runs whole on one worker, so per shape the most slices any worker has."""
    assert cfg.fleet is not None
    most: dict[SliceShape, int] = {}
    for worker in cfg.fleet.workers:
        for shape, slices in quota_layout(cfg.worker_platform(worker)).capacity().items():
            most[shape] = max(most.get(shape, 0), slices)
    return most
