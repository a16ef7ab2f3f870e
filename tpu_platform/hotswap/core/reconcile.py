"""The decision entry point: snapshot in, ordered actions out. Pure and deterministic."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.actions import Action, EmitEvent, EvictPod, sort_actions
from tpu_platform.hotswap.core.failfast import clear_stuck, fail_fast
from tpu_platform.hotswap.core.index import ClusterIndex
from tpu_platform.hotswap.core.maintenance import MaintenancePlan, avoided_pools, plan_maintenance
from tpu_platform.hotswap.core.model import Pod, Rejection, Snapshot
from tpu_platform.hotswap.core.pool_health import (
    PoolMemory,
    PoolRecord,
    PoolState,
    PoolStatus,
    Problem,
    ProblemDetector,
    assess_pool,
    still_draining,
)
from tpu_platform.hotswap.core.preemption import Preemption, PreemptionPlan, plan_preemptions
from tpu_platform.hotswap.core.settings import Settings
from tpu_platform.hotswap.core.tenancy import (
    TenantLedger,
    restricted_tenants,
    spare_slices,
    team_of_namespace,
    tenant_key,
)
from tpu_platform.hotswap.core.vm_evidence import confirmation_problems, vm_resets
from tpu_platform.hotswap.core.workload_signals import PoolSignals, assess_pool_signals, stored_reports


@dataclass(frozen=True, slots=True)
class Decision:
    now: float
    actions: tuple[Action, ...]
    """Ordered: node patches, JobSet annotations, evictions, force deletions, events."""
    pools: tuple[PoolStatus, ...]
    """Every managed pool's state, sorted by name."""
    preemptions: tuple[Preemption, ...] = ()
    held: bool = False
    """True if the mass-outage guard suppressed all actions."""
    notes: tuple[str, ...] = ()
    """Why something was not done (for logs)."""
    memory: PoolMemory = field(default_factory=PoolMemory)
    """Pool state as these actions leave it; pass it to the next ``decide`` so that a pool whose
    nodes are all recreated keeps its declaration, recovery clock and flap history."""
    rejected: tuple[Rejection, ...] = ()
    """Objects left alone because a tenant-written value was refused, and (``value_only``) times
    refused on objects otherwise handled as usual (the adapter reports both with a warning Event and
    ``hotswap_rejected_inputs_total``)."""
    suspects: tuple[str, ...] = ()
    """Pools with workload TPU-error reports not (yet) confirmed: watched, nothing done
    (:mod:`tpu_platform.hotswap.core.workload_signals`)."""

    def pool(self, name: str) -> PoolStatus | None:
        for p in self.pools:
            if p.name == name:
                return p
        return None


def reconcile(
    snapshot: Snapshot, settings: Settings | None = None, *, memory: PoolMemory | None = None
) -> tuple[Action, ...]:
    """Shorthand for ``decide(snapshot, settings, memory=memory).actions``."""
    return decide(snapshot, settings, memory=memory).actions


def decide(
    snapshot: Snapshot, settings: Settings | None = None, *, memory: PoolMemory | None = None
) -> Decision:
    """Everything the controller should do now. Idempotent: with these actions applied (and
    ``memory=decision.memory``), no actions. Without memory, node state alone decides."""
    s = settings if settings is not None else Settings()
    previous = memory if memory is not None else PoolMemory()
    now = snapshot.now
    idx = ClusterIndex(snapshot, s)
    detector = ProblemDetector(s)
    maintenance = plan_maintenance(idx, s, now)
    problems = _node_problems(idx, detector, maintenance, s, now)
    teams = team_of_namespace(s)
    ledger = TenantLedger.read(idx.nodes_by_pool, s, now)
    health = _assess_pools(
        idx, s, now, detector=detector, problems=problems, previous=previous, teams=teams, ledger=ledger
    )
    statuses = health.statuses
    pools = tuple(statuses[name] for name in sorted(statuses))
    hold = _mass_outage(idx, problems, s)
    if hold is not None:
        # Nothing is written while held, so nothing new is remembered either.
        return Decision(
            now,
            (),
            pools,
            held=True,
            notes=(hold, *health.notes),
            memory=previous,
            rejected=tuple(idx.rejected),
            suspects=tuple(health.suspects),
        )

    actions = health.actions
    notes = health.notes
    notes.extend(maintenance.notes)
    actions.extend(maintenance.annotations)
    actions.extend(maintenance.events)
    disruptions, evictions = _disruptions(idx, statuses, s, now)
    actions.extend(disruptions)
    preemptions: tuple[Preemption, ...] = ()
    if s.preemption:
        plan = _plan_preemptions(
            idx, statuses, s, now, evictions=evictions, maintenance=maintenance, ledger=ledger, teams=teams
        )
        for e in plan.evictions:
            evictions.setdefault(e.key, e)
        actions.extend(plan.annotations)
        actions.extend(plan.events)
        preemptions = tuple(plan.preemptions)
        notes.extend(plan.notes)
    actions.extend(evictions.values())
    return Decision(
        now,
        sort_actions(actions),
        pools,
        preemptions,
        False,
        tuple(notes),
        memory=_memory_after(previous, statuses, health.records, now - s.flap_window_seconds),
        rejected=tuple(idx.rejected),
        suspects=tuple(health.suspects),
    )


def _node_problems(
    idx: ClusterIndex, detector: ProblemDetector, maintenance: MaintenancePlan, s: Settings, now: float
) -> dict[str, list[Problem]]:
    """Each node's problems: its own signals, a maintenance move that is due, a VM confirmed down."""
    problems: dict[str, list[Problem]] = {}
    for node in idx.nodes.values():
        found = detector.problems(node, now)
        if found:
            problems[node.name] = found
    for name, extra in maintenance.problems.items():
        problems.setdefault(name, []).extend(extra)
    for name, extra in confirmation_problems(idx.nodes.values(), s, now).items():
        problems.setdefault(name, []).extend(extra)
    return problems


@dataclass(slots=True)
class _PoolPass:
    """Every managed pool's state this reconcile, and the node patches and events that record it."""

    statuses: dict[str, PoolStatus] = field(default_factory=dict)
    records: dict[str, PoolRecord] = field(default_factory=dict)
    actions: list[Action] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    suspects: list[str] = field(default_factory=list)
    """Pools with unconfirmed workload TPU-error reports."""


def _assess_pools(
    idx: ClusterIndex,
    s: Settings,
    now: float,
    *,
    detector: ProblemDetector,
    problems: dict[str, list[Problem]],
    previous: PoolMemory,
    teams: Mapping[str, str],
    ledger: TenantLedger,
) -> _PoolPass:
    """Each pool's state from its node problems and workload signals, in pool-name order."""
    out = _PoolPass()
    spares = spare_slices(idx.pools, idx.nodes_by_pool, idx.pods_by_pool, problems)
    spent: set[str] = set()
    for name in sorted(idx.nodes_by_pool):
        nodes = idx.nodes_by_pool[name]
        signals, declared_by = _workload_signals(
            idx, name, s, now, problems=problems, teams=teams, ledger=ledger, spares=spares, spent=spent
        )
        workload_problem = signals.problem()
        if signals.suspect:
            out.suspects.append(name)
            out.notes.append(f"pool {name} suspect: {signals.why}")
        status, patches, record = assess_pool(
            idx.pools[name],
            nodes,
            now=now,
            settings=s,
            detector=detector,
            node_problems=problems,
            record=previous.get(name),
            pool_problems=() if workload_problem is None else (workload_problem,),
            extra_annotations={
                k.TPU_ERRORS_ANNOTATION: signals.annotation,
                k.TENANT_DECLARED_ANNOTATION: declared_by,
            },
        )
        out.statuses[name] = status
        if record is not None:
            out.records[name] = record
        out.actions.extend(patches)
        if nodes and (status.declared_now or status.recovered_now):
            out.actions.append(_pool_event(status, nodes[0].name, nodes[0].uid, now))
    return out


def _workload_signals(
    idx: ClusterIndex,
    name: str,
    s: Settings,
    now: float,
    *,
    problems: Mapping[str, Sequence[Problem]],
    teams: Mapping[str, str],
    ledger: TenantLedger,
    spares: Mapping[tuple[str, str], Sequence[str]],
    spent: set[str],
) -> tuple[PoolSignals, str | None]:
    """The pool's workload signals, and the tenant-declared value its nodes must carry. The ledger
    records the tenants whose word alone takes the pool out; ``spent`` gets the spare slice their
    restart will take."""
    nodes = idx.nodes_by_pool[name]
    shape = (idx.pools[name].accelerator, idx.pools[name].topology)
    spare = next((p for p in spares.get(shape, ()) if p != name and p not in spent), None)
    system = next((f"{n.name}: {p.reason}" for n in nodes for p in problems.get(n.name, ())), None)
    signals = assess_pool_signals(
        nodes,
        idx.reporting_by_pool.get(name, ()),
        idx.pods_by_pool.get(name, ()),
        stored=stored_reports(nodes),
        settings=s,
        now=now,
        teams=teams,
        limited=ledger.limited(name),
        system=system,
        room=True if spare is not None or ledger.tenants_on(name) else partial(_room, idx, name, teams),
    )
    if signals.tenants and not ledger.tenants_on(name) and spare is not None:
        spent.add(spare)  # the restart's slice
    if signals.confirmed and not signals.tenants:
        ledger.forget(name)  # a signal no tenant writes: nobody's word holds the pool out
    return signals, ledger.record(name, signals.tenants, now)


def _mass_outage(idx: ClusterIndex, problems: Mapping[str, object], s: Settings) -> str | None:
    """The hold note when more than ``max_bad_node_fraction`` of the managed nodes show problems."""
    total = len(idx.nodes)
    if total and len(problems) / total > s.max_bad_node_fraction:
        return (
            f"hold: {len(problems)}/{total} managed nodes show problems "
            f"(> {s.max_bad_node_fraction:.0%}); likely a control-plane or network event, not acting"
        )
    return None


def _disruptions(
    idx: ClusterIndex, statuses: Mapping[str, PoolStatus], s: Settings, now: float
) -> tuple[list[Action], dict[str, EvictPod]]:
    """Fail fast, force deletion of stuck pods and VM resets, as configured: their actions (but the
    evictions), and the evictions by pod."""
    actions: list[Action] = []
    evictions: dict[str, EvictPod] = {}
    evicted: list[Pod] = []
    if s.fail_fast:
        ff, ff_events, evicted = fail_fast(idx, statuses)
        for e in ff:
            evictions.setdefault(e.key, e)
        actions.extend(ff_events)
    if s.clear_stuck_pods:
        deletes, del_events = clear_stuck(idx, s, now, evicted)
        actions.extend(deletes)
        actions.extend(del_events)
        resets, reset_events = vm_resets(idx, statuses, s, now)
        actions.extend(resets)
        actions.extend(reset_events)
    return actions, evictions


def _plan_preemptions(
    idx: ClusterIndex,
    statuses: Mapping[str, PoolStatus],
    s: Settings,
    now: float,
    *,
    evictions: Mapping[str, EvictPod],
    maintenance: MaintenancePlan,
    ledger: TenantLedger,
    teams: Mapping[str, str],
) -> PreemptionPlan:
    """Preemptions, with the JobSets restarting now (``evictions``) and the pools out of service."""
    # Restarting: being evicted now, or with a TPU pod whose deletion is under way and not
    # overdue (pool_health.still_draining: a pod a tenant's finalizer holds does not count).
    failing = frozenset(
        {e.jobset for e in evictions.values() if e.jobset is not None}
        | {key for key, pods in idx.pods_by_jobset.items() if any(still_draining(p, now) for p in pods)}
    )
    return plan_preemptions(
        idx,
        statuses,
        s,
        now,
        failing,
        avoid=avoided_pools(idx, s, now, windows=maintenance.windows),
        restricted=restricted_tenants(ledger, (name for name, st in statuses.items() if not st.usable)),
        teams=teams,
    )


def _memory_after(
    previous: PoolMemory,
    statuses: Mapping[str, PoolStatus],
    records: dict[str, PoolRecord],
    window_start: float,
) -> PoolMemory:
    """This decision's records, and the previous records of pools absent from this snapshot (every
    node deleted during a repair) while declared or within the flap window."""
    for old in previous.records:
        if old.pool not in statuses and (old.declared or any(t > window_start for t in old.history)):
            records[old.pool] = old
    return PoolMemory.of(records.values())


def _room(idx: ClusterIndex, pool: str, teams: Mapping[str, str], tenants: Sequence[str]) -> bool:
    """With no spare slice, whether ``tenants`` restarting off ``pool`` could make kube-scheduler
    preempt only their own pods: no other tenant holds chips on a pool of its shape at a priority
    below the tenants' highest (kube-scheduler preempts lower-priority pods only)."""
    mine = set(tenants)
    pods = [p for group in (*idx.pods_by_jobset.values(), *idx.reporting_by_pool.values()) for p in group]
    top = max((p.priority for p in pods if tenant_key(p.namespace, teams) in mine), default=None)
    if top is None:
        return False
    shape = (idx.pools[pool].accelerator, idx.pools[pool].topology)
    for name, other in idx.pools.items():
        if name == pool or (other.accelerator, other.topology) != shape:
            continue
        for p in idx.pods_by_pool.get(name, ()):
            if p.uses_accelerator and p.priority < top and tenant_key(p.namespace, teams) not in mine:
                return False
    return True


def _pool_event(status: PoolStatus, node: str, uid: str, now: float) -> EmitEvent:
    if status.declared_now:
        flap = " (flapping: longer clean time required)" if status.flapping else ""
        return EmitEvent.on_node(
            (node, uid),
            "Warning",
            "HotswapPoolUnhealthy",
            f"Node pool {status.name} declared unhealthy and tainted{flap}: {status.reason}",
            "Taint",
        )
    down = now - status.unhealthy_since if status.unhealthy_since is not None else 0.0
    return EmitEvent.on_node(
        (node, uid),
        "Normal",
        "HotswapPoolRecovered",
        f"Node pool {status.name} clean again; untainted after {down:.0f}s unhealthy",
        "Untaint",
    )


__all__ = ["Decision", "PoolMemory", "PoolRecord", "PoolState", "Rejection", "decide", "reconcile"]
