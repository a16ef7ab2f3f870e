"""The status model: what ``tpu-platform status`` reports, built by pure functions from fetched objects.

Every input is the JSON the Kubernetes API returns (``kubernetes`` client 37.0.2 with
``_preload_content=False``), so the same code runs on a live cluster and on test fixtures.

Sources, as upstream defines them:

- pools: GKE's node labels (``cloud.google.com/gke-nodepool``, ``gke-tpu-topology``) and the
  hotswap controller's taint and ``tpu-platform.dev/`` annotations
  (:mod:`tpu_platform.hotswap.core.constants`, ``tpu_platform/hotswap/README.md``);
- queues: ClusterQueue ``.spec.resourceGroups`` and ``.status`` (``flavorsUsage``,
  ``flavorsReservation``, ``admittedWorkloads``, ``pendingWorkloads``) of ``kueue.x-k8s.io/v1beta2``
  (kubernetes-sigs/kueue v0.19.2 ``config/components/crd/bases/kueue.x-k8s.io_clusterqueues.yaml``);
- pending workloads: Kueue's visibility API ``visibility.kueue.x-k8s.io/v1beta2``
  ``clusterqueues/{name}/pendingworkloads`` (kueue v0.19.2 ``pkg/visibility/storage/storage.go``,
  ``apis/visibility/v1beta2/types.go``; on by default through the Beta ``VisibilityOnDemand`` gate,
  ``pkg/features/kube_features.go``), else Workload objects without a ``QuotaReserved`` condition;
- JobSets: the managed ones (label ``tpu-platform.dev/hotswap: enabled``), their pods' nodes, JobSet's
  ``status.restarts`` (jobset v0.12.0 ``api/jobset/v1alpha2/jobset_types.go``) and the controller's
  preemption record annotations;
- the controller: its leader Lease (``coordination.k8s.io/v1``) and the ``events.k8s.io/v1`` Events
  whose ``reportingController`` is ``tpu-platform.dev/hotswap``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..constants import HOTSWAP_REPORTING_CONTROLLER, LABEL_INSTANCE_TYPE
from ..hotswap.core import constants as k
from ..hotswap.core.times import parse_time
from ..hotswap.formats.quantity import parse_quantity
from ..kueue.entitlements import GRANTS_ANNOTATION, TEAMS_ANNOTATION, parse_grants, parse_teams
from .fleet import WorkerView, worker_views

JSON = dict[str, Any]

CONTROLLER_NAME = HOTSWAP_REPORTING_CONTROLLER
"""``reportingController`` of the controller's Events (``tpu_platform/hotswap/adapter/applier.py``)."""
DECISION_WINDOW_SECONDS = 3600.0


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return _meta(obj).get("labels") or {}


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return _meta(obj).get("annotations") or {}


def _created(obj: Mapping[str, Any]) -> float | None:
    return parse_time(_meta(obj).get("creationTimestamp"))


def _key(obj: Mapping[str, Any]) -> str:
    meta = _meta(obj)
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def quantity(value: Any) -> float:
    """A Kubernetes quantity as a number (TPU chips are whole numbers; any suffix the API server
    takes), ``QuantityError`` for anything else; surrounding whitespace is dropped as JSON decoding does."""
    if isinstance(value, int | float):
        return float(value)
    return float(parse_quantity(str(value or "0").strip()))


# --- pools ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PoolView:
    name: str
    topology: str
    nodes: int
    ready: int
    expected: int | None
    """VMs of a slice of this topology (``tpu_platform.catalog``); None for an unknown shape."""
    state: str
    """healthy, suspect, unhealthy or recovering: the controller's view, from its taint and annotations."""
    since: float | None
    reason: str


def _ready(node: Mapping[str, Any]) -> tuple[bool, float | None]:
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True", parse_time(cond.get("lastTransitionTime"))
    return False, None


def _has_own_taint(node: Mapping[str, Any]) -> bool:
    return any(t.get("key") == k.UNHEALTHY_TAINT_KEY for t in (node.get("spec") or {}).get("taints") or [])


def _expected_vms(topology: str, nodes: Sequence[Mapping[str, Any]]) -> int | None:
    from ..catalog import UnsupportedSliceError, lookup

    try:
        shapes = (
            [lookup(topology, multi) for multi in (False, True)] if topology == "2x4" else [lookup(topology)]
        )
    except UnsupportedSliceError:
        return None
    if len(shapes) == 1:
        return shapes[0].vms
    # 2x4 exists as one -8t VM or two -4t VMs: the machine type tells them apart.
    machine = next((_labels(n).get(LABEL_INSTANCE_TYPE, "") for n in nodes), "")
    return 1 if machine.endswith("-8t") else 2


def pool_view(name: str, nodes: Sequence[Mapping[str, Any]]) -> PoolView:
    """One slice pool: its shape, Ready nodes and the controller's state for it.

    The state follows the controller's contract: the taint ``tpu-platform.dev/unhealthy-pool`` with
    ``unhealthy-since`` means declared unhealthy, and ``clean-since`` on a declared pool means its
    recovery clock runs; without the taint, ``suspect-since`` or a node not Ready means suspect.
    """
    topology = next((_labels(n).get(k.TPU_TOPOLOGY_LABEL, "") for n in nodes), "")
    readiness = [_ready(n) for n in nodes]
    ready = sum(1 for ok, _ in readiness if ok)
    expected = _expected_vms(topology, nodes)
    notes = [_annotations(n) for n in nodes]

    def first(key: str) -> float | None:
        times = [t for t in (parse_time(a.get(key)) for a in notes) if t is not None]
        return min(times) if times else None

    reason = next(
        (a[k.UNHEALTHY_REASON_ANNOTATION] for a in notes if a.get(k.UNHEALTHY_REASON_ANNOTATION)), ""
    )
    if any(_has_own_taint(n) for n in nodes):
        clean = first(k.CLEAN_SINCE_ANNOTATION)
        if clean is not None:
            return PoolView(name, topology, len(nodes), ready, expected, "recovering", clean, reason)
        return PoolView(
            name,
            topology,
            len(nodes),
            ready,
            expected,
            "unhealthy",
            first(k.UNHEALTHY_SINCE_ANNOTATION),
            reason,
        )
    not_ready = [t for ok, t in readiness if not ok]
    suspect = first(k.SUSPECT_SINCE_ANNOTATION)
    if suspect is not None or not_ready or (expected is not None and len(nodes) < expected):
        times = [t for t in [suspect, *not_ready] if t is not None]
        why = f"{len(not_ready)} node(s) not Ready" if not_ready else ""
        if expected is not None and len(nodes) < expected:
            why = "; ".join(filter(None, [why, f"{len(nodes)} of {expected} nodes present"]))
        return PoolView(
            name, topology, len(nodes), ready, expected, "suspect", min(times) if times else None, why
        )
    return PoolView(name, topology, len(nodes), ready, expected, "healthy", None, "")


def pool_views(nodes: Iterable[Mapping[str, Any]]) -> list[PoolView]:
    """Every TPU node pool (nodes with a TPU topology label), by name."""
    by_pool: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for node in nodes:
        labels = _labels(node)
        if labels.get(k.TPU_TOPOLOGY_LABEL) and labels.get(k.NODEPOOL_LABEL):
            by_pool[labels[k.NODEPOOL_LABEL]].append(node)
    return [pool_view(name, by_pool[name]) for name in sorted(by_pool)]


# --- queues -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FlavorUsage:
    flavor: str
    resource: str
    nominal: float
    borrowing_limit: float | None
    used: float
    borrowed: float
    reserved: float


@dataclass(frozen=True)
class WorkloadView:
    namespace: str
    name: str
    queue: str
    priority: int
    waiting_seconds: float | None
    """Since creation for pending workloads; None for admitted ones."""
    position: int | None = None
    """Position in the ClusterQueue (visibility API only)."""


@dataclass(frozen=True)
class QueueView:
    name: str
    cohort: str
    flavors: list[FlavorUsage]
    admitted: int
    pending: int
    pending_source: str
    """``visibility`` (Kueue's visibility API) or ``workloads`` (Workload objects)."""
    pending_workloads: list[WorkloadView]
    admitted_workloads: list[WorkloadView]


def _resource_totals(entries: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], tuple[float, float]]:
    out: dict[tuple[str, str], tuple[float, float]] = {}
    for flavor in entries or []:
        for res in flavor.get("resources") or []:
            out[(str(flavor.get("name")), str(res.get("name")))] = (
                quantity(res.get("total")),
                quantity(res.get("borrowed")),
            )
    return out


def _conditions(obj: Mapping[str, Any]) -> dict[str, str]:
    return {c.get("type", ""): c.get("status", "") for c in (obj.get("status") or {}).get("conditions") or []}


def workload_queue(wl: Mapping[str, Any], local_queues: Mapping[str, str]) -> str:
    """The ClusterQueue of a Workload: its admission, else its LocalQueue's ``spec.clusterQueue``."""
    admission = (wl.get("status") or {}).get("admission") or {}
    if admission.get("clusterQueue"):
        return str(admission["clusterQueue"])
    ns = _meta(wl).get("namespace", "")
    return local_queues.get(f"{ns}/{(wl.get('spec') or {}).get('queueName', '')}", "")


def queue_views(
    cluster_queues: Iterable[Mapping[str, Any]],
    local_queues: Iterable[Mapping[str, Any]],
    workloads: Iterable[Mapping[str, Any]],
    visible_pending: Mapping[str, Sequence[Mapping[str, Any]]],
    now: float,
) -> list[QueueView]:
    """Per ClusterQueue: quota and use per flavor, admitted and pending workloads.

    ``visible_pending`` maps a ClusterQueue to the visibility API's ``PendingWorkloadsSummary.items``;
    queues missing from it fall back to Workload objects that hold no quota reservation (Kueue's
    ``QuotaReserved`` condition), sorted by priority then age as Kueue's queue orders them.
    """
    lq_to_cq = {_key(lq): str((lq.get("spec") or {}).get("clusterQueue", "")) for lq in local_queues}
    admitted_by: dict[str, list[WorkloadView]] = defaultdict(list)
    pending_by: dict[str, list[WorkloadView]] = defaultdict(list)
    for wl in workloads:
        spec = wl.get("spec") or {}
        conds = _conditions(wl)
        if conds.get("Finished") == "True":
            continue
        cq = workload_queue(wl, lq_to_cq)
        meta = _meta(wl)
        created = _created(wl)
        view = WorkloadView(
            meta.get("namespace", ""),
            meta.get("name", ""),
            str(spec.get("queueName", "")),
            int(spec.get("priority") or 0),
            None,
        )
        if conds.get("Admitted") == "True":
            admitted_by[cq].append(view)
        elif conds.get("QuotaReserved") != "True" and spec.get("active", True) is not False:
            waited = None if created is None else max(0.0, now - created)
            pending_by[cq].append(WorkloadView(view.namespace, view.name, view.queue, view.priority, waited))
    out = []
    for queue in sorted(cluster_queues, key=lambda o: str(_meta(o).get("name", ""))):
        name = str(_meta(queue).get("name", ""))
        spec = queue.get("spec") or {}
        status = queue.get("status") or {}
        usage = _resource_totals(status.get("flavorsUsage") or [])
        reservation = _resource_totals(status.get("flavorsReservation") or [])
        flavors = []
        for group in spec.get("resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                for res in flavor.get("resources") or []:
                    key = (str(flavor.get("name")), str(res.get("name")))
                    used, borrowed = usage.get(key, (0.0, 0.0))
                    limit = res.get("borrowingLimit")
                    flavors.append(
                        FlavorUsage(
                            key[0],
                            key[1],
                            quantity(res.get("nominalQuota")),
                            None if limit is None else quantity(limit),
                            used,
                            borrowed,
                            reservation.get(key, (0.0, 0.0))[0],
                        )
                    )
        if name in visible_pending:
            source = "visibility"
            pending = [
                WorkloadView(
                    str(_meta(item).get("namespace", "")),
                    str(_meta(item).get("name", "")),
                    str(item.get("localQueueName", "")),
                    int(item.get("priority") or 0),
                    None if _created(item) is None else max(0.0, now - (_created(item) or now)),
                    int(item["positionInClusterQueue"]) if "positionInClusterQueue" in item else None,
                )
                for item in visible_pending[name]
            ]
        else:
            source = "workloads"
            pending = sorted(
                pending_by.get(name, []), key=lambda w: (-w.priority, -(w.waiting_seconds or 0.0), w.name)
            )
        out.append(
            QueueView(
                name,
                str(spec.get("cohortName", "")),
                flavors,
                int(status.get("admittedWorkloads") or 0),
                int(status.get("pendingWorkloads") or 0),
                source,
                pending,
                sorted(admitted_by.get(name, []), key=lambda w: (-w.priority, w.namespace, w.name)),
            )
        )
    return out


# --- JobSets ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class JobSetView:
    namespace: str
    name: str
    pools: list[str]
    restarts: int
    state: str
    last_preemption: float | None
    preemption_reason: str
    preempted_for: str


def _jobset_state(js: Mapping[str, Any]) -> str:
    conds = _conditions(js)
    for cond in ("Completed", "Failed", "Suspended"):
        if conds.get(cond) == "True":
            return cond.lower()
    if (js.get("spec") or {}).get("suspend"):
        return "suspended"
    return "active"


def jobset_views(
    jobsets: Iterable[Mapping[str, Any]],
    pods: Iterable[Mapping[str, Any]],
    nodes: Iterable[Mapping[str, Any]],
) -> list[JobSetView]:
    """Managed JobSets (the hotswap opt-in label): the pools their pods run on, restarts, preemptions."""
    pool_of = {str(_meta(n).get("name")): _labels(n).get(k.NODEPOOL_LABEL, "") for n in nodes}
    pools: dict[str, set[str]] = defaultdict(set)
    for pod in pods:
        owner = _labels(pod).get(k.JOBSET_NAME_LABEL)
        node = (pod.get("spec") or {}).get("nodeName")
        phase = (pod.get("status") or {}).get("phase")
        if owner and node and phase in ("Pending", "Running") and not _meta(pod).get("deletionTimestamp"):
            pool = pool_of.get(str(node), "")
            if pool:
                pools[f"{_meta(pod).get('namespace', '')}/{owner}"].add(pool)
    out = []
    for js in jobsets:
        if _labels(js).get(k.OPT_IN_LABEL) != k.OPT_IN_VALUE:
            continue
        notes = _annotations(js)
        meta = _meta(js)
        out.append(
            JobSetView(
                str(meta.get("namespace", "")),
                str(meta.get("name", "")),
                sorted(pools.get(_key(js), set())),
                int((js.get("status") or {}).get("restarts") or 0),
                _jobset_state(js),
                parse_time(notes.get(k.PREEMPTED_AT_ANNOTATION)),
                notes.get(k.PREEMPTION_REASON_ANNOTATION, ""),
                notes.get(k.PREEMPTED_FOR_ANNOTATION, ""),
            )
        )
    return sorted(out, key=lambda v: (v.namespace, v.name))


# --- the controller ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Decision:
    time: float | None
    kind: str
    object: str
    reason: str
    note: str
    type: str


@dataclass(frozen=True)
class ControllerView:
    lease: str
    leader: str
    """Holder of a Lease that has not expired; empty when no replica leads."""
    lease_renewed: float | None
    last_decision: float | None
    """Time of its newest Event: the controller records every applied decision as one. It exposes no
    reconcile clock to the API (reconciles that change nothing write nothing); ``hotswap_reconciles``
    on its metrics endpoint counts them."""
    decisions_last_hour: int
    decisions_by_reason: dict[str, int]
    recent: list[Decision]


def _event_time(ev: Mapping[str, Any]) -> float | None:
    series = ev.get("series") or {}
    return parse_time(series.get("lastObservedTime")) or parse_time(ev.get("eventTime")) or _created(ev)


def controller_view(
    lease: Mapping[str, Any] | None, lease_ref: str, events: Iterable[Mapping[str, Any]], now: float
) -> ControllerView:
    """Who leads (an unexpired Lease holder), when it last renewed, what it decided in the last hour."""
    spec = (lease or {}).get("spec") or {}
    renewed = parse_time(spec.get("renewTime"))
    holder = str(spec.get("holderIdentity") or "")
    duration = float(spec.get("leaseDurationSeconds") or 0)
    leader = holder if holder and renewed is not None and now < renewed + duration else ""
    recent = []
    for ev in events:
        if ev.get("reportingController") != CONTROLLER_NAME:
            continue
        t = _event_time(ev)
        if t is None or now - t > DECISION_WINDOW_SECONDS:
            continue
        reg = ev.get("regarding") or {}
        obj = "/".join(filter(None, [str(reg.get("namespace", "")), str(reg.get("name", ""))]))
        recent.append(
            Decision(
                t,
                str(reg.get("kind", "")),
                obj,
                str(ev.get("reason", "")),
                str(ev.get("note", "")),
                str(ev.get("type", "")),
            )
        )
    recent.sort(key=lambda d: (-(d.time or 0.0), d.object, d.reason))
    counts = Counter(d.reason for d in recent)
    last = recent[0].time if recent else None
    return ControllerView(lease_ref, leader, renewed, last, len(recent), dict(sorted(counts.items())), recent)


# --- everything ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ClusterObjects:
    """What the fetcher read; ``visible_pending`` holds the visibility API's answer per ClusterQueue."""

    nodes: list[JSON] = field(default_factory=list)
    pods: list[JSON] = field(default_factory=list)
    jobsets: list[JSON] = field(default_factory=list)
    cluster_queues: list[JSON] = field(default_factory=list)
    local_queues: list[JSON] = field(default_factory=list)
    workloads: list[JSON] = field(default_factory=list)
    visible_pending: dict[str, list[JSON]] = field(default_factory=dict)
    lease: JSON | None = None
    lease_ref: str = ""
    events: list[JSON] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What could not be read, and why (a missing CRD, a forbidden list)."""
    multikueue_clusters: list[JSON] = field(default_factory=list)
    """A fleet's manager: its MultiKueueClusters (none on a single cluster or a worker)."""
    entitlement_policy: JSON | None = None
    """The priority entitlement admission policy, absent where every namespace may use every priority."""


@dataclass(frozen=True)
class PlatformStatus:
    now: float
    pools: list[PoolView]
    queues: list[QueueView]
    jobsets: list[JobSetView]
    controller: ControllerView
    notes: list[str]
    fleet: list[WorkerView] = field(default_factory=list)
    entitlements: list[EntitlementView] | None = None
    """Per team namespace, then every other one (``*``), the priorities it may use; None: no policy."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def build_status(objects: ClusterObjects, now: float) -> PlatformStatus:
    """The whole picture from fetched objects: pure, so tests pin it without a cluster."""
    return PlatformStatus(
        now,
        pool_views(objects.nodes),
        queue_views(
            objects.cluster_queues, objects.local_queues, objects.workloads, objects.visible_pending, now
        ),
        jobset_views(objects.jobsets, objects.pods, objects.nodes),
        controller_view(objects.lease, objects.lease_ref, objects.events, now),
        list(objects.notes),
        worker_views(objects.multikueue_clusters, objects.workloads),
        entitlement_view(objects.entitlement_policy),
    )


@dataclass(frozen=True)
class EntitlementView:
    namespace: str
    """``*`` for every namespace of no team."""
    team: str | None
    priorities: list[str]


def entitlement_view(policy: JSON | None) -> list[EntitlementView] | None:
    """What the platform's admission policy lets each namespace use, from the grants it carries."""
    if policy is None:
        return None
    grants = parse_grants(_annotations(policy).get(GRANTS_ANNOTATION, ""))
    teams = parse_teams(_annotations(policy).get(TEAMS_ANNOTATION, ""))
    ordered = sorted(grants.items(), key=lambda item: (item[0] == "*", item[0]))
    return [EntitlementView(ns, teams.get(ns), list(names)) for ns, names in ordered]
