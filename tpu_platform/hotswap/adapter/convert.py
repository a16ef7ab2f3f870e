"""Raw API objects (dicts) -> the core's snapshot types. Pure functions that never raise.

A wrong type reads as empty and a missing field takes its default. Values a tenant can write are
parsed within bounds by :mod:`tpu_platform.hotswap.core.screening`: a refused value marks the object with
a :class:`~tpu_platform.hotswap.core.model.Rejection`, so the core leaves it alone and the adapter
reports it, instead of one object stopping every decision. The links of the JobSet -> Job -> Pod
ownership chain are read here too; the core decides membership from them. Design notes:
docs/hotswap-adapter.md, "convert".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from tpu_platform.hotswap.adapter.client import JOBSET_GROUP, JOBSET_VERSION
from tpu_platform.hotswap.adapter.compute_engine import parse_provider_id
from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core import screening as inputs
from tpu_platform.hotswap.core.model import (
    ChildJob,
    Condition,
    JobSet,
    Node,
    NodePool,
    Pod,
    Rejection,
    Taint,
    Termination,
    topology_chips,
)
from tpu_platform.hotswap.core.screening import InputError
from tpu_platform.hotswap.core.times import parse_time
from tpu_platform.hotswap.core.workload_signals import MAX_MESSAGE_CHARS, MAX_REASON_CHARS, MAX_TERMINATIONS

JSON = Mapping[str, Any]
_INSTANCE_CHIPS = re.compile(r"-(\d{1,3})t$")
MAX_CHIPS_PER_NODE = 64
JOB_API_VERSION = "batch/v1"
"""The Job controller's owner reference on a pod: kind ``Job`` of ``batch/v1``."""
JOBSET_API_VERSION = f"{JOBSET_GROUP}/{JOBSET_VERSION}"
"""The JobSet controller's owner reference on a Job: kind ``JobSet`` of this version."""
MAX_CHILD_JOBS = 4096
"""Child Job names kept per JobSet: far beyond a TPU JobSet's replicas, bounded against a hostile
replica count."""
_MAX_NAME = 253


# --- total accessors: a wrong type reads as empty, nothing raises ---------------------------------
def _map(value: Any) -> JSON:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else []


def _maps(value: Any) -> list[JSON]:
    return [v for v in _list(value) if isinstance(v, Mapping)]


def _str(value: Any, default: str = "") -> str:
    return value if isinstance(value, str) else default


def _time(value: Any) -> float | None:
    return parse_time(value) if isinstance(value, str) else None


def _meta(obj: JSON) -> JSON:
    return _map(obj.get("metadata")) if isinstance(obj, Mapping) else {}


def _strs(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        return {}
    return {str(key): str(v) for key, v in value.items()}


def object_key(obj: JSON) -> str:
    meta = _meta(obj)
    ns = _str(meta.get("namespace"))
    name = _str(meta.get("name"))
    return f"{ns}/{name}" if ns else name


@dataclass(frozen=True, slots=True)
class NodeRecord:
    """A node plus what the pool inventory is derived from."""

    node: Node
    topology: str
    accelerator: str
    chips_per_node: int


def _chips_per_node(obj: JSON, labels: Mapping[str, str]) -> int:
    status = _map(obj.get("status"))
    for section in ("capacity", "allocatable"):
        value = _map(status.get(section)).get(k.TPU_RESOURCE)
        try:
            return inputs.integer(value, reason="chips", low=1, high=MAX_CHIPS_PER_NODE)
        except InputError:
            continue
    m = _INSTANCE_CHIPS.search(labels.get("node.kubernetes.io/instance-type", ""))
    return int(m.group(1)) if m and 0 < int(m.group(1)) <= MAX_CHIPS_PER_NODE else 4


def _provider_id(value: Any) -> str:
    """The node's VM as ``gce://PROJECT/ZONE/INSTANCE``, re-rendered from its validated parts; ""
    for anything else. Nodes are written by the kubelet and GKE, not tenants, but the string still
    names what the controller asks Compute Engine about, so it is checked like any input."""
    ref = parse_provider_id(value)
    return f"gce://{ref.project}/{ref.zone}/{ref.instance}" if ref is not None else ""


def _tpu_count(status: JSON, section: str) -> int | None:
    """``status.<section>["google.com/tpu"]`` as a bounded count; None if absent or malformed."""
    value = _map(status.get(section)).get(k.TPU_RESOURCE)
    if value is None:
        return None
    try:
        return inputs.integer(value, reason="chips", low=0, high=MAX_CHIPS_PER_NODE)
    except InputError:
        return None


def node_from_api(obj: JSON) -> NodeRecord | None:
    """None for nodes that belong to no TPU node pool."""
    meta = _meta(obj)
    labels = _strs(meta.get("labels"))
    pool = labels.get(k.NODEPOOL_LABEL)
    accelerator = labels.get(k.TPU_ACCELERATOR_LABEL)
    if not pool or not accelerator:
        return None
    spec = _map(obj.get("spec"))
    status = _map(obj.get("status"))
    taints = tuple(
        Taint(
            key=_str(t.get("key")),
            effect=_str(t.get("effect")),
            value=_str(t.get("value")),
            time_added=_time(t.get("timeAdded")),
        )
        for t in _maps(spec.get("taints"))
    )
    conditions = tuple(
        Condition(
            type=_str(c.get("type")),
            status=_str(c.get("status"), "Unknown"),
            last_transition=_time(c.get("lastTransitionTime")) or 0.0,
            reason=_str(c.get("reason")),
        )
        for c in _maps(status.get("conditions"))
    )
    node = Node(
        name=_str(meta.get("name")),
        pool=pool,
        conditions=conditions,
        taints=taints,
        labels=labels,
        annotations=_strs(meta.get("annotations")),
        unschedulable=spec.get("unschedulable") is True,
        created=_time(meta.get("creationTimestamp")) or 0.0,
        uid=_str(meta.get("uid")),
        resource_version=_str(meta.get("resourceVersion")),
        provider_id=_provider_id(spec.get("providerID")),
        tpu_capacity=_tpu_count(status, "capacity"),
        tpu_allocatable=_tpu_count(status, "allocatable"),
    )
    return NodeRecord(node, labels.get(k.TPU_TOPOLOGY_LABEL, ""), accelerator, _chips_per_node(obj, labels))


@dataclass(frozen=True, slots=True)
class NodeLease:
    """A node's heartbeat: the kubelet renews the Lease named after its node."""

    node: str
    renewed: float


def lease_from_api(obj: JSON) -> NodeLease | None:
    """None for a Lease without ``spec.renewTime``: no heartbeat known, so no signal from it."""
    renewed = _time(_map(obj.get("spec")).get("renewTime"))
    name = _str(_meta(obj).get("name"))
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
        for c in _maps(spec.get(group)):
            res = _map(c.get("resources"))
            for section in ("requests", "limits"):
                value = _map(res.get(section)).get(k.TPU_RESOURCE)
                if value not in (None, "0", 0):
                    return True
    return False


def _grace(value: Any) -> float | None:
    """``deletionGracePeriodSeconds`` (int64, set by the API server with ``deletionTimestamp``)."""
    try:
        seconds = inputs.integer(value, reason="grace", low=0, high=inputs.INT32_MAX, default=-1)
    except InputError:
        return None
    return float(seconds) if seconds >= 0 else None


def _terminations(status: JSON) -> tuple[Termination, ...]:
    """Failed containers: ``state.terminated`` (a pod that ended) or ``lastState.terminated`` (a
    container that restarted) with a non-zero exit code, within bounds: the first MAX_TERMINATIONS
    container statuses, exit codes within int32, reason and message cut to their bounds (the kubelet
    caps a message at 4096 bytes), a container name of at most 253 characters."""
    out: list[Termination] = []
    for cs in _maps(status.get("containerStatuses"))[:MAX_TERMINATIONS]:
        name = _str(cs.get("name"))[:253]
        for section in ("state", "lastState"):
            term = _map(_map(cs.get(section)).get("terminated"))
            if not term:
                continue
            try:
                code = inputs.integer(
                    term.get("exitCode"), reason="exit-code", low=inputs.INT32_MIN, high=inputs.INT32_MAX
                )
            except InputError:
                continue
            if code == 0:
                continue
            out.append(
                Termination(
                    container=name,
                    exit_code=code,
                    reason=_str(term.get("reason"))[:MAX_REASON_CHARS],
                    message=_str(term.get("message"))[:MAX_MESSAGE_CHARS],
                    finished=_time(term.get("finishedAt")),
                )
            )
            break
    return tuple(out[:MAX_TERMINATIONS])


# --- ownership links: JobSet -> Job -> Pod --------------------------------------------------------
def controller_ref(meta: JSON, kind: str, api_version: str) -> tuple[str, str]:
    """(name, UID) of the controller owner reference of ``kind`` and ``api_version``, or ('', '').
    At most one reference is the controller (the API server refuses a second: apimachinery v0.34
    ``pkg/api/validation/objectmeta.go``, "Only one reference can have Controller set to true")."""
    for ref in _maps(meta.get("ownerReferences")):
        if ref.get("controller") is True and ref.get("kind") == kind and ref.get("apiVersion") == api_version:
            name, uid = _str(ref.get("name")), _str(ref.get("uid"))
            if 0 < len(name) <= _MAX_NAME and 0 < len(uid) <= _MAX_NAME:
                return name, uid
    return "", ""


def child_job_names(jobset: str, spec: JSON) -> frozenset[str]:
    """The Jobs the JobSet controller creates: for each replicated Job ``r`` and index ``i`` below
    its replicas (default 1), ``<jobset>-<r>-<i>`` (JobSet v0.12.0 ``pkg/util/placement/placement.go``,
    ``GenJobName``; ``pkg/controllers/jobset_controller.go``, ``constructJobsFromTemplate``: one per
    ``jobIdx < rjob.Replicas``)."""
    names: list[str] = []
    for rj in _maps(spec.get("replicatedJobs")):
        rj_name = _str(rj.get("name"))
        if not rj_name:
            continue
        try:
            replicas = inputs.integer(
                rj.get("replicas"), reason="replicas", low=0, high=MAX_CHILD_JOBS, default=1
            )
        except InputError:
            continue
        for i in range(min(replicas, MAX_CHILD_JOBS - len(names))):
            names.append(f"{jobset}-{rj_name}-{i}")
    return frozenset(names)


def job_from_api(obj: JSON) -> ChildJob:
    """A Job and the JobSet that controls it (('', '') when none does)."""
    meta = _meta(obj)
    jobset, jobset_uid = controller_ref(meta, "JobSet", JOBSET_API_VERSION)
    return ChildJob(
        namespace=_str(meta.get("namespace")),
        name=_str(meta.get("name")),
        uid=_str(meta.get("uid")),
        jobset=jobset,
        jobset_uid=jobset_uid,
    )


def pod_from_api(obj: JSON) -> Pod:
    """A pod and the first link of its ownership chain: the Job in its controller owner reference
    (name and UID). ``jobset`` is only the claim of JobSet's labels; the controller replaces it by
    what the chain proves (:func:`tpu_platform.hotswap.core.ownership.owned_pods`) before the core
    sees the pod."""
    meta = _meta(obj)
    labels = _strs(meta.get("labels"))
    spec = _map(obj.get("spec"))
    status = _map(obj.get("status"))
    ns = _str(meta.get("namespace"))
    name = _str(meta.get("name"))
    uid = _str(meta.get("uid"))
    owner_job, owner_job_uid = controller_ref(meta, "Job", JOB_API_VERSION)
    jobset_name = labels.get(k.JOBSET_NAME_LABEL, "")
    jobset_uid = labels.get(k.JOBSET_UID_LABEL, "")
    owned = bool(jobset_name and jobset_uid and owner_job)
    job = owner_job or labels.get(k.JOB_NAME_LABEL) or labels.get(k.LEGACY_JOB_NAME_LABEL) or ""
    unschedulable_since = None
    for c in _maps(status.get("conditions")):
        if (
            c.get("type") == "PodScheduled"
            and c.get("status") == "False"
            and c.get("reason") == "Unschedulable"
        ):
            unschedulable_since = _time(c.get("lastTransitionTime"))
    rejection = None
    try:
        priority = inputs.integer(
            spec.get("priority"), reason="priority", low=inputs.INT32_MIN, high=inputs.INT32_MAX, default=0
        )
    except InputError as err:
        priority = inputs.INT32_MAX
        rejection = Rejection("Pod", ns, name, uid, err.reason, f"spec.priority: {err.detail}")
    node = spec.get("nodeName")
    nominated = status.get("nominatedNodeName")
    return Pod(
        namespace=ns,
        name=name,
        uid=uid,
        jobset=f"{ns}/{jobset_name}" if owned and rejection is None else None,
        jobset_uid=jobset_uid if owned and rejection is None else "",
        job=job,
        job_uid=owner_job_uid,
        node=node if isinstance(node, str) and node else None,
        phase=_str(status.get("phase")) or "Pending",
        priority=priority,
        deletion_timestamp=_time(meta.get("deletionTimestamp")),
        deletion_grace=_grace(meta.get("deletionGracePeriodSeconds")),
        nominated_node=nominated if isinstance(nominated, str) and nominated else None,
        unschedulable_since=unschedulable_since,
        gated=bool(_list(spec.get("schedulingGates"))),
        uses_accelerator=_requests_tpu(spec),
        created=_time(meta.get("creationTimestamp")) or 0.0,
        started=_time(status.get("startTime")),
        rejection=rejection,
        terminations=_terminations(status),
    )


def _ignores_disruptions(spec: JSON) -> bool:
    """DisruptionTarget -> FailJob in the Job template and PodFailurePolicy ->
    RestartJobSetAndIgnoreMaxRestarts in the JobSet (JobSet's host-maintenance example)."""
    rules = _maps(_map(spec.get("failurePolicy")).get("rules"))
    ignoring = [r for r in rules if r.get("action") == "RestartJobSetAndIgnoreMaxRestarts"]
    if any(not _list(r.get("onJobFailureReasons")) for r in ignoring):
        return True
    if not any("PodFailurePolicy" in _list(r.get("onJobFailureReasons")) for r in ignoring):
        return False
    for rj in _maps(spec.get("replicatedJobs")):
        job_spec = _map(_map(rj.get("template")).get("spec"))
        for rule in _maps(_map(job_spec.get("podFailurePolicy")).get("rules")):
            conds = _maps(rule.get("onPodConditions"))
            if rule.get("action") == "FailJob" and any(c.get("type") == "DisruptionTarget" for c in conds):
                return True
    return False


def _slice_shape(spec: JSON) -> tuple[str, str, int, int]:
    """(topology, accelerator, slices, template priority) of the replicated Jobs that select a TPU
    topology; raises InputError on a malformed or out-of-bounds value."""
    topology, accelerator, slices, priority = "", "tpu-v6e-slice", 0, 0
    for rj in _maps(spec.get("replicatedJobs")):
        pod_spec = _map(_map(_map(_map(rj.get("template")).get("spec")).get("template")).get("spec"))
        selector = _map(pod_spec.get("nodeSelector"))
        if k.TPU_TOPOLOGY_LABEL not in selector:
            continue
        shape = inputs.topology(selector[k.TPU_TOPOLOGY_LABEL])
        if topology and shape != topology:
            raise InputError(
                "topology", f"replicated Jobs ask for different topologies ({topology}, {shape})"
            )
        topology = shape
        chosen = selector.get(k.TPU_ACCELERATOR_LABEL, accelerator)
        if not isinstance(chosen, str) or not 0 < len(chosen) <= 63:
            raise InputError("accelerator", f"nodeSelector {k.TPU_ACCELERATOR_LABEL} is not a label value")
        accelerator = chosen
        # JobSet v0.12.0 ReplicatedJob.Replicas: int32, +kubebuilder:default=1.
        slices += inputs.integer(
            rj.get("replicas"), reason="replicas", low=0, high=inputs.MAX_SLICES, default=1
        )
        priority = max(
            priority,
            inputs.integer(
                pod_spec.get("priority"),
                reason="priority",
                low=inputs.INT32_MIN,
                high=inputs.INT32_MAX,
                default=0,
            ),
        )
    if slices > inputs.MAX_SLICES:
        raise InputError("replicas", f"{slices} slices in total exceeds {inputs.MAX_SLICES}")
    return topology, accelerator, slices, priority


def _checkpoint(annotations: Mapping[str, str]) -> tuple[float | None, float | None]:
    """(last checkpoint, checkpoint interval) from the workload's own annotations."""
    text = annotations.get(k.LAST_CHECKPOINT_ANNOTATION)
    last = None
    if text is not None and text.strip():
        last = parse_time(text)
        if last is None:
            raise InputError(
                "last-checkpoint-time",
                f"{text[:60]!r} is not an RFC 3339 time or epoch seconds in 1970..9999",
            )
    interval_text = annotations.get(k.CHECKPOINT_INTERVAL_ANNOTATION)
    interval = None
    if interval_text is not None and interval_text.strip():
        interval = inputs.seconds(
            interval_text, reason="checkpoint-interval", high=inputs.MAX_INTERVAL_SECONDS
        )
    return last, interval


def jobset_from_api(obj: JSON) -> JobSet:
    """The JobSet as declared; priority and run start are filled from its pods by :func:`with_pods`.

    A refused value gives a JobSet carrying only its identity and the :class:`Rejection`."""
    meta = _meta(obj)
    namespace, name, uid = _str(meta.get("namespace")), _str(meta.get("name")), _str(meta.get("uid"))
    try:
        return _jobset(obj, meta, namespace, name, uid)
    except InputError as err:
        rejection = Rejection("JobSet", namespace, name, uid, err.reason, err.detail)
        return JobSet(namespace, name, uid, priority=0, topology="", rejection=rejection)


def _jobset(obj: JSON, meta: JSON, namespace: str, name: str, uid: str) -> JobSet:
    spec = _map(obj.get("spec"))
    status = _map(obj.get("status"))
    annotations = _strs(meta.get("annotations"))
    topology, accelerator, slices, priority = _slice_shape(spec)
    policy = _map(spec.get("failurePolicy"))
    last_checkpoint, checkpoint_interval = _checkpoint(annotations)
    inputs.flag(annotations.get(k.PREEMPTIBLE_ANNOTATION), reason="preemptible")
    restarts = status.get("restartsCountTowardsMax", status.get("restarts"))
    return JobSet(
        namespace=namespace,
        name=name,
        uid=uid,
        priority=priority,
        topology=topology,
        slices=max(slices, 1),
        child_jobs=child_job_names(name, spec),
        accelerator=accelerator,
        labels=_strs(meta.get("labels")),
        annotations=annotations,
        restart_strategy=_str(policy.get("restartStrategy")) or "Recreate",
        max_restarts=inputs.integer(
            policy.get("maxRestarts"), reason="max-restarts", low=0, high=inputs.MAX_RESTARTS, default=0
        ),
        restarts=inputs.integer(restarts, reason="restarts", low=0, high=inputs.MAX_RESTARTS, default=0),
        disruption_ignores_max_restarts=_ignores_disruptions(spec),
        suspended=spec.get("suspend") is True,
        finished=bool(status.get("terminalState")) or meta.get("deletionTimestamp") is not None,
        created=_time(meta.get("creationTimestamp")) or 0.0,
        last_checkpoint=last_checkpoint,
        checkpoint_interval=checkpoint_interval,
    )


def with_pods(js: JobSet, pods: Iterable[Pod]) -> JobSet:
    """Priority as kube-scheduler sees it (the pods' resolved priority) and the current run's start,
    from the pods that really are this JobSet's (same key and UID) and hold TPU chips."""
    priority = None
    running_since = None
    for p in pods:
        if p.jobset != js.key or p.jobset_uid != js.uid or not p.uses_accelerator:
            continue
        priority = p.priority if priority is None else max(priority, p.priority)
        if p.phase == "Running" and not p.terminating and p.started is not None:
            running_since = p.started if running_since is None else min(running_since, p.started)
    if priority is None and running_since is None:
        return js
    return replace(js, priority=js.priority if priority is None else priority, running_since=running_since)
