"""Which resources are TPU slice node pools, and their GKE names: shared by the rules and the plan review."""

from __future__ import annotations

import re

from .resources import Resource, is_unknown

NODE_POOL = "gcp:container/nodePool:NodePool"
# ct6e-standard-4t, ct5lp-hightpu-8t, ...: the trailing number is the chips per VM.
TPU_MACHINE_RE = re.compile(r"^(ct[0-9][a-z0-9]*)-[a-z]+-([0-9]+)t$")


def tpu_chips_per_node(pool: Resource) -> int | None:
    """Chips on each VM of a TPU node pool; None for a pool of other machines."""
    machine = pool.get("nodeConfig", "machineType")
    if not isinstance(machine, str):
        return None
    match = TPU_MACHINE_RE.match(machine)
    return int(match.group(2)) if match else None


def is_tpu_pool(pool: Resource) -> bool:
    return pool.type == NODE_POOL and (
        tpu_chips_per_node(pool) is not None or pool.get("placementPolicy", "tpuTopology") is not None
    )


def pool_name(pool: Resource) -> str:
    name = pool.get("name")
    return name if isinstance(name, str) and not is_unknown(name) else pool.name


__all__ = ["NODE_POOL", "TPU_MACHINE_RE", "is_tpu_pool", "pool_name", "tpu_chips_per_node"]
