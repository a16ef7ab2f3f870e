"""What the core asks the world to do: plain frozen records with a stable order.

The adapter turns them into API calls; a simulator applies them to its model (see
:func:`tpu_platform.hotswap.core.apply.apply_actions` for the reference semantics).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from tpu_platform.hotswap.core.constants import Taint
from tpu_platform.hotswap.core.model import JobSet, Pod


class EvictionCause(StrEnum):
    FAIL_FAST = "fail-fast"
    """The pod sits on an unhealthy pool; evicting it makes JobSet restart now."""
    PREEMPTION = "preemption"
    """The pod belongs to a victim whose slices go to a higher-priority JobSet."""


@dataclass(frozen=True, slots=True)
class PatchNode:
    """Add/remove taints and set/remove annotations on one node, touching nothing else."""

    node: str
    pool: str
    add_taints: tuple[Taint, ...] = ()
    remove_taints: tuple[str, ...] = ()
    """Taint keys to remove."""
    set_annotations: tuple[tuple[str, str], ...] = ()
    remove_annotations: tuple[str, ...] = ()
    reason: str = ""


@dataclass(frozen=True, slots=True)
class AnnotateJobSet:
    """Merge-patch annotations onto a JobSet (the victim's preemption record)."""

    namespace: str
    name: str
    uid: str
    annotations: tuple[tuple[str, str], ...]
    reason: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class EvictPod:
    """Evict through policy/v1 Eviction (honours PDBs; sets DisruptionTarget on the pod)."""

    namespace: str
    name: str
    uid: str
    cause: EvictionCause
    node: str | None = None
    pool: str | None = None
    jobset: str | None = None
    reason: str = ""

    @classmethod
    def of(cls, pod: Pod, cause: EvictionCause, pool: str | None, reason: str) -> EvictPod:
        """Evict ``pod``, recording why and which pool it frees."""
        return cls(pod.namespace, pod.name, pod.uid, cause, pod.node, pool, pod.jobset, reason)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class ForceDeletePod:
    """Delete with grace period 0: only for pods stuck Terminating on a node confirmed dead."""

    namespace: str
    name: str
    uid: str
    node: str
    jobset: str | None = None
    reason: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class ResetVm:
    """Hard-reset the VM behind a suspect node of a declared pool (Compute Engine ``instances.reset``):
    the reset that lets its pods be force-deleted (``core/vm_evidence.py``)."""

    node: str
    pool: str
    provider_id: str
    since: float
    """When the node's suspicion began: with the VM, it names the reset (one per suspicion)."""
    reason: str = ""


@dataclass(frozen=True, slots=True)
class EmitEvent:
    """A Kubernetes Event on the object the controller acted on (``namespace`` empty for nodes)."""

    kind: str
    namespace: str
    name: str
    uid: str
    type: str
    """``"Normal"`` or ``"Warning"``."""
    reason: str
    message: str
    action: str = ""

    @classmethod
    def on_jobset(cls, js: JobSet, type_: str, reason: str, message: str, action: str) -> EmitEvent:
        """An Event on a JobSet the controller acted on or for."""
        return cls("JobSet", js.namespace, js.name, js.uid, type_, reason, message, action)

    @classmethod
    def on_node(cls, node: tuple[str, str], type_: str, reason: str, message: str, action: str) -> EmitEvent:
        """An Event on a (cluster-scoped) Node, given as ``(name, uid)``."""
        return cls("Node", "", node[0], node[1], type_, reason, message, action)


Action = PatchNode | AnnotateJobSet | EvictPod | ForceDeletePod | ResetVm | EmitEvent


def action_sort_key(action: Action) -> tuple[int, str, str, str]:
    """Taints first (so nothing new lands on a broken slice), then records, evictions, deletes, VM
    resets, events."""
    match action:
        case PatchNode():
            return (0, action.pool, action.node, "")
        case AnnotateJobSet():
            return (1, action.namespace, action.name, "")
        case EvictPod():
            return (2, action.namespace, action.name, "")
        case ForceDeletePod():
            return (3, action.namespace, action.name, "")
        case ResetVm():
            return (4, action.pool, action.node, "")
        case EmitEvent():
            return (5, action.kind, f"{action.namespace}/{action.name}", action.reason)
    raise TypeError(f"not an action: {action!r}")


def sort_actions(actions: list[Action]) -> tuple[Action, ...]:
    return tuple(sorted(actions, key=action_sort_key))
