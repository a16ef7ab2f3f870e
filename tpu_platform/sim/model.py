"""The simulated cluster's objects: slices (node pools) and nodes, pods, and JobSets with their specs.

Nodes carry the API view the controller reads (a ``tpu_platform.hotswap.core.Node``) next to the physical
truth (``alive``) that only the kubelet knows. A TPU pod takes all chips of its node, so a node holds at
most one bound, non-terminal pod (kube-scheduler counts a terminating pod's chips until it is gone).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tpu_platform.hotswap.core import Node, Pod
from tpu_platform.hotswap.core.model import FAILED, PENDING, RUNNING, SUCCEEDED, Termination

BLOCKING = "BlockingRecreate"
RECREATE = "Recreate"
RESTART_STRATEGIES = (BLOCKING, RECREATE)

# Why a pod went away or a run broke: drives lost-work attribution and MTTR episodes.
CAUSE_FAILURE = "failure"
"""Hardware: its node died, or the controller failed it fast off a broken slice."""
CAUSE_SCHEDULER = "preempted-by-scheduler"
CAUSE_CONTROLLER = "preempted-by-controller"
CAUSE_KUEUE = "preempted-by-kueue"
CAUSE_RESTART = "restart"
"""Deleted by its own JobSet's restart (follows another cause)."""
CAUSE_DONE = "done"
PREEMPTIONS = (CAUSE_SCHEDULER, CAUSE_CONTROLLER, CAUSE_KUEUE)


@dataclass(frozen=True, slots=True)
class WorkloadSpec:
    """One JobSet as submitted: always exclusive placement, one replicated Job of ``slices`` replicas."""

    name: str
    namespace: str
    queue: str
    """LocalQueue name (``kueue.x-k8s.io/queue-name``) in ``namespace``."""
    priority_class: str
    priority: int
    topology: str
    slices: int = 1
    restart_strategy: str = BLOCKING
    pod_failure_policy: bool = True
    """DisruptionTarget -> FailJob plus RestartJobSetAndIgnoreMaxRestarts (the repo's example JobSets)."""
    max_restarts: int = 10
    managed: bool = True
    """Carries the hotswap opt-in label (exclusive placement is always on)."""
    preemptible: bool = True
    can_preempt: bool = True
    """PriorityClass preemptionPolicy PreemptLowerPriority (False: Never)."""
    checkpoint_s: float | None = 3600.0
    work_s: float | None = None
    """Productive seconds until it completes; None runs until the simulation ends."""
    submit_at: float = 0.0
    team: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(slots=True)
class Pool:
    """One GKE node pool = one TPU slice."""

    name: str
    topology: str
    chips: int
    size: int
    """Nodes (VMs) in the slice."""
    team: str | None = None
    nodes: list[str] = field(default_factory=list)
    """Names of the Node objects that exist now."""
    repairing: bool = False
    generation: int = 0


@dataclass(slots=True)
class SimNode:
    name: str
    pool: str
    api: Node
    alive: bool = True
    incarnation: int = 0
    """Bumped by every failure or recovery, so timers armed for an older state do nothing."""
    holders: set[str] = field(default_factory=set)
    """Keys of the non-terminal pods bound here, terminating ones included: they hold the chips."""
    lease_from: float = 0.0
    """When the kubelet (re)started: it renews its node Lease then and every renewal interval after."""
    lease_last: float | None = None
    """The last renewal before the kubelet died; None while it is alive."""
    repair_armed: bool = True
    """GKE's auto-repair starts when this node has been NotReady long enough (not for a kubelet restart,
    nor for a node already being repaired)."""
    chips_ok: bool = True
    """False once the device plugin withdrew the node's chips after a chip/ICI error (until repair):
    kube-scheduler no longer places a TPU pod there."""
    chip_broken: bool = False
    """A chip or ICI link of the node failed (the hardware truth, until repair): a TPU pod started
    here fails at its runtime's initialization."""
    vm_running: bool = True
    """The VM's guest runs, so containers on it may still be running (even with the kubelet silent, as
    in a kubelet restart or a slow host). Force-deleting a pod here is unsafe: two copies could run."""
    vm_down_at: float | None = None
    """When the guest stopped (host death, maintenance, Spot); None while it runs."""
    host_error_at: float | None = None
    """When Compute Engine recorded a ``compute.instances.hostError`` for the VM (a host death after
    which it restarted the VM elsewhere, ``host_fates.RESTARTED``); None if it never did."""

    reset_sent_at: float | None = None
    """When the controller's latest reset of the VM reached Compute Engine (its Operation's insert time)."""
    reset_done: bool = False
    """That reset's Operation is DONE: the guest running at ``reset_sent_at`` is gone."""

    def lease_renewed(self, now: float, every: float) -> float:
        """The node Lease's renewTime at ``now``."""
        if self.lease_last is not None:
            return self.lease_last
        return self.lease_from + every * ((now - self.lease_from) // every)

    @property
    def ready(self) -> bool:
        c = self.api.condition("Ready")
        return c is not None and c.status == "True"


@dataclass(slots=True)
class SimPod:
    key: str
    namespace: str
    name: str
    uid: str
    workload: str
    job: str
    slice_index: int
    index: int
    """0 is the leader (exclusive placement schedules it first)."""
    attempt: int
    priority: int
    created: float
    pool_selector: str | None = None
    """Followers are pinned to their leader's pool."""
    node: str | None = None
    pool: str | None = None
    holding: bool = False
    """Bound, not terminal, and its node still exists: it holds the node's chips."""
    bound_at: float | None = None
    phase: str = PENDING
    deletion: float | None = None
    disruption: str | None = None
    """Reason of the DisruptionTarget condition, if an eviction or preemption set one."""
    cause: str | None = None
    nominated: str | None = None
    job_deleted: bool = False
    """Its Job was deleted by a JobSet restart (Foreground): a Job of that name waits for it to go."""
    unschedulable_since: float | None = None
    termination: Termination | None = None
    """How its trainer container ended, when it failed with an error (the kubelet's report)."""
    core: Pod | None = None
    """Cached ``tpu_platform.hotswap.core.Pod``; cleared on every change."""

    @property
    def terminating(self) -> bool:
        return self.deletion is not None

    @property
    def terminal(self) -> bool:
        return self.phase in (FAILED, SUCCEEDED)

    @property
    def leader(self) -> bool:
        return self.index == 0

    def changed(self) -> None:
        self.core = None


@dataclass(slots=True)
class Workload:
    spec: WorkloadSpec
    uid: str
    chips_per_slice: int
    nodes_per_slice: int
    cluster_queue: str
    state: str = "queued"
    """queued (suspended by Kueue), admitted, done or failed."""
    created: float = 0.0
    admitted_at: float | None = None
    attempt: int = 0
    restarts: int = 0
    restarting: bool = False
    """The current attempt still has Jobs to create (their predecessors are not gone yet)."""
    pending: set[int] = field(default_factory=set)
    """Slice (Job) indexes of the current attempt whose Job is not created yet."""
    resumed: bool = False
    """The current attempt is Kueue resuming a suspended JobSet (its Jobs were kept), not a restart."""
    pods: dict[str, SimPod] = field(default_factory=dict)
    progress: float = 0.0
    checkpoint_progress: float = 0.0
    last_checkpoint_at: float | None = None
    productive_since: float | None = None
    running_since: float | None = None
    """Pods Running, still compiling and restoring (not yet productive)."""
    annotations: dict[str, str] = field(default_factory=dict)
    assigned: tuple[str, ...] | None = None
    """Kueue TAS: the slice (pool) assigned to each Job; its pods carry it as node selector."""
    token: int = 0
    """Bumped whenever the current run or attempt ends, invalidating its timers."""

    @property
    def key(self) -> str:
        return self.spec.key

    @property
    def chips(self) -> int:
        return self.chips_per_slice * self.spec.slices

    @property
    def priority(self) -> int:
        return self.spec.priority

    @property
    def productive(self) -> bool:
        return self.productive_since is not None

    def current_pods(self) -> list[SimPod]:
        return [p for p in self.pods.values() if p.attempt == self.attempt]


__all__ = [
    "BLOCKING",
    "CAUSE_CONTROLLER",
    "CAUSE_DONE",
    "CAUSE_FAILURE",
    "CAUSE_KUEUE",
    "CAUSE_RESTART",
    "CAUSE_SCHEDULER",
    "FAILED",
    "PENDING",
    "PREEMPTIONS",
    "RECREATE",
    "RESTART_STRATEGIES",
    "RUNNING",
    "SUCCEEDED",
    "Pool",
    "SimNode",
    "SimPod",
    "Workload",
    "WorkloadSpec",
]
