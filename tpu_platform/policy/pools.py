"""TPU slice node pools as the rules read them: which ones they are, their GKE names, sizes and labels."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..constants import LABEL_ACCELERATOR, LABEL_INSTANCE_TYPE, LABEL_NODEPOOL, LABEL_SPOT, LABEL_TOPOLOGY
from ..tpu_pools import TPU_MACHINE_RE, is_tpu_node_pool, tpu_chips_per_vm
from .resources import Resource, as_list, is_unknown


def tpu_chips_per_node(pool: Resource) -> int | None:
    """Chips on each VM of a TPU node pool; None for a pool of other machines."""
    return tpu_chips_per_vm(pool.get("nodeConfig", "machineType"))


def is_tpu_pool(pool: Resource) -> bool:
    return is_tpu_node_pool(pool.type, pool.props)


def pool_name(pool: Resource) -> str:
    name = pool.get("name")
    return name if isinstance(name, str) and not is_unknown(name) else pool.name


ACCELERATOR_BY_FAMILY = {
    "ct6e": "tpu-v6e-slice",
    "ct5lp": "tpu-v5-lite-podslice",
    "ct5p": "tpu-v5p-slice",
    "ct4p": "tpu-v4-podslice",
}
# Single-host v6e VMs: the topology GKE labels the node with, from the chips on it.
V6E_SINGLE_HOST_TOPOLOGY = {1: "1x1", 4: "2x2", 8: "2x4"}


def pool_max_nodes(pool: Resource) -> int | None:
    """The most nodes the pool can have: fixed size, or the autoscaling ceiling; None if unknown."""
    zones = max(1, len(as_list(pool.get("nodeLocations"))))
    autoscaling = pool.get("autoscaling")
    candidates: list[tuple[Any, int]]
    if isinstance(autoscaling, Mapping):
        candidates = [
            (autoscaling.get("totalMaxNodeCount"), 1),
            (autoscaling.get("maxNodeCount"), zones),
        ]
    else:
        candidates = [(pool.get("nodeCount"), zones), (pool.get("initialNodeCount"), zones)]
    for value, multiplier in candidates:
        if value is None:
            continue
        if is_unknown(value) or not isinstance(value, int | float):
            return None
        return int(value) * multiplier
    return 0


def pool_chips(pool: Resource) -> int | None:
    per_node = tpu_chips_per_node(pool)
    nodes = pool_max_nodes(pool)
    if per_node is None or nodes is None:
        return None
    return per_node * nodes


def pool_node_labels(pool: Resource) -> dict[str, str]:
    """The labels every node of the pool carries: its own plus the ones GKE adds to TPU nodes."""
    labels = {str(k): v for k, v in (pool.get("nodeConfig", "labels") or {}).items()}
    labels[LABEL_NODEPOOL] = pool_name(pool)
    machine = pool.get("nodeConfig", "machineType")
    if isinstance(machine, str):
        labels[LABEL_INSTANCE_TYPE] = machine
    match = TPU_MACHINE_RE.match(machine) if isinstance(machine, str) else None
    if match and match.group(1) in ACCELERATOR_BY_FAMILY:
        labels[LABEL_ACCELERATOR] = ACCELERATOR_BY_FAMILY[match.group(1)]
    topology = pool.get("placementPolicy", "tpuTopology")
    if topology is None and match and match.group(1) == "ct6e":
        topology = V6E_SINGLE_HOST_TOPOLOGY.get(int(match.group(2)))
    if topology is not None:
        labels[LABEL_TOPOLOGY] = topology
    if pool.get("nodeConfig", "spot") is True:
        labels[LABEL_SPOT] = "true"
    return labels


__all__ = [
    "is_tpu_pool",
    "pool_chips",
    "pool_max_nodes",
    "pool_name",
    "pool_node_labels",
    "tpu_chips_per_node",
]
