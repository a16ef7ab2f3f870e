"""Reference semantics of the actions on a snapshot (what the API server would record).

Used by the idempotency tests and meant as the starting point of a simulator: an eviction only marks
the pod Terminating (the kubelet, or a simulator's model of it, removes it later); a force delete
removes it at once; a VM reset marks the node's evidence pending; events change nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from tpu_platform.hotswap.core.actions import (
    Action,
    AnnotateJobSet,
    EmitEvent,
    EvictPod,
    ForceDeletePod,
    PatchNode,
    ResetVm,
)
from tpu_platform.hotswap.core.model import JobSet, Node, Pod, Snapshot


def apply_actions(snapshot: Snapshot, actions: Iterable[Action], *, now: float | None = None) -> Snapshot:
    """A new snapshot with ``actions`` applied at ``now`` (default: the snapshot's time)."""
    t = snapshot.now if now is None else now
    nodes: dict[str, Node] = {n.name: n for n in snapshot.nodes}
    jobsets: dict[str, JobSet] = {js.key: js for js in snapshot.jobsets}
    pods: dict[str, Pod] = {p.key: p for p in snapshot.pods}
    for action in actions:
        match action:
            case PatchNode():
                node = nodes.get(action.node)
                if node is not None:
                    nodes[node.name] = patch_node(node, action)
            case AnnotateJobSet():
                js = jobsets.get(action.key)
                if js is not None and js.uid == action.uid:
                    jobsets[js.key] = replace(js, annotations={**js.annotations, **dict(action.annotations)})
            case EvictPod():
                pod = pods.get(action.key)
                if pod is not None and pod.uid == action.uid and pod.deletion_timestamp is None:
                    pods[pod.key] = replace(pod, deletion_timestamp=t)
            case ForceDeletePod():
                pod = pods.get(action.key)
                if pod is not None and pod.uid == action.uid:
                    del pods[pod.key]
            case ResetVm():
                node = nodes.get(action.node)
                if node is not None and node.instance is not None:
                    nodes[node.name] = replace(node, instance=replace(node.instance, reset_pending=True))
            case EmitEvent():
                pass
    return replace(
        snapshot,
        now=t,
        nodes=tuple(nodes.values()),
        jobsets=tuple(jobsets.values()),
        pods=tuple(pods.values()),
    )


def patch_node(node: Node, action: PatchNode) -> Node:
    """Remove then add taints (by key, keeping the others in order) and update annotations."""
    taints = [t for t in node.taints if t.key not in action.remove_taints]
    for t in action.add_taints:
        if not any(x.key == t.key and x.effect == t.effect for x in taints):
            taints.append(t)
    annotations = {key: v for key, v in node.annotations.items() if key not in action.remove_annotations}
    annotations.update(action.set_annotations)
    return replace(node, taints=tuple(taints), annotations=annotations)
