"""Stack warnings: deployable, but probably not what was meant. Reported, never fatal."""

from __future__ import annotations

from ..platform import PlatformConfig
from ..problems import Problems


def stack_warnings(cfg: PlatformConfig) -> Problems:
    """Slices without any team (nothing can be queued through Kueue, the slices stay idle), and
    corroboration on an adopted cluster (Workload Identity cannot be checked)."""
    warnings = Problems()
    if not cfg.teams and cfg.slice_pools:
        slices = sum(pool.count for pool in cfg.slice_pools)
        warnings.add(
            ("teams",),
            f"no teams: the stack builds {slices} slice(s) but no ClusterQueue or LocalQueue, so no job can "
            "be admitted through Kueue; add tpu-platform:teams",
        )
    if cfg.hotswap.enabled and cfg.hotswap.compute_corroboration and cfg.cluster.mode == "adopt":
        warnings.add(
            ("hotswap", "computeCorroboration"),
            "the cluster is adopted, so the stack cannot see whether Workload Identity is on: the adopted "
            f"cluster needs the workload pool {cfg.project}.svc.id.goog and the GKE metadata server "
            "(workloadMetadataConfig mode GKE_METADATA) on a pool the controller can run on, or every "
            "Compute Engine read fails and suspect nodes take the conservative path",
        )
    return warnings
