"""How big Kueue's and JobSet's controllers are: a tier by fleet size, then the stack's overrides.

In the config layer so the stack checks can hold the final requests to the final limits, as the
API server does for a container (``requests`` above ``limits`` is rejected: Kubernetes
pkg/apis/core/validation ``ValidateResourceRequirements``, "must be less than or equal to ... limit").
"""

from __future__ import annotations

from dataclasses import dataclass

from .kueue import ControllerConfig
from .platform import PlatformConfig
from .shapes import entry_shape


@dataclass(frozen=True)
class ControllerSize:
    """Replicas and container resources of one controller."""

    replicas: int
    requests: dict[str, str]
    limits: dict[str, str]

    def resources(self) -> dict[str, dict[str, str]]:
        return {"requests": dict(self.requests), "limits": dict(self.limits)}


# (max TPU nodes, Kueue size, JobSet size): Kueue's memory grows with workloads and pods it
# tracks, JobSet's with Jobs; two replicas (leader election, webhooks on both) from mid-size up.
_TIERS: tuple[tuple[int, ControllerSize, ControllerSize], ...] = (
    (
        64,
        ControllerSize(1, {"cpu": "500m", "memory": "512Mi"}, {"cpu": "2", "memory": "1Gi"}),
        ControllerSize(1, {"cpu": "250m", "memory": "128Mi"}, {"cpu": "1", "memory": "512Mi"}),
    ),
    (
        512,
        ControllerSize(2, {"cpu": "1", "memory": "1Gi"}, {"cpu": "4", "memory": "2Gi"}),
        ControllerSize(2, {"cpu": "500m", "memory": "256Mi"}, {"cpu": "2", "memory": "1Gi"}),
    ),
    (
        1 << 30,
        ControllerSize(2, {"cpu": "2", "memory": "4Gi"}, {"cpu": "8", "memory": "8Gi"}),
        ControllerSize(2, {"cpu": "1", "memory": "1Gi"}, {"cpu": "4", "memory": "4Gi"}),
    ),
)


def fleet_nodes(cfg: PlatformConfig) -> int:
    """TPU VMs in the stack: the number that sizes the controllers (unknown shapes count 0)."""
    total = 0
    for pool in cfg.slice_pools:
        shape = entry_shape(pool.topology, pool.multi_host)
        total += shape.vms * pool.count if shape is not None else 0
    return total


def _sized(default: ControllerSize, override: ControllerConfig) -> ControllerSize:
    requests = dict(default.requests)
    limits = dict(default.limits)
    for target, given in ((requests, override.requests), (limits, override.limits)):
        if given is not None:
            target.update({k: v for k, v in given.model_dump().items() if v is not None})
    return ControllerSize(override.replicas or default.replicas, requests, limits)


def controller_sizes(cfg: PlatformConfig) -> tuple[ControllerSize, ControllerSize]:
    """``(kueue, jobset)`` sizes: the tier for the fleet's TPU node count, then the stack's overrides."""
    nodes = fleet_nodes(cfg)
    kueue, jobset = next((k, j) for limit, k, j in _TIERS if nodes <= limit)
    return _sized(kueue, cfg.kueue.controller), _sized(jobset, cfg.kueue.jobset)
