"""The capacity check: nominal quotas are guarantees, so they must fit the slices the pools have."""

from __future__ import annotations

from collections import defaultdict

from ... import catalog
from ..platform import PlatformConfig
from ..problems import Problems
from ..quota import QuotaConfig, as_slices
from ..shapes import describe_shape
from .common import pool_slices_by_shape


def check_quota_capacity(cfg: PlatformConfig) -> Problems:
    """Nominal quotas are guarantees: they must add up to no more slices than the pools have."""
    problems = Problems()
    if cfg.kueue.allow_overcommit:
        return problems
    provided = pool_slices_by_shape(cfg)
    claims: dict[catalog.SliceShape, list[tuple[str, int]]] = defaultdict(list)
    owners: list[tuple[str, list[QuotaConfig]]] = [
        *((f"team {t.name}", t.quota) for t in cfg.teams),
        *((f"cohort {c.name}", c.quota) for c in cfg.cohorts),
    ]
    for owner, entries in owners:
        for entry in entries:
            shape = entry.shape()
            if shape is None or shape not in provided:
                continue  # reported by the quota checks
            if entry.chips is not None and entry.chips % shape.chips:
                continue
            nominal = as_slices(entry.slices, entry.chips, shape)
            if nominal:
                claims[shape].append((owner, nominal))
    for shape, owned in claims.items():
        total = sum(n for _, n in owned)
        have = provided[shape]
        if total > have:
            parts = ", ".join(f"{owner} {n}" for owner, n in owned)
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
