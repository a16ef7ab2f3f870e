"""kwok-managed TPU v6e nodes, one node pool per slice, as a stack's plan renders the pools.

Each ``gcp:container/nodePool:NodePool`` of a plan becomes ``nodeCount`` Node objects carrying what
GKE puts on TPU nodes (`../shared/reference/tpu-v6e-and-gke.md`: the accelerator, topology and
node-pool labels, the ``google.com/tpu=present:NoSchedule`` taint, ``google.com/tpu`` = chips per
VM) plus the pool's own ``nodeConfig.labels`` and taints, the Spot label
(``cloud.google.com/gke-spot``) and a ``gce://`` providerID. kwok manages every node annotated
``kwok.x-k8s.io/node=fake``: it initialises the node, renews its Lease and heartbeats, and runs the
pods bound to it. Removing that annotation is a silent host: no more Lease renewals or status
updates, exactly what the node lifecycle controller sees when a VM dies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tpu_platform import catalog, constants

KWOK_ANNOTATION = "kwok.x-k8s.io/node"
MANAGED = "fake"

# vCPUs and memory of the v6e machine types (Cloud TPU "TPU v6e", system architecture table).
MACHINE_SIZES = {
    "ct6e-standard-1t": ("44", "448Gi"),
    "ct6e-standard-4t": ("180", "720Gi"),
    "ct6e-standard-8t": ("180", "1440Gi"),
}
CHIPS = {"ct6e-standard-1t": 1, "ct6e-standard-4t": 4, "ct6e-standard-8t": 8}


@dataclass(frozen=True)
class SlicePool:
    """One node pool of a plan: a TPU slice (or a single-host pool) of ``nodes`` VMs."""

    name: str
    machine_type: str
    topology: str
    nodes: int
    zone: str
    project: str
    labels: dict[str, str]
    taints: tuple[dict[str, str], ...]
    spot: bool

    def node_names(self) -> list[str]:
        return [f"gke-{self.name}-{i:02d}" for i in range(self.nodes)]


def pools_from_plan(plan: dict[str, Any]) -> list[SlicePool]:
    """Every TPU node pool in a plan; autoscaled pools at their maximum (capacity that can exist)."""
    pools = []
    for res in plan.get("resources", []):
        if res.get("type") != "gcp:container/nodePool:NodePool":
            continue
        inputs = res["inputs"]
        node_config = inputs.get("nodeConfig") or {}
        machine = str(node_config.get("machineType", ""))
        if machine not in MACHINE_SIZES:
            continue
        autoscaling = inputs.get("autoscaling") or {}
        count = (
            inputs.get("nodeCount") or autoscaling.get("totalMaxNodeCount") or autoscaling.get("maxNodeCount")
        )
        topology = str(
            (inputs.get("placementPolicy") or {}).get("tpuTopology") or _single_host_topology(machine)
        )
        pools.append(
            SlicePool(
                name=str(inputs["name"]),
                machine_type=machine,
                topology=topology,
                nodes=int(count or 1),
                zone=str((inputs.get("nodeLocations") or [inputs.get("location", "")])[0]),
                project=str(inputs.get("project", "project")),
                labels={str(k): str(v) for k, v in (node_config.get("labels") or {}).items()},
                taints=tuple(
                    {"key": t["key"], "value": t.get("value", ""), "effect": _effect(t["effect"])}
                    for t in node_config.get("taints") or []
                ),
                spot=bool(node_config.get("spot")),
            )
        )
    return pools


def _single_host_topology(machine: str) -> str:
    return {"ct6e-standard-1t": "1x1", "ct6e-standard-4t": "2x2", "ct6e-standard-8t": "2x4"}[machine]


def _effect(gke_effect: str) -> str:
    """GKE's ``NO_SCHEDULE`` as Kubernetes' ``NoSchedule``."""
    return {
        "NO_SCHEDULE": "NoSchedule",
        "PREFER_NO_SCHEDULE": "PreferNoSchedule",
        "NO_EXECUTE": "NoExecute",
    }.get(gke_effect, gke_effect)


def node_objects(pool: SlicePool) -> list[dict[str, Any]]:
    """The Node objects of one pool, ready to create (kwok fills in conditions and heartbeats)."""
    cpu, memory = MACHINE_SIZES[pool.machine_type]
    chips = str(CHIPS[pool.machine_type])
    region = pool.zone.rsplit("-", 1)[0]
    out = []
    for name in pool.node_names():
        labels = {
            constants.LABEL_ACCELERATOR: catalog.ACCELERATOR,
            constants.LABEL_TOPOLOGY: pool.topology,
            constants.LABEL_NODEPOOL: pool.name,
            "cloud.google.com/machine-family": "ct6e",
            constants.LABEL_INSTANCE_TYPE: pool.machine_type,
            "topology.kubernetes.io/region": region,
            "topology.kubernetes.io/zone": pool.zone,
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "type": "kwok",
            **pool.labels,
        }
        if pool.spot:
            labels[constants.LABEL_SPOT] = "true"
        resources = {"cpu": cpu, "memory": memory, "pods": "110", "google.com/tpu": chips}
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": labels, "annotations": {KWOK_ANNOTATION: MANAGED}},
                "spec": {
                    "providerID": f"gce://{pool.project}/{pool.zone}/{name}",
                    "taints": [
                        {"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"},
                        *pool.taints,
                    ],
                },
                "status": {"allocatable": resources, "capacity": resources},
            }
        )
    return out
