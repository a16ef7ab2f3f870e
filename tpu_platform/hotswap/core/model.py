"""The immutable cluster snapshot the decision core reads, and the record of a refused value.

Times are float epoch seconds. Mappings are treated as read-only. Only what the decisions need is
modelled; the adapter (or a simulator) fills these from the cluster.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Final

from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.constants import Taint

MAX_TOPOLOGY_DIM: Final = 64
"""Per dimension of ``cloud.google.com/gke-tpu-topology`` (v6e's largest slice is 16x16)."""
MAX_TOPOLOGY_CHIPS: Final = 65_536
TOPOLOGY_PATTERN: Final = re.compile(r"^[1-9][0-9]{0,2}(x[1-9][0-9]{0,2}){1,2}$")
"""``AxB`` or ``AxBxC``, each dimension at most three digits (bounds checked apart)."""


def topology_chips(topology: str) -> int:
    """Chips in a slice topology such as ``"4x4"`` or ``"2x2x1"``; 0 if not a well-formed, bounded
    topology (each dimension 1..:data:`MAX_TOPOLOGY_DIM`, at most :data:`MAX_TOPOLOGY_CHIPS` chips)."""
    return _topology_chips(topology) if isinstance(topology, str) else 0


@lru_cache(maxsize=1024)
def _topology_chips(value: str) -> int:
    """Cached: a fleet has a handful of shapes, read for every JobSet on every reconcile (bounded, so
    hostile strings cannot grow it)."""
    if len(value) > 16 or not TOPOLOGY_PATTERN.match(value):
        return 0
    dims = [int(d) for d in value.split("x")]
    if any(d > MAX_TOPOLOGY_DIM for d in dims) or math.prod(dims) > MAX_TOPOLOGY_CHIPS:
        return 0
    return math.prod(dims)


@dataclass(frozen=True, slots=True)
class Rejection:
    """An object left alone this reconcile because one of its values was refused; or, with
    ``value_only``, one value of an object ignored while the object is handled as usual."""

    kind: str
    """``JobSet`` or ``Pod``; ``Node`` too for ``value_only``."""
    namespace: str
    name: str
    uid: str
    reason: str
    """Stable code for the metric label, e.g. ``checkpoint-interval``, ``topology``, ``clean-since``."""
    detail: str
    """For the warning Event: which field, what was found, what is accepted (and, for ``value_only``,
    what is done instead)."""
    value_only: bool = False
    """Only this value was refused (a time beyond now + clock skew, :mod:`tpu_platform.hotswap.core.
    screening`): the object is not left alone, the value counts as ``detail`` says."""


@dataclass(frozen=True, slots=True)
class Condition:
    type: str
    status: str
    """``"True"``, ``"False"`` or ``"Unknown"``."""
    last_transition: float
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Instance:
    """What Compute Engine said about the VM behind a node (``spec.providerID``), read by the adapter
    only for suspect nodes and only with ``Settings.compute_corroboration`` on. Never a guess: a read
    that failed leaves the node without evidence."""

    status: str
    """``Instance.status`` (https://cloud.google.com/compute/docs/reference/rest/v1/instances), or
    ``GONE`` when ``instances.get`` answered 404 (the VM was deleted)."""
    observed: float
    """When the answer arrived (epoch seconds)."""
    host_error_at: float | None = None
    """Start of the latest ``compute.instances.hostError`` operation Compute Engine recorded for the
    instance (zoneOperations.list), if any."""
    reset_at: float | None = None
    """Start (``insertTime``) of the latest ``reset`` operation on the instance that Compute Engine
    reports ``DONE`` without an error (zoneOperations.list), if any: the guest running then is gone."""
    reset_pending: bool = False
    """A reset of the instance was sent (by this controller) or is recorded but not ``DONE`` yet."""


@dataclass(frozen=True, slots=True)
class Termination:
    """How one container of a pod last ended (``status.containerStatuses[].state.terminated``, or
    ``lastState.terminated`` after a restart). Written by the kubelet, but ``message`` (and often
    ``reason``) come from the workload: the termination-message file, or its last log lines with
    ``terminationMessagePolicy: FallbackToLogsOnError``. A tenant can put anything there, so the core
    reads it only within the bounds of :mod:`tpu_platform.hotswap.core.workload_signals`."""

    container: str
    exit_code: int
    reason: str = ""
    message: str = ""
    finished: float | None = None
    """``finishedAt`` (epoch seconds)."""


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    pool: str
    """Value of ``cloud.google.com/gke-nodepool``: the slice this node belongs to."""
    conditions: tuple[Condition, ...] = ()
    taints: tuple[Taint, ...] = ()
    """In API order (the adapter patches taints by index)."""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    unschedulable: bool = False
    created: float = 0.0
    uid: str = ""
    resource_version: str = ""
    """Opaque; the adapter uses it for optimistic concurrency on node patches."""
    lease_renewed: float | None = None
    """``spec.renewTime`` of the node's Lease in ``kube-node-lease`` (the kubelet's heartbeat); None if
    no Lease is known. Read only when ``Settings.lease_stale_seconds`` is on."""
    instance: Instance | None = None
    """Compute Engine's evidence about the VM, when the node is suspect and corroboration is on."""
    provider_id: str = ""
    """``spec.providerID`` when it names a Compute Engine VM (``gce://PROJECT/ZONE/INSTANCE``, checked
    by the adapter against Compute Engine's naming rules); empty when absent or refused, and then the
    VM is never read."""
    tpu_capacity: int | None = None
    """``status.capacity["google.com/tpu"]``: the chips the device plugin registered (None: unknown)."""
    tpu_allocatable: int | None = None
    """``status.allocatable["google.com/tpu"]``. The kubelet counts every registered device in capacity
    but only healthy ones here (kubernetes/kubernetes ``pkg/kubelet/cm/devicemanager/manager.go``,
    ``GetCapacity``), so allocatable below capacity means chips the device plugin marked Unhealthy."""

    def condition(self, type_: str) -> Condition | None:
        for c in self.conditions:
            if c.type == type_:
                return c
        return None

    def has_taint(self, key: str) -> bool:
        return any(t.key == key for t in self.taints)


@dataclass(frozen=True, slots=True)
class NodePool:
    """One GKE node pool = one TPU slice (multi-host slices are created and repaired as a unit)."""

    name: str
    topology: str
    expected_nodes: int
    accelerator: str = "tpu-v6e-slice"

    @property
    def chips(self) -> int:
        return topology_chips(self.topology)


PENDING = "Pending"
RUNNING = "Running"
SUCCEEDED = "Succeeded"
FAILED = "Failed"


@dataclass(frozen=True, slots=True)
class Pod:
    namespace: str
    name: str
    uid: str
    jobset: str | None = None
    """``namespace/name`` of the owning JobSet. The adapter sets it only for a pod controlled by a
    Job (owner reference) that carries JobSet's ``jobset.sigs.k8s.io/jobset-name`` and
    ``jobset-uid`` labels, never from the name label alone."""
    jobset_uid: str = ""
    """The ``jobset.sigs.k8s.io/jobset-uid`` label. When set, the pod belongs to the JobSet only if
    this equals the JobSet's UID (a namesake's or a forger's pod does not)."""
    job: str = ""
    """Child Job name. With exclusive placement each Job occupies exactly one slice."""
    job_uid: str = ""
    """UID in the pod's controller owner reference to a ``batch/v1`` Job ('' without one): the
    first link of the ownership chain :mod:`tpu_platform.hotswap.core.ownership` checks."""
    node: str | None = None
    phase: str = PENDING
    priority: int = 0
    deletion_timestamp: float | None = None
    deletion_grace: float | None = None
    """``metadata.deletionGracePeriodSeconds``: with ``deletion_timestamp``, when deletion was asked."""
    nominated_node: str | None = None
    """``status.nominatedNodeName``: kube-scheduler is preempting for this pod."""
    unschedulable_since: float | None = None
    """PodScheduled=False/Unschedulable transition time; None if the scheduler has not given up."""
    gated: bool = False
    """Has scheduling gates; not yet the scheduler's (or our) business."""
    uses_accelerator: bool = True
    """Requests ``google.com/tpu``: only such pods occupy a slice."""
    created: float = 0.0
    started: float | None = None
    rejection: Rejection | None = None
    """Set by the adapter when a value on the pod was refused: it then belongs to no JobSet."""
    terminations: tuple[Termination, ...] = ()
    """Containers that ended with a non-zero exit code (see :class:`Termination`)."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def terminating(self) -> bool:
        return self.deletion_timestamp is not None

    @property
    def finished(self) -> bool:
        return self.phase in (SUCCEEDED, FAILED)


@dataclass(frozen=True, slots=True)
class JobSet:
    namespace: str
    name: str
    uid: str
    priority: int
    """Pod priority value (what kube-scheduler uses) of the JobSet's pods."""
    topology: str
    """Slice topology each replica needs, e.g. ``"4x4"``."""
    slices: int = 1
    """Replicas = slices the JobSet runs on."""
    accelerator: str = "tpu-v6e-slice"
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    restart_strategy: str = "Recreate"
    max_restarts: int = 0
    restarts: int = 0
    """``status.restartsCountTowardsMax``."""
    disruption_ignores_max_restarts: bool = False
    """Failure policy maps DisruptionTarget -> FailJob -> RestartJobSetAndIgnoreMaxRestarts."""
    suspended: bool = False
    finished: bool = False
    """Terminal state reached or being deleted."""
    created: float = 0.0
    child_jobs: frozenset[str] = frozenset()
    """Names of the Jobs the JobSet controller creates for it, ``<jobset>-<replicatedJob>-<index>``
    (JobSet v0.12.0 ``pkg/util/placement/placement.go``, ``GenJobName``): no other Job is its child."""
    running_since: float | None = None
    """Start of the current run (earliest start time of its running pods)."""
    last_checkpoint: float | None = None
    checkpoint_interval: float | None = None
    rejection: Rejection | None = None
    """Set by the adapter when a tenant-written value was refused: the core then leaves the JobSet
    alone (as if unmanaged) and reports it."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def chips(self) -> int:
        return topology_chips(self.topology) * max(self.slices, 1)


def is_managed(js: JobSet) -> bool:
    """Opted in: the hotswap label plus node-pool exclusive placement (one replica per slice)."""
    return (
        js.labels.get(k.OPT_IN_LABEL) == k.OPT_IN_VALUE
        and js.annotations.get(k.EXCLUSIVE_TOPOLOGY_ANNOTATION) == k.NODEPOOL_LABEL
    )


def is_preemptible(js: JobSet, opt_out_namespaces: Collection[str] = ()) -> bool:
    """Managed and not opted out of being a victim.

    ``preemptible: "false"`` is honoured only in ``opt_out_namespaces`` (the stack's grant,
    ``Settings.opt_out_namespaces``): elsewhere a JobSet cannot take the controller's help as a
    beneficiary while refusing ever to be a victim."""
    if not is_managed(js):
        return False
    opted_out = js.annotations.get(k.PREEMPTIBLE_ANNOTATION, "").strip().lower() == "false"
    return not (opted_out and js.namespace in opt_out_namespaces)


@dataclass(frozen=True, slots=True)
class ChildJob:
    """A ``batch/v1`` Job and the JobSet that controls it (its controller owner reference)."""

    namespace: str
    name: str
    uid: str
    jobset: str = ""
    """Name in the controller owner reference of kind ``JobSet`` ('' without one)."""
    jobset_uid: str = ""
    """UID in that reference."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything one reconcile sees. ``pools`` lists the slices; nodes name their pool."""

    now: float
    pools: tuple[NodePool, ...]
    nodes: tuple[Node, ...]
    jobsets: tuple[JobSet, ...] = ()
    pods: tuple[Pod, ...] = ()
