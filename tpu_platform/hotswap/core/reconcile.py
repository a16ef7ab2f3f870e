"""The decision entry point: snapshot in, ordered actions out. Pure and deterministic."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.actions import Action, EmitEvent, EvictPod, sort_actions
from tpu_platform.hotswap.core.corroboration import confirmation_problems
from tpu_platform.hotswap.core.draining import still_draining
from tpu_platform.hotswap.core.failfast import clear_stuck, fail_fast
from tpu_platform.hotswap.core.fencing import vm_resets
from tpu_platform.hotswap.core.health import (
    PoolMemory,
    PoolRecord,
    PoolState,
    PoolStatus,
    Problem,
    ProblemDetector,
    assess_pool,
)
from tpu_platform.hotswap.core.index import ClusterIndex
from tpu_platform.hotswap.core.inputs import Rejection
from tpu_platform.hotswap.core.maintenance import avoided_pools, plan_maintenance
from tpu_platform.hotswap.core.model import Pod, Snapshot
from tpu_platform.hotswap.core.preemption import Preemption, plan_preemptions
from tpu_platform.hotswap.core.settings import Settings
from tpu_platform.hotswap.core.tenancy import (
    TenantLedger,
    restricted_tenants,
    spare_slices,
    team_of_namespace,
    tenant_key,
)
from tpu_platform.hotswap.core.workload_signals import assess_pool_signals, stored_reports


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
    problems: dict[str, list[Problem]] = {}
    for node in idx.nodes.values():
        found = detector.problems(node, now)
        if found:
            problems[node.name] = found
    maintenance = plan_maintenance(idx, s, now)
    for name, extra in maintenance.problems.items():
        problems.setdefault(name, []).extend(extra)
    for name, extra in confirmation_problems(idx.nodes.values(), s, now).items():
        problems.setdefault(name, []).extend(extra)

    actions: list[Action] = []
    statuses: dict[str, PoolStatus] = {}
    records: dict[str, PoolRecord] = {}
    notes: list[str] = []
    suspects: list[str] = []
    teams = team_of_namespace(s)
    ledger = TenantLedger.read(idx.nodes_by_pool, s, now)
    spares = spare_slices(idx.pools, idx.nodes_by_pool, idx.pods_by_pool, problems)
    spent: set[str] = set()
    for name in sorted(idx.nodes_by_pool):
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
        declared_by = ledger.record(name, signals.tenants, now)
        workload_problem = signals.problem()
        if signals.suspect:
            suspects.append(name)
            notes.append(f"pool {name} suspect: {signals.why}")
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
        statuses[name] = status
        if record is not None:
            records[name] = record
        actions.extend(patches)
        if nodes and (status.declared_now or status.recovered_now):
            actions.append(_pool_event(status, nodes[0].name, nodes[0].uid, now))
    pools = tuple(statuses[name] for name in sorted(statuses))

    total = len(idx.nodes)
    if total and len(problems) / total > s.max_bad_node_fraction:
        note = (
            f"hold: {len(problems)}/{total} managed nodes show problems "
            f"(> {s.max_bad_node_fraction:.0%}); likely a control-plane or network event, not acting"
        )
        # Nothing is written while held, so nothing new is remembered either.
        return Decision(
            now,
            (),
            pools,
            held=True,
            notes=(note, *notes),
            memory=previous,
            rejected=tuple(idx.rejected),
            suspects=tuple(suspects),
        )

    notes.extend(maintenance.notes)
    actions.extend(maintenance.annotations)
    actions.extend(maintenance.events)
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
    preemptions: tuple[Preemption, ...] = ()
    if s.preemption:
        # Restarting: being evicted now, or with a TPU pod whose deletion is under way and not
        # overdue (core/draining.py: a pod a tenant's finalizer holds does not count).
        failing = frozenset(
            {e.jobset for e in evictions.values() if e.jobset is not None}
            | {key for key, pods in idx.pods_by_jobset.items() if any(still_draining(p, now) for p in pods)}
        )
        plan = plan_preemptions(
            idx,
            statuses,
            s,
            now,
            failing,
            avoid=avoided_pools(idx, s, now, windows=maintenance.windows),
            restricted=restricted_tenants(ledger, (name for name, st in statuses.items() if not st.usable)),
            teams=teams,
        )
        for e in plan.evictions:
            evictions.setdefault(e.key, e)
        actions.extend(plan.annotations)
        actions.extend(plan.events)
        preemptions = tuple(plan.preemptions)
        notes.extend(plan.notes)
    actions.extend(evictions.values())
    window_start = now - s.flap_window_seconds
    for old in previous.records:
        # Pools absent from this snapshot (every node deleted during a repair) keep their record.
        if old.pool not in statuses and (old.declared or any(t > window_start for t in old.history)):
            records[old.pool] = old
    return Decision(
        now,
        sort_actions(actions),
        pools,
        preemptions,
        False,
        tuple(notes),
        memory=PoolMemory.of(records.values()),
        rejected=tuple(idx.rejected),
        suspects=tuple(suspects),
    )


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
