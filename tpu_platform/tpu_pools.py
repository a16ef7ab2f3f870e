"""Which resources are TPU slice node pools, from a type token and inputs alone.

A preview's resources (the policy rules) and an offline plan's entries (the plan review) are
told apart the same way, so the test lives below both.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

NODE_POOL = "gcp:container/nodePool:NodePool"
# ct6e-standard-4t, ct5lp-hightpu-8t, ...: the trailing number is the chips per VM.
TPU_MACHINE_RE = re.compile(r"^(ct[0-9][a-z0-9]*)-[a-z]+-([0-9]+)t$")


def tpu_chips_per_vm(machine_type: Any) -> int | None:
    """Chips on each VM of a TPU machine type; None for any other machine (or an unknown value)."""
    if not isinstance(machine_type, str):
        return None
    match = TPU_MACHINE_RE.match(machine_type)
    return int(match.group(2)) if match else None


def _block_field(inputs: Any, block: str, key: str) -> Any:
    section = inputs.get(block) if isinstance(inputs, Mapping) else None
    return section.get(key) if isinstance(section, Mapping) else None


def is_tpu_node_pool(type_token: str, inputs: Any) -> bool:
    """A node pool of TPU machines, or one placed as a TPU slice (``placementPolicy.tpuTopology``)."""
    return type_token == NODE_POOL and (
        tpu_chips_per_vm(_block_field(inputs, "nodeConfig", "machineType")) is not None
        or _block_field(inputs, "placementPolicy", "tpuTopology") is not None
    )
