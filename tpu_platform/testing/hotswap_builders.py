"""Small constructors for realistic snapshots: for tests, benchmarks and simulators.

They fill in the labels, taints and opt-in markers GKE and JobSet would set, so a scenario reads as
"three 4x4 pools, a high-priority JobSet on the first" rather than as dictionaries.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.model import (
    PENDING,
    RUNNING,
    Condition,
    Instance,
    JobSet,
    Node,
    NodePool,
    Pod,
    Snapshot,
    Taint,
    topology_chips,
)

GKE_TPU_TAINT = k.GKE_TPU_TAINT


def make_pool(
    name: str, topology: str = "4x4", *, chips_per_node: int = 4, accelerator: str = "tpu-v6e-slice"
) -> NodePool:
    """A pool sized like GKE sizes it: chips(topology) / chips per VM nodes."""
    return NodePool(
        name=name,
        topology=topology,
        expected_nodes=max(1, topology_chips(topology) // chips_per_node),
        accelerator=accelerator,
    )


def make_pools(
    prefix: str, count: int, topology: str = "4x4", *, chips_per_node: int = 4
) -> tuple[NodePool, ...]:
    width = len(str(max(count - 1, 0)))
    return tuple(
        make_pool(f"{prefix}-{i:0{width}d}", topology, chips_per_node=chips_per_node) for i in range(count)
    )


def make_nodes(pool: NodePool, *, ready_since: float = 0.0, count: int | None = None) -> tuple[Node, ...]:
    """Ready nodes ``<pool>-n<i>`` labelled and tainted as GKE does for TPU slices."""
    labels = {
        k.NODEPOOL_LABEL: pool.name,
        k.TPU_ACCELERATOR_LABEL: pool.accelerator,
        k.TPU_TOPOLOGY_LABEL: pool.topology,
    }
    n = pool.expected_nodes if count is None else count
    return tuple(
        Node(
            name=f"{pool.name}-n{i}",
            pool=pool.name,
            conditions=(Condition("Ready", "True", ready_since),),
            taints=(GKE_TPU_TAINT,),
            labels=dict(labels),
            created=ready_since,
            uid=f"uid-node-{pool.name}-{i}",
        )
        for i in range(n)
    )


def fail_node(node: Node, since: float, *, status: str = "Unknown", taint: bool = True) -> Node:
    """The node as kube-controller-manager leaves it when its kubelet goes silent (or reports not ready)."""
    conditions = (*(c for c in node.conditions if c.type != "Ready"), Condition("Ready", status, since))
    taints = node.taints
    if taint:
        key = k.UNREACHABLE_TAINT if status == "Unknown" else k.NOT_READY_TAINT
        taints = (*taints, Taint(key, "NoSchedule"), Taint(key, "NoExecute", time_added=since))
    return replace(node, conditions=conditions, taints=taints)


def heal_node(node: Node, since: float) -> Node:
    """Ready again since ``since``, with the not-ready/unreachable taints gone."""
    conditions = (*(c for c in node.conditions if c.type != "Ready"), Condition("Ready", "True", since))
    taints = tuple(t for t in node.taints if t.key not in (k.UNREACHABLE_TAINT, k.NOT_READY_TAINT))
    return replace(node, conditions=conditions, taints=taints)


def make_jobset(
    name: str,
    *,
    priority: int,
    namespace: str = "default",
    topology: str = "4x4",
    slices: int = 1,
    managed: bool = True,
    preemptible: bool = True,
    **fields: Any,
) -> JobSet:
    """A JobSet; ``managed`` sets the opt-in label and exclusive-topology annotation."""
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    if managed:
        labels[k.OPT_IN_LABEL] = k.OPT_IN_VALUE
        annotations[k.EXCLUSIVE_TOPOLOGY_ANNOTATION] = k.NODEPOOL_LABEL
    if not preemptible:
        annotations[k.PREEMPTIBLE_ANNOTATION] = "false"
    extra_ann = fields.pop("annotations", None)
    if isinstance(extra_ann, Mapping):
        annotations.update(extra_ann)
    js = JobSet(
        namespace=namespace,
        name=name,
        uid=f"uid-js-{namespace}-{name}",
        priority=priority,
        topology=topology,
        slices=slices,
        labels=labels,
        annotations=annotations,
        max_restarts=10,
    )
    return replace(js, **fields) if fields else js


def running_pods(
    js: JobSet,
    pools: Sequence[NodePool],
    nodes: Mapping[str, Sequence[Node]],
    *,
    started: float = 0.0,
    first_slice: int = 0,
) -> tuple[Pod, ...]:
    """One Running pod per node of each given pool, slice ``i`` on ``pools[i]``."""
    out = []
    for i, pool in enumerate(pools, start=first_slice):
        job = f"{js.name}-slice-{i}"
        for j, node in enumerate(nodes[pool.name]):
            out.append(
                Pod(
                    namespace=js.namespace,
                    name=f"{job}-{j}",
                    uid=f"uid-pod-{js.namespace}-{job}-{j}",
                    jobset=js.key,
                    jobset_uid=js.uid,
                    job=job,
                    node=node.name,
                    phase=RUNNING,
                    priority=js.priority,
                    created=started,
                    started=started,
                )
            )
    return tuple(out)


def pending_pods(
    js: JobSet,
    *,
    unschedulable_since: float,
    slices: Iterable[int] | None = None,
    pods_per_slice: int = 1,
    attempt: int = 1,
) -> tuple[Pod, ...]:
    """Unschedulable pods for the given slice indexes (default: all); by default the leaders only,
    as JobSet's exclusive placement holds followers back until the leader is placed."""
    out = []
    for i in range(js.slices) if slices is None else slices:
        job = f"{js.name}-slice-{i}"
        for j in range(pods_per_slice):
            out.append(
                Pod(
                    namespace=js.namespace,
                    name=f"{job}-{j}-a{attempt}",
                    uid=f"uid-pod-{js.namespace}-{job}-{j}-a{attempt}",
                    jobset=js.key,
                    jobset_uid=js.uid,
                    job=job,
                    phase=PENDING,
                    priority=js.priority,
                    unschedulable_since=unschedulable_since,
                    created=unschedulable_since,
                )
            )
    return tuple(out)


def nodes_by_pool(nodes: Iterable[Node]) -> dict[str, list[Node]]:
    out: dict[str, list[Node]] = {}
    for n in nodes:
        out.setdefault(n.pool, []).append(n)
    return out


def silent_node_cluster(
    t: float,
    instance: Instance | None,
    *,
    died: float,
    terminating: bool = False,
    provider_id: str = "",
) -> Snapshot:
    """One 4-node pool ``p`` at ``t`` with one high JobSet on it: ``p-n2``'s kubelet last renewed its
    Lease at ``died`` (still Ready: NotReady comes later) and carries ``instance`` as Compute Engine's
    evidence; every other node renewed a second ago. With ``terminating`` every pod is being deleted."""
    pool = make_pool("p")
    nodes = []
    for node in make_nodes(pool, ready_since=died - 3600):
        if node.name == "p-n2":
            node = replace(node, lease_renewed=died, instance=instance, provider_id=provider_id)  # noqa: PLW2901
        else:
            node = replace(node, lease_renewed=t - 1.0)  # noqa: PLW2901
        nodes.append(node)
    js = make_jobset("job", priority=10)
    pods = running_pods(js, [pool], {"p": nodes})
    if terminating:
        pods = tuple(replace(p, deletion_timestamp=t - 1.0) for p in pods)
    return Snapshot(now=t, pools=(pool,), nodes=tuple(nodes), jobsets=(js,), pods=pods)
