"""What a stack's slice pools provide and its nominal quotas claim, in whole slices per shape.

In the config layer so the checks can hold quotas to the pools (as Kueue's
``pkg/config/validation.go`` validates with nothing above its config package); the queue
plan, built on the stack, counts its flavors and quotas with the same functions.
"""

from __future__ import annotations

from collections import Counter

from .. import catalog
from ..claims import Claims
from .platform import PlatformConfig
from .quota import QuotaConfig, as_slices
from .shapes import entry_shape


def pool_slices(cfg: PlatformConfig) -> dict[catalog.SliceShape, int]:
    """Slices per shape the slice pools provide, smallest shape first (unknown shapes left out)."""
    counts: Counter[catalog.SliceShape] = Counter()
    for pool in cfg.slice_pools:
        shape = entry_shape(pool.topology, pool.multi_host)
        if shape is not None:
            counts[shape] += pool.count
    return {shape: counts[shape] for shape in catalog.all_shapes() if shape in counts}


def nominal_slices(entry: QuotaConfig) -> tuple[catalog.SliceShape, int] | None:
    """A quota entry's shape and nominal quota in whole slices (0 when unset).

    None for a shape TPU v6e does not have, or chips that are no whole number of slices: the
    checks report both, and nothing counts them.
    """
    shape = entry.shape()
    if shape is None or (entry.chips is not None and entry.chips % shape.chips):
        return None
    return shape, as_slices(entry.slices, entry.chips, shape) or 0


def nominal_claims(cfg: PlatformConfig) -> Claims[catalog.SliceShape, str]:
    """Nominal slices per shape the pools have, by ``team x`` then ``cohort y``, in stack order."""
    capacity = pool_slices(cfg)
    claims: Claims[catalog.SliceShape, str] = Claims()
    owners = [
        *((f"team {team.name}", team.quota) for team in cfg.teams),
        *((f"cohort {cohort.name}", cohort.quota) for cohort in cfg.cohorts),
    ]
    for owner, entries in owners:
        for entry in entries:
            counted = nominal_slices(entry)
            if counted is not None and counted[0] in capacity and counted[1]:
                claims.add(counted[0], owner, counted[1])
    return claims
