"""Raw API objects (dicts) -> the core's snapshot types. Pure functions, tolerant of missing fields."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.model import Condition, JobSet, Node, NodePool, Pod, Taint, topology_chips
from tpu_platform.hotswap.core.timeutil import parse_time

JSON = Mapping[str, Any]
_INSTANCE_CHIPS = re.compile(r"-(\d+)t$")


def _meta(obj: JSON) -> JSON:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _strs(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        return {}
    return {str(key): str(v) for key, v in value.items()}


def object_key(obj: JSON) -> str:
    meta = _meta(obj)
    ns = meta.get("namespace") or ""
    return f"{ns}/{meta.get('name', '')}" if ns else str(meta.get("name", ""))


@dataclass(frozen=True, slots=True)
class NodeRecord:
    """A node plus what the pool inventory is derived from."""

    node: Node
    topology: str
    accelerator: str
    chips_per_node: int


def _chips_per_node(obj: JSON, labels: Mapping[str, str]) -> int:
    status = obj.get("status") or {}
    for section in ("capacity", "allocatable"):
        value = (status.get(section) or {}).get(k.TPU_RESOURCE)
        try:
            if value is not None and int(value) > 0:
                return int(value)
        except (TypeError, ValueError):
            continue
    m = _INSTANCE_CHIPS.search(labels.get("node.kubernetes.io/instance-type", ""))
    return int(m.group(1)) if m else 4


def node_from_api(obj: JSON) -> NodeRecord | None:
    """None for nodes that belong to no TPU node pool."""
    meta = _meta(obj)
    labels = _strs(meta.get("labels"))
    pool = labels.get(k.NODEPOOL_LABEL)
    accelerator = labels.get(k.TPU_ACCELERATOR_LABEL)
    if not pool or not accelerator:
        return None
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    taints = tuple(
        Taint(
            key=str(t.get("key", "")),
            effect=str(t.get("effect", "")),
            value=str(t.get("value") or ""),
            time_added=parse_time(t.get("timeAdded")),
        )
        for t in spec.get("taints") or ()
        if isinstance(t, Mapping)
    )
    conditions = tuple(
        Condition(
            type=str(c.get("type", "")),
            status=str(c.get("status", "Unknown")),
            last_transition=parse_time(c.get("lastTransitionTime")) or 0.0,
            reason=str(c.get("reason") or ""),
        )
        for c in status.get("conditions") or ()
        if isinstance(c, Mapping)
    )
    node = Node(
        name=str(meta.get("name", "")),
        pool=pool,
        conditions=conditions,
        taints=taints,
        labels=labels,
        annotations=_strs(meta.get("annotations")),
        unschedulable=bool(spec.get("unschedulable", False)),
        created=parse_time(meta.get("creationTimestamp")) or 0.0,
        uid=str(meta.get("uid", "")),
        resource_version=str(meta.get("resourceVersion", "")),
    )
    return NodeRecord(node, labels.get(k.TPU_TOPOLOGY_LABEL, ""), accelerator, _chips_per_node(obj, labels))


@dataclass(frozen=True, slots=True)
class NodeLease:
    """A node's heartbeat: the kubelet renews the Lease named after its node."""

    node: str
    renewed: float


def lease_from_api(obj: JSON) -> NodeLease | None:
    """None for a Lease without ``spec.renewTime``: no heartbeat known, so no signal from it."""
    renewed = parse_time((obj.get("spec") or {}).get("renewTime"))
    name = str(_meta(obj).get("name", ""))
    return NodeLease(name, renewed) if renewed is not None and name else None


class LeaseObservations:
    """When this process last saw each node's Lease change, on its own clock.

    ``renewTime`` is written with the kubelet's clock; comparing it with the controller's clock
    would let clock skew decide when a node counts as silent. Like the node lifecycle controller,
    the controller times a heartbeat from when it observed ``renewTime`` change. A Lease first seen
    counts as renewed at that moment, so a restart never declares anything stale at once.
    """

    def __init__(self) -> None:
        self._seen: dict[str, tuple[float, float]] = {}

    def observe(self, leases: Iterable[NodeLease], now: float) -> list[NodeLease]:
        """The leases with ``renewed`` replaced by the local time their renewTime last changed."""
        observed: list[NodeLease] = []
        current: dict[str, tuple[float, float]] = {}
        for lease in leases:
            previous = self._seen.get(lease.node)
            at = previous[1] if previous is not None and previous[0] == lease.renewed else now
            current[lease.node] = (lease.renewed, at)
            observed.append(NodeLease(lease.node, at))
        self._seen = current
        return observed


def with_leases(records: Iterable[NodeRecord], leases: Iterable[NodeLease]) -> tuple[Node, ...]:
    """The nodes with their Lease's renewTime; a node without a Lease keeps None."""
    renewed = {lease.node: lease.renewed for lease in leases}
    return tuple(
        replace(r.node, lease_renewed=renewed[r.node.name]) if r.node.name in renewed else r.node
        for r in records
    )


def pools_from_nodes(records: Iterable[NodeRecord]) -> tuple[NodePool, ...]:
    """One pool per node-pool label; a slice's expected size is chips(topology) / chips per VM."""
    by_pool: dict[str, NodeRecord] = {}
    for r in records:
        first = by_pool.get(r.node.pool)
        if first is None or r.node.name < first.node.name:
            by_pool[r.node.pool] = r
    pools = []
    for name in sorted(by_pool):
        r = by_pool[name]
        chips = topology_chips(r.topology)
        expected = max(1, chips // r.chips_per_node) if chips and r.chips_per_node else 1
        pools.append(
            NodePool(name=name, topology=r.topology, expected_nodes=expected, accelerator=r.accelerator)
        )
    return tuple(pools)


def _requests_tpu(spec: JSON) -> bool:
    for group in ("containers", "initContainers"):
        for c in spec.get(group) or ():
            res = c.get("resources") or {}
            for section in ("requests", "limits"):
                value = (res.get(section) or {}).get(k.TPU_RESOURCE)
                if value not in (None, "0", 0):
                    return True
    return False


def pod_from_api(obj: JSON) -> Pod:
    meta = _meta(obj)
    labels = _strs(meta.get("labels"))
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    ns = str(meta.get("namespace", ""))
    jobset_name = labels.get(k.JOBSET_NAME_LABEL)
    job = labels.get(k.JOB_NAME_LABEL) or labels.get(k.LEGACY_JOB_NAME_LABEL) or ""
    if not job:
        for ref in meta.get("ownerReferences") or ():
            if ref.get("kind") == "Job":
                job = str(ref.get("name", ""))
    unschedulable_since = None
    for c in status.get("conditions") or ():
        if (
            c.get("type") == "PodScheduled"
            and c.get("status") == "False"
            and c.get("reason") == "Unschedulable"
        ):
            unschedulable_since = parse_time(c.get("lastTransitionTime"))
    return Pod(
        namespace=ns,
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        jobset=f"{ns}/{jobset_name}" if jobset_name else None,
        job=job,
        node=spec.get("nodeName") or None,
        phase=str(status.get("phase") or "Pending"),
        priority=int(spec.get("priority") or 0),
        deletion_timestamp=parse_time(meta.get("deletionTimestamp")),
        nominated_node=status.get("nominatedNodeName") or None,
        unschedulable_since=unschedulable_since,
        gated=bool(spec.get("schedulingGates")),
        uses_accelerator=_requests_tpu(spec),
        created=parse_time(meta.get("creationTimestamp")) or 0.0,
        started=parse_time(status.get("startTime")),
    )


def _ignores_disruptions(spec: JSON) -> bool:
    """DisruptionTarget -> FailJob in the Job template and PodFailurePolicy ->
    RestartJobSetAndIgnoreMaxRestarts in the JobSet (JobSet's host-maintenance example)."""
    rules = (spec.get("failurePolicy") or {}).get("rules") or ()
    ignoring = [r for r in rules if r.get("action") == "RestartJobSetAndIgnoreMaxRestarts"]
    if any(not r.get("onJobFailureReasons") for r in ignoring):
        return True
    if not any("PodFailurePolicy" in (r.get("onJobFailureReasons") or ()) for r in ignoring):
        return False
    for rj in spec.get("replicatedJobs") or ():
        job_spec = (rj.get("template") or {}).get("spec") or {}
        for rule in (job_spec.get("podFailurePolicy") or {}).get("rules") or ():
            conds = rule.get("onPodConditions") or ()
            if rule.get("action") == "FailJob" and any(c.get("type") == "DisruptionTarget" for c in conds):
                return True
    return False


def jobset_from_api(obj: JSON) -> JobSet:
    """The JobSet as declared; priority and run start are filled from its pods by :func:`with_pods`."""
    meta = _meta(obj)
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    annotations = _strs(meta.get("annotations"))
    topology, accelerator, slices, priority = "", "tpu-v6e-slice", 0, 0
    for rj in spec.get("replicatedJobs") or ():
        pod_spec = (((rj.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
        selector = pod_spec.get("nodeSelector") or {}
        if k.TPU_TOPOLOGY_LABEL in selector:
            topology = topology or str(selector[k.TPU_TOPOLOGY_LABEL])
            accelerator = str(selector.get(k.TPU_ACCELERATOR_LABEL, accelerator))
            slices += int(rj.get("replicas", 1) or 1)
            priority = max(priority, int(pod_spec.get("priority") or 0))
    policy = spec.get("failurePolicy") or {}
    interval = annotations.get(k.CHECKPOINT_INTERVAL_ANNOTATION)
    try:
        checkpoint_interval = float(interval) if interval else None
    except ValueError:
        checkpoint_interval = None
    return JobSet(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        priority=priority,
        topology=topology,
        slices=max(slices, 1),
        accelerator=accelerator,
        labels=_strs(meta.get("labels")),
        annotations=annotations,
        restart_strategy=str(policy.get("restartStrategy") or "Recreate"),
        max_restarts=int(policy.get("maxRestarts") or 0),
        restarts=int(status.get("restartsCountTowardsMax", status.get("restarts", 0)) or 0),
        disruption_ignores_max_restarts=_ignores_disruptions(spec),
        suspended=bool(spec.get("suspend", False)),
        finished=bool(status.get("terminalState")) or meta.get("deletionTimestamp") is not None,
        created=parse_time(meta.get("creationTimestamp")) or 0.0,
        last_checkpoint=parse_time(annotations.get(k.LAST_CHECKPOINT_ANNOTATION)),
        checkpoint_interval=checkpoint_interval,
    )


def with_pods(js: JobSet, pods: Iterable[Pod]) -> JobSet:
    """Priority as kube-scheduler sees it (the pods' resolved priority) and the current run's start."""
    priority = None
    running_since = None
    for p in pods:
        priority = p.priority if priority is None else max(priority, p.priority)
        if p.phase == "Running" and not p.terminating and p.started is not None:
            running_since = p.started if running_since is None else min(running_since, p.started)
    if priority is None and running_since is None:
        return js
    return replace(js, priority=js.priority if priority is None else priority, running_since=running_since)
