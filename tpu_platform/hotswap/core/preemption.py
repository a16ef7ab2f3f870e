"""Whole-slice preemption for managed JobSets that cannot be placed.

kube-scheduler preempts pod by pod on one node; it cannot free a multi-host slice, does not know which
JobSet loses the least work, and JobSet then restarts the victim against its maxRestarts. Here a
beneficiary (a managed JobSet whose pods have been unschedulable for a while, with no nomination in
flight) gets whole slices of its shape from strictly lower-priority managed JobSets, choosing the set
of victims whose highest priority is lowest, then that loses the least work, then the fewest victims,
then the fewest slices, and never more victims than needed (no victim can be dropped from the chosen
set).

Capacity already on its way counts first, so nothing is preempted while it is not needed:
free healthy pools, free pools about to finish recovering, pools draining from a restarting
lower-priority (or the beneficiary's own) JobSet, and pools reserved for the beneficiary by an earlier
preemption (recorded on the victim, so this survives a controller restart).

A tenant whose reports alone took a pool out of service (``restricted``, :mod:`tpu_platform.hotswap.
core.tenancy`) gets victims of its own tenant only while that pool is out: its word never costs
another team its work.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace

from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core import inputs
from tpu_platform.hotswap.core.actions import AnnotateJobSet, EmitEvent, EvictionCause, EvictPod
from tpu_platform.hotswap.core.draining import still_draining
from tpu_platform.hotswap.core.health import PoolState, PoolStatus
from tpu_platform.hotswap.core.index import ClusterIndex
from tpu_platform.hotswap.core.model import PENDING, JobSet, NodePool, is_preemptible
from tpu_platform.hotswap.core.reservations import Reservation, continue_reservations, read_reservations
from tpu_platform.hotswap.core.settings import Settings
from tpu_platform.hotswap.core.tenancy import tenant_key, tenant_label
from tpu_platform.hotswap.core.timeutil import format_time
from tpu_platform.hotswap.core.victims import (
    Candidate,
    VictimQueue,
    restart_budget_left,
    work_lost_seconds,
)

Shape = tuple[str, str]
"""(accelerator, topology)"""


@dataclass(frozen=True, slots=True)
class Preemption:
    """One decided preemption, for logs, metrics and simulators."""

    beneficiary: str
    priority: int
    victims: tuple[str, ...]
    pools: tuple[str, ...]
    slices_needed: int
    work_lost: int
    cleared_pools: tuple[str, ...] = ()
    """Pools where the beneficiary was already partly placed; every victim there had to go."""


@dataclass(slots=True)
class PreemptionPlan:
    evictions: list[EvictPod]
    annotations: list[AnnotateJobSet]
    events: list[EmitEvent]
    preemptions: list[Preemption]
    notes: list[str]


def _pool_shape(pool: NodePool) -> Shape:
    return (pool.accelerator, pool.topology)


@dataclass(slots=True)
class _Beneficiary:
    js: JobSet
    pending_jobs: int
    """Jobs (slices) with no pod placed: they need whole pools."""
    waiting_since: float
    own_pools: frozenset[str]
    partial_pools: frozenset[str]
    """Pools holding part of a Job whose other pods cannot be scheduled: the rest must land there."""


def _beneficiaries(idx: ClusterIndex, settings: Settings, now: float, notes: list[str]) -> list[_Beneficiary]:
    out = []
    for key in sorted(idx.managed):
        js = idx.jobsets[key]
        if js.suspended or js.finished:
            continue
        pods = idx.pods_of(key)
        if not pods:
            continue
        placed: dict[str, set[str]] = {}
        pending: dict[str, float] = {}
        nominated = False
        own_pools: set[str] = set()
        for p in pods:
            if p.nominated_node is not None:
                nominated = True
            if p.node is not None:
                pool = idx.node_pool.get(p.node)
                if pool is not None:
                    own_pools.add(pool)
                if not p.terminating:
                    placed.setdefault(p.job, set()).update(() if pool is None else (pool,))
            elif (
                not p.terminating
                and p.phase == PENDING
                and not p.gated
                and p.uses_accelerator
                and p.unschedulable_since is not None
                and now - p.unschedulable_since >= settings.preemption_pending_seconds
            ):
                pending[p.job] = min(pending.get(p.job, p.unschedulable_since), p.unschedulable_since)
        if not pending:
            continue
        if nominated:
            notes.append(f"{key}: kube-scheduler is already preempting (nominatedNodeName set); not acting")
            continue
        jobs = set(pending) - set(placed)
        # Never more slices than the JobSet's replicas, however many pods claim to be its own.
        missing = min(len(jobs), max(0, js.slices - len(placed)))
        partial_pools = frozenset(pool for job in pending if job in placed for pool in placed[job])
        out.append(_Beneficiary(js, missing, min(pending.values()), frozenset(own_pools), partial_pools))
    out.sort(key=lambda b: (-b.js.priority, b.waiting_since, b.js.key))
    return out


def plan_preemptions(
    idx: ClusterIndex,
    statuses: Mapping[str, PoolStatus],
    settings: Settings,
    now: float,
    failing: frozenset[str],
    *,
    avoid: frozenset[str] = frozenset(),
    restricted: frozenset[str] = frozenset(),
    teams: Mapping[str, str] | None = None,
) -> PreemptionPlan:
    """Decide preemptions; ``failing`` are JobSets already restarting or being failed fast now.
    ``avoid`` are pools no victim's slice is taken from (maintenance due too soon to be useful).
    ``restricted`` tenants (``teams`` maps namespaces to tenants) take victims of their own only."""
    team_map = teams if teams is not None else {}
    plan = PreemptionPlan([], [], [], [], [])
    benes = _beneficiaries(idx, settings, now, plan.notes)
    reservations = read_reservations(idx, settings, now, plan.notes)
    active = {b.js.key for b in benes}
    plan.evictions.extend(continue_reservations(idx, reservations, active))
    if not benes:
        return plan

    free: dict[Shape, list[str]] = {}
    draining: dict[Shape, list[tuple[str, int, frozenset[str]]]] = {}
    for name, pool in idx.pools.items():
        status = statuses[name]
        if name in idx.nominated_pools or name in reservations:
            continue
        if not status.usable and not _recovering_soon(status, settings, now):
            continue
        shape = (pool.accelerator, pool.topology)
        nodes = idx.nodes_by_pool[name]
        occupants = [p for p in idx.pods_by_pool[name] if p.uses_accelerator]
        if not occupants:
            if len(nodes) >= pool.expected_nodes and not any(n.unschedulable for n in nodes):
                free.setdefault(shape, []).append(name)
            continue
        if all(still_draining(p, now) or p.jobset in failing for p in occupants):
            top = max(p.priority for p in occupants)
            owners = frozenset(p.jobset for p in occupants if p.jobset is not None)
            draining.setdefault(shape, []).append((name, top, owners))
    for pools in free.values():
        pools.sort()
    for entries in draining.values():
        entries.sort()

    reserved_victims = {r.victim for r in reservations.values()}
    victims = _candidates(
        idx,
        statuses,
        settings=settings,
        now=now,
        failing=failing,
        reservations=reservations,
        reserved_victims=reserved_victims,
        avoid=avoid,
    )
    queues: dict[tuple[Shape, str | None], VictimQueue] = {}

    used_pools: set[str] = set()
    used_victims: set[str] = set()
    for b in benes:
        js = b.js
        if js.key in used_victims:
            continue
        shape = (js.accelerator, js.topology)
        tenant = tenant_key(js.namespace, team_map)
        own_only = tenant if tenant in restricted else None
        co_located: dict[str, Candidate] = {}
        cleared: tuple[str, ...] = ()
        if b.partial_pools:
            found = _co_located(
                idx,
                b,
                statuses=statuses,
                victims=victims,
                reservations=reservations,
                failing=failing,
                used_victims=used_victims,
                notes=plan.notes,
                own_only=None if own_only is None else (own_only, team_map),
            )
            if found is None:
                continue
            co_located, cleared = found
        need = b.pending_jobs
        need -= sum(1 for r in reservations.values() if r.beneficiary == js.key and r.pool not in b.own_pools)
        for name in free.get(shape, ()):
            if need <= 0:
                break
            if name not in used_pools:
                used_pools.add(name)
                need -= 1
        for name, top, owners in draining.get(shape, ()):
            if need <= 0:
                break
            if name not in used_pools and (top < js.priority or owners == {js.key}):
                used_pools.add(name)
                need -= 1
        need = max(need, 0)
        if need == 0 and not co_located:
            if b.pending_jobs:
                plan.notes.append(f"{js.key}: capacity is free or on its way; not preempting")
            continue
        # Pools that victims cleared for the partly placed slices also free count first.
        rest = need - sum(1 for c in co_located.values() for p in c.pools if p not in b.own_pools)
        chosen: tuple[Candidate, ...] = ()
        if rest > 0:
            # A restricted tenant's own queue: eligibility stays monotonic within it as in the shared one.
            queue = queues.get((shape, own_only))
            if queue is None:
                queue = queues[(shape, own_only)] = VictimQueue(
                    v.candidate
                    for key, v in victims.items()
                    if v.shape == shape
                    and (own_only is None or tenant_key(idx.jobsets[key].namespace, team_map) == own_only)
                )
            picked = queue.select(
                rest,
                alive=_still_eligible(js.priority, used_victims, used_pools),
                skip=_held_by(co_located.values()),
            )
            if picked is None:
                whose = (
                    f" of {tenant_label(own_only)} (its reports alone hold a pool out of service)"
                    if own_only is not None
                    else ""
                )
                plan.notes.append(
                    f"{js.key}: needs {rest} {js.topology} slice(s); "
                    f"lower-priority victims{whose} free too few"
                )
                continue
            chosen = picked
        chosen = tuple(co_located[key] for key in sorted(co_located)) + chosen
        _record(idx, js, need=need + len(cleared), chosen=chosen, cleared=cleared, now=now, plan=plan)
        for c in chosen:
            used_victims.add(c.key)
            used_pools.update(c.pools)
    return plan


def _still_eligible(
    priority: int, used_victims: set[str], used_pools: set[str]
) -> Callable[[Candidate], bool]:
    """Eligibility for a beneficiary of ``priority``; once false, false for every later one (they
    come in falling priority, and used victims and pools only grow)."""
    return lambda c: c.priority < priority and c.key not in used_victims and used_pools.isdisjoint(c.pools)


def _held_by(chosen: Collection[Candidate]) -> Callable[[Candidate], bool]:
    """Candidates already chosen for this beneficiary, or sharing a pool with one (this call only)."""
    keys = frozenset(c.key for c in chosen)
    pools = frozenset(p for c in chosen for p in c.pools)
    return lambda c: c.key in keys or not pools.isdisjoint(c.pools)


def _co_located(
    idx: ClusterIndex,
    b: _Beneficiary,
    *,
    statuses: Mapping[str, PoolStatus],
    victims: Mapping[str, _Victim],
    reservations: Mapping[str, Reservation],
    failing: frozenset[str],
    used_victims: set[str],
    notes: list[str],
    own_only: tuple[str, Mapping[str, str]] | None = None,
) -> tuple[dict[str, Candidate], tuple[str, ...]] | None:
    """Victims whose pods hold nodes of pools where the beneficiary is partly placed, and those pools.

    kube-scheduler's exclusive placement lets a lower-priority leader take a node of a pool that a
    higher-priority Job already started on; without scheduler preemption the rest of that Job never
    lands. Every blocker must be a victim the whole-slice rules would accept, else nothing is done
    for this beneficiary (a partial clearing would not let it run). None means: do nothing.
    """
    js = b.js
    chosen: dict[str, Candidate] = {}
    cleared: list[str] = []
    for pool in sorted(b.partial_pools):
        if not statuses[pool].usable:
            continue
        r = reservations.get(pool)
        if r is not None and r.beneficiary == js.key:
            continue
        if pool in idx.nominated_pools or r is not None:
            notes.append(f"{js.key}: pool {pool} is already being freed for another workload; not acting")
            return None
        blockers = [
            p
            for p in idx.pods_by_pool[pool]
            if p.uses_accelerator
            and not p.terminating
            and p.jobset != js.key
            and p.jobset not in failing
            and p.jobset not in used_victims
        ]
        if not blockers:
            continue
        for p in blockers:
            v = victims.get(p.jobset) if p.jobset is not None else None
            if v is None or v.candidate.priority >= js.priority or v.shape != (js.accelerator, js.topology):
                owner = p.jobset or "a pod outside any JobSet"
                notes.append(
                    f"{js.key}: partly placed on {pool}, blocked by {p.namespace}/{p.name} of {owner}, "
                    "which is not a lower-priority preemptible managed JobSet; not preempting"
                )
                return None
            if own_only is not None and tenant_key(p.namespace, own_only[1]) != own_only[0]:
                notes.append(
                    f"{js.key}: partly placed on {pool}, blocked by {p.namespace}/{p.name} of another "
                    f"tenant, while {tenant_label(own_only[0])}'s reports alone hold a pool out of "
                    "service; not preempting"
                )
                return None
            prev = chosen.get(v.candidate.key, v.candidate)
            chosen[v.candidate.key] = replace(prev, pools=tuple(sorted({*prev.pools, pool})))
        cleared.append(pool)
    return chosen, tuple(cleared)


def _recovering_soon(status: PoolStatus, settings: Settings, now: float) -> bool:
    """A recovering pool that will be untainted before a preemption could even start helping."""
    return (
        status.state is PoolState.RECOVERING
        and status.recovers_at is not None
        and status.recovers_at - now <= settings.preemption_pending_seconds
    )


@dataclass(frozen=True, slots=True)
class _Victim:
    candidate: Candidate
    shape: Shape


def _candidates(
    idx: ClusterIndex,
    statuses: Mapping[str, PoolStatus],
    *,
    settings: Settings,
    now: float,
    failing: frozenset[str],
    reservations: Mapping[str, Reservation],
    reserved_victims: set[str],
    avoid: frozenset[str] = frozenset(),
) -> dict[str, _Victim]:
    """Every JobSet that may be preempted, with the pools of its shape it alone occupies."""
    out: dict[str, _Victim] = {}
    for key, js in idx.jobsets.items():
        if (
            key not in idx.managed
            or key in failing
            or key in reserved_victims
            or js.suspended
            or js.finished
            or not is_preemptible(js, settings.opt_out_namespaces)
        ):
            continue
        if settings.protect_restart_budget and not restart_budget_left(js):
            continue
        running = tuple(p for p in idx.pods_of(key) if p.node is not None and not p.terminating)
        if not running:
            continue
        pools = {idx.node_pool[p.node] for p in running if p.node in idx.node_pool}
        freed = []
        for name in sorted(pools):
            pool = idx.pools[name]
            if (
                statuses[name].usable
                and name not in avoid
                and name not in idx.nominated_pools
                and name not in reservations
                and pool.topology == js.topology
                and pool.accelerator == js.accelerator
                and all(p.jobset == key for p in idx.pods_by_pool[name] if p.uses_accelerator)
            ):
                freed.append(name)
        cost = int(js.chips * work_lost_seconds(js, now))
        out[key] = _Victim(
            Candidate(key, js.priority, cost, tuple(freed), running), (js.accelerator, js.topology)
        )
    return out


def _record(
    idx: ClusterIndex,
    beneficiary: JobSet,
    *,
    need: int,
    chosen: tuple[Candidate, ...],
    cleared: tuple[str, ...],
    now: float,
    plan: PreemptionPlan,
) -> None:
    pools = tuple(sorted({p for c in chosen for p in c.pools}))
    for c in chosen:
        victim = idx.jobsets[c.key]
        count = _int(victim.annotations.get(k.PREEMPTION_COUNT_ANNOTATION)) + 1
        shared = [p for p in c.pools if p in cleared]
        where = f" (incl. {', '.join(shared)}, where it was partly placed)" if shared else ""
        why = (
            f"freed {len(c.pools)} {victim.topology} slice(s) for {beneficiary.key}{where} "
            f"(priority {beneficiary.priority} > {victim.priority}); est. work lost {c.cost} chip-s"
        )
        plan.annotations.append(
            AnnotateJobSet(
                namespace=victim.namespace,
                name=victim.name,
                uid=victim.uid,
                annotations=(
                    (k.PREEMPTED_AT_ANNOTATION, format_time(now)),
                    (k.PREEMPTED_FOR_ANNOTATION, beneficiary.key),
                    (k.PREEMPTED_POOLS_ANNOTATION, ",".join(c.pools)),
                    (k.PREEMPTION_COUNT_ANNOTATION, str(count)),
                    (k.PREEMPTION_REASON_ANNOTATION, why),
                ),
                reason=why,
            )
        )
        for p in c.pods:
            plan.evictions.append(
                EvictPod.of(
                    p,
                    EvictionCause.PREEMPTION,
                    idx.node_pool.get(p.node) if p.node is not None else None,
                    why,
                )
            )
        plan.events.append(
            EmitEvent.on_jobset(
                victim,
                "Warning",
                "HotswapPreempted",
                why,
                "Preempt",
            )
        )
    plan.events.append(
        EmitEvent.on_jobset(
            beneficiary,
            "Normal",
            "HotswapPreemptedForSlices",
            f"Preempted {', '.join(c.key for c in chosen)} to free node pool(s) {', '.join(pools)}",
            "Preempt",
        )
    )
    plan.preemptions.append(
        Preemption(
            beneficiary=beneficiary.key,
            priority=beneficiary.priority,
            victims=tuple(c.key for c in chosen),
            pools=pools,
            slices_needed=need,
            work_lost=sum(c.cost for c in chosen),
            cleared_pools=cleared,
        )
    )


def _int(text: str | None) -> int:
    """The previous preemption count; anything but a bounded count restarts it from 0."""
    try:
        return inputs.integer(text, reason="preemption-count", low=0, high=inputs.INT32_MAX, default=0)
    except inputs.InputError:
        return 0
