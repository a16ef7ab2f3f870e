"""Stack warnings: deployable, but probably not what was meant. Reported, never fatal."""

from __future__ import annotations

from ..platform import PlatformConfig
from ..problems import Problems


def stack_warnings(cfg: PlatformConfig) -> Problems:
    """Slices without any team: nothing can be queued through Kueue, the slices stay idle."""
    warnings = Problems()
    if not cfg.teams and cfg.slice_pools:
        slices = sum(pool.count for pool in cfg.slice_pools)
        warnings.add(
            ("teams",),
            f"no teams: the stack builds {slices} slice(s) but no ClusterQueue or LocalQueue, so no job can "
            "be admitted through Kueue; add tpu-platform:teams",
        )
    return warnings
