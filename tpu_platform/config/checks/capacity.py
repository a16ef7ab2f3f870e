"""The capacity check: nominal quotas are guarantees, so they must fit the slices the pools have.

The claims and the capacity are counted by ``config.capacity``, with the same functions the
quota layout (which the Kueue objects are rendered from) is built with.
"""

from __future__ import annotations

from ..capacity import nominal_claims, pool_slices
from ..platform import PlatformConfig
from ..problems import Problems
from ..shapes import describe_shape


def check_quota_capacity(cfg: PlatformConfig) -> Problems:
    """Nominal quotas are guarantees: they must add up to no more slices than the pools have."""
    problems = Problems()
    if cfg.kueue.allow_overcommit:
        return problems
    claims = nominal_claims(cfg)
    capacity = pool_slices(cfg)
    for shape in claims:
        total = int(claims.total(shape))
        have = capacity[shape]
        if total > have:
            parts = ", ".join(f"{owner} {int(n)}" for owner, n in claims.owners(shape))
            problems.add(
                ("teams",),
                f"nominal quotas for {describe_shape(shape)} add up to {total} slices "
                f"({total * shape.chips} chips: "
                f"{parts}) but the slice pools have {have} ({have * shape.chips} chips); Kueue would admit "
                f"work "
                "that can never be scheduled. Lower the quotas, add slices, or set "
                "tpu-platform:kueue.allowOvercommit: true",
            )
    return problems
