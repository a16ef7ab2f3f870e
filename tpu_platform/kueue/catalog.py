"""What a workload linter needs to know about a stack's queues, without rendering anything.

``queue_directory(cfg)`` answers: which LocalQueues exist (namespace, name), which
ClusterQueue each feeds and which flavors / slice shapes that ClusterQueue has quota for,
which priority names exist and their values, and the node labels of each flavor. Build it
from a validated stack (``tpu_platform.plan.parse_stack_config`` or ``parse_platform``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..config import PlatformConfig
from ..quota import quota_layout
from .objects import flavors


@dataclass(frozen=True)
class FlavorInfo:
    """One ResourceFlavor: the slice shape it stands for and the node labels it requires."""

    name: str
    topology: str
    multi_host: bool
    chips_per_slice: int
    vms_per_slice: int
    chips_per_vm: int
    machine_type: str
    slices: int
    node_labels: dict[str, str]

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "topology": self.topology,
            "multiHost": self.multi_host,
            "chipsPerSlice": self.chips_per_slice,
            "vmsPerSlice": self.vms_per_slice,
            "chipsPerVm": self.chips_per_vm,
            "machineType": self.machine_type,
            "slices": self.slices,
            "nodeLabels": dict(self.node_labels),
        }


@dataclass(frozen=True)
class QueueInfo:
    """A LocalQueue and what stands behind it."""

    namespace: str
    name: str
    team: str
    cluster_queue: str
    cohort: str | None
    flavors: tuple[str, ...]  # names of the flavors the ClusterQueue has quota for
    topologies: tuple[str, ...]  # their slice topologies, in the same order

    def as_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "namespace": self.namespace,
            "name": self.name,
            "team": self.team,
            "clusterQueue": self.cluster_queue,
            "flavors": list(self.flavors),
            "topologies": list(self.topologies),
        }
        if self.cohort:
            doc["cohort"] = self.cohort
        return doc


@dataclass(frozen=True)
class QueueDirectory:
    """LocalQueues by ``(namespace, name)``, priorities by name, flavors by name."""

    local_queues: dict[tuple[str, str], QueueInfo] = field(default_factory=dict)
    priorities: dict[str, int] = field(default_factory=dict)
    default_priority: str | None = None
    flavors: dict[str, FlavorInfo] = field(default_factory=dict)

    def queue(self, namespace: str, name: str) -> QueueInfo | None:
        """The LocalQueue a job labelled ``kueue.x-k8s.io/queue-name: <name>`` in ``namespace`` reaches."""
        return self.local_queues.get((namespace, name))

    def queues_in(self, namespace: str) -> list[QueueInfo]:
        return [q for (ns, _), q in sorted(self.local_queues.items()) if ns == namespace]

    def flavors_of(self, queue: QueueInfo) -> list[FlavorInfo]:
        return [self.flavors[name] for name in queue.flavors if name in self.flavors]

    def as_dict(self) -> dict[str, Any]:
        return {
            "localQueues": [q.as_dict() for _, q in sorted(self.local_queues.items())],
            "priorities": dict(self.priorities),
            "defaultPriority": self.default_priority,
            "flavors": [f.as_dict() for f in self.flavors.values()],
        }


def queue_directory(cfg: PlatformConfig) -> QueueDirectory:
    """The linter's view of a validated stack, read off its quota/queue plan."""
    plan = quota_layout(cfg)
    flavor_infos = {
        f.name: FlavorInfo(
            name=f.name,
            topology=f.shape.topology,
            multi_host=f.shape.multi_host,
            chips_per_slice=f.shape.chips,
            vms_per_slice=f.shape.vms,
            chips_per_vm=f.shape.chips_per_vm,
            machine_type=f.shape.machine_type,
            slices=f.slices,
            node_labels=dict(f.node_labels),
        )
        for f in flavors(cfg, plan)
    }
    queues: dict[tuple[str, str], QueueInfo] = {}
    for node in plan.cluster_queues:
        quota = node.ordered()
        names = tuple(q.flavor for q in quota)
        topologies = tuple(q.shape.topology for q in quota)
        for namespace, name in node.local_queues:
            queues[(namespace, name)] = QueueInfo(
                namespace=namespace,
                name=name,
                team=node.team or node.name,
                cluster_queue=node.name,
                cohort=node.parent,
                flavors=names,
                topologies=topologies,
            )
    default = next((p.name for p in cfg.priorities if p.global_default), None)
    return QueueDirectory(
        local_queues=queues,
        priorities={p.name: p.value for p in sorted(cfg.priorities, key=lambda p: p.value)},
        default_priority=default,
        flavors=flavor_infos,
    )
