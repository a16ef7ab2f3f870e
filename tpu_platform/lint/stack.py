"""A lint context from a validated stack: its queues, nominal quotas, priorities and slices."""

from __future__ import annotations

from dataclasses import replace

from ..config import PlatformConfig
from ..kueue import queue_directory
from ..quota import team_quotas
from ..slices import capacity_by_shape, expand_slices
from .context import LintContext, context_from_queue_directory

TPU_ONLY = frozenset({"google.com/tpu"})


def context_from_stack(cfg: PlatformConfig) -> LintContext:
    """Everything the rules check a JobSet against, as the stack will deploy it.

    Quotas are the ClusterQueues' nominal chips per flavor. Covered resources are known only
    under ``BlockUndeclared``, where Kueue refuses workloads asking for anything but TPU chips.
    """
    slices = {capacity.shape: capacity.slices for capacity in capacity_by_shape(expand_slices(cfg))}
    base = context_from_queue_directory(
        queue_directory(cfg), slices, manage_jobs_without_queue_name=cfg.kueue.manage_jobs_without_queue_name
    )
    nominal = {
        (team.cluster_queue, flavor.flavor): flavor.guaranteed_chips
        for team in team_quotas(cfg)
        for flavor in team.flavors
    }
    covered = TPU_ONLY if cfg.kueue.quota_check_strategy == "BlockUndeclared" else None
    queues = {
        key: replace(
            target,
            flavors=tuple(
                replace(flavor, chips=nominal.get((target.cluster_queue, flavor.name)))
                for flavor in target.flavors
            ),
            covered_resources=covered,
        )
        for key, target in base.local_queues.items()
    }
    return replace(base, local_queues=queues)
