"""Whole-slice preemption for managed JobSets that cannot be placed.

kube-scheduler preempts pod by pod on one node; it cannot free a multi-host slice, does not know which
JobSet loses the least work, and JobSet then restarts the victim against its maxRestarts. Here a
beneficiary (a managed JobSet whose pods have been unschedulable for a while, with no nomination in
flight) gets whole slices of its shape from strictly lower-priority managed JobSets, choosing the set
of victims that loses the least work, then the fewest victims, then the fewest slices, and never more
victims than needed (no victim can be dropped from the chosen set).

Capacity already on its way counts first, so nothing is preempted while it is not needed:
free healthy pools, free pools about to finish recovering, pools draining from a restarting
lower-priority (or the beneficiary's own) JobSet, and pools reserved for the beneficiary by an earlier
preemption (recorded on the victim, so this survives a controller restart).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.actions import AnnotateJobSet, EmitEvent, EvictionCause, EvictPod
from tpu_platform.hotswap.core.health import PoolState, PoolStatus
from tpu_platform.hotswap.core.index import ClusterIndex
from tpu_platform.hotswap.core.model import PENDING, JobSet, Pod, is_preemptible
from tpu_platform.hotswap.core.settings import Settings
from tpu_platform.hotswap.core.timeutil import format_time, parse_time

Shape = tuple[str, str]
"""(accelerator, topology)"""


@dataclass(frozen=True, slots=True)
class Candidate:
    """A possible victim: the pools it would free for this shape and what preempting it costs."""

    key: str
    priority: int
    cost: int
    """Estimated work lost, in chip-seconds (all its slices restart)."""
    pools: tuple[str, ...]
    pods: tuple[Pod, ...]
    """Its running (non-terminating, bound) pods: all are evicted."""


@dataclass(frozen=True, slots=True)
class Preemption:
    """One decided preemption, for logs, metrics and simulators."""

    beneficiary: str
    priority: int
    victims: tuple[str, ...]
    pools: tuple[str, ...]
    slices_needed: int
    work_lost: int


@dataclass(frozen=True, slots=True)
class Reservation:
    pool: str
    beneficiary: str
    victim: str
    at: float


@dataclass(slots=True)
class PreemptionPlan:
    evictions: list[EvictPod]
    annotations: list[AnnotateJobSet]
    events: list[EmitEvent]
    preemptions: list[Preemption]
    notes: list[str]


def work_lost_seconds(js: JobSet, now: float) -> float:
    """Seconds of progress a restart would throw away: since the last checkpoint if known, else the
    position within the checkpoint interval, else the whole run."""
    start = js.running_since if js.running_since is not None else js.created
    if js.last_checkpoint is not None:
        return max(0.0, now - max(start, js.last_checkpoint))
    elapsed = max(0.0, now - start)
    if js.checkpoint_interval:
        return elapsed % js.checkpoint_interval
    return elapsed


def restart_budget_left(js: JobSet) -> bool:
    """True if one more disruption does not push the JobSet past maxRestarts (so it would not fail)."""
    return js.disruption_ignores_max_restarts or js.restarts < js.max_restarts


def select_victims(candidates: Iterable[Candidate], need: int) -> tuple[Candidate, ...] | None:
    """Cheapest set freeing at least ``need`` slices: min (work lost, victims, slices), then order.

    0/1 covering knapsack by dynamic programming over slices still needed (``need`` is small: the
    slices of one JobSet). Only the cheapest ceil(need/f) candidates freeing f slices can ever be
    used, so the rest are pruned first; the cost stays linear in the number of candidates.
    Returns None if all candidates together free fewer than ``need`` slices.
    """
    if need <= 0:
        return ()
    ordered = sorted(candidates, key=lambda c: (c.cost, c.priority, -len(c.pools), c.key))
    kept: list[Candidate] = []
    per_size: dict[int, int] = {}
    for c in ordered:
        f = min(len(c.pools), need)
        if f <= 0:
            continue
        if per_size.get(f, 0) < -(-need // f):
            per_size[f] = per_size.get(f, 0) + 1
            kept.append(c)
    # best[j]: (cost, victims, slices, indices) of the best set freeing at least j slices.
    best: list[tuple[int, int, int, tuple[int, ...]] | None] = [None] * (need + 1)
    best[0] = (0, 0, 0, ())
    for i, c in enumerate(kept):
        f = len(c.pools)
        for j in range(need, -1, -1):
            src = best[j]
            if src is None:
                continue
            target = min(need, j + f)
            cand = (src[0] + c.cost, src[1] + 1, src[2] + f, (*src[3], i))
            cur = best[target]
            if cur is None or cand < cur:
                best[target] = cand
    final = best[need]
    if final is None:
        return None
    return tuple(kept[i] for i in final[3])


def read_reservations(idx: ClusterIndex, settings: Settings, now: float) -> dict[str, Reservation]:
    """Pools freed by earlier preemptions that are still on their way to the beneficiary.

    A reservation holds while younger than the settle time, or while the victim's pods from before
    the preemption are still on the pool (draining; their eviction may also have been refused).
    """
    out: dict[str, Reservation] = {}
    for js in idx.jobsets.values():
        ann = js.annotations
        beneficiary = ann.get(k.PREEMPTED_FOR_ANNOTATION) if ann else None
        if not beneficiary:
            continue
        at = parse_time(ann.get(k.PREEMPTED_AT_ANNOTATION))
        if at is None:
            continue
        for pool in filter(None, (p.strip() for p in ann.get(k.PREEMPTED_POOLS_ANNOTATION, "").split(","))):
            if pool not in idx.pools:
                continue
            old_pods = any(
                p.jobset == js.key and (p.terminating or p.created <= at) for p in idx.pods_by_pool[pool]
            )
            if now - at < settings.preemption_settle_seconds or old_pods:
                prev = out.get(pool)
                if prev is None or prev.at < at:
                    out[pool] = Reservation(pool, beneficiary, js.key, at)
    return out


@dataclass(slots=True)
class _Beneficiary:
    js: JobSet
    pending_jobs: int
    waiting_since: float
    own_pools: frozenset[str]


def _beneficiaries(idx: ClusterIndex, settings: Settings, now: float, notes: list[str]) -> list[_Beneficiary]:
    out = []
    for key in sorted(idx.managed):
        js = idx.jobsets[key]
        if js.suspended or js.finished:
            continue
        pods = idx.pods_of(key)
        if not pods:
            continue
        placed: set[str] = set()
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
                    placed.add(p.job)
            elif (
                not p.terminating
                and p.phase == PENDING
                and not p.gated
                and p.uses_accelerator
                and p.unschedulable_since is not None
                and now - p.unschedulable_since >= settings.preemption_pending_seconds
            ):
                pending[p.job] = min(pending.get(p.job, p.unschedulable_since), p.unschedulable_since)
        jobs = set(pending) - placed
        if not jobs:
            continue
        if nominated:
            notes.append(f"{key}: kube-scheduler is already preempting (nominatedNodeName set); not acting")
            continue
        out.append(_Beneficiary(js, len(jobs), min(pending[j] for j in jobs), frozenset(own_pools)))
    out.sort(key=lambda b: (-b.js.priority, b.waiting_since, b.js.key))
    return out


def plan_preemptions(
    idx: ClusterIndex,
    statuses: Mapping[str, PoolStatus],
    settings: Settings,
    now: float,
    failing: frozenset[str],
) -> PreemptionPlan:
    """Decide preemptions; ``failing`` are JobSets already restarting or being failed fast now."""
    plan = PreemptionPlan([], [], [], [], [])
    benes = _beneficiaries(idx, settings, now, plan.notes)
    reservations = read_reservations(idx, settings, now)
    active = {b.js.key for b in benes}
    _continue_reservations(idx, reservations, active, plan)
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
        if all(p.terminating or p.jobset in failing for p in occupants):
            top = max(p.priority for p in occupants)
            owners = frozenset(p.jobset for p in occupants if p.jobset is not None)
            draining.setdefault(shape, []).append((name, top, owners))
    for pools in free.values():
        pools.sort()
    for entries in draining.values():
        entries.sort()

    reserved_victims = {r.victim for r in reservations.values()}
    candidates = _candidates(
        idx,
        statuses,
        settings=settings,
        now=now,
        failing=failing,
        reservations=reservations,
        reserved_victims=reserved_victims,
    )

    used_pools: set[str] = set()
    used_victims: set[str] = set()
    for b in benes:
        js = b.js
        if js.key in used_victims:
            continue
        shape = (js.accelerator, js.topology)
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
        if need <= 0:
            plan.notes.append(f"{js.key}: capacity is free or on its way; not preempting")
            continue
        eligible = [
            c
            for c in candidates.get(shape, ())
            if c.priority < js.priority
            and c.key not in used_victims
            and c.key != js.key
            and not used_pools.intersection(c.pools)
        ]
        chosen = select_victims(eligible, need)
        if chosen is None:
            plan.notes.append(
                f"{js.key}: needs {need} {js.topology} slice(s); lower-priority victims free too few"
            )
            continue
        _record(idx, js, need=need, chosen=chosen, now=now, plan=plan)
        for c in chosen:
            used_victims.add(c.key)
            used_pools.update(c.pools)
    return plan


def _recovering_soon(status: PoolStatus, settings: Settings, now: float) -> bool:
    """A recovering pool that will be untainted before a preemption could even start helping."""
    return (
        status.state is PoolState.RECOVERING
        and status.recovers_at is not None
        and status.recovers_at - now <= settings.preemption_pending_seconds
    )


def _candidates(
    idx: ClusterIndex,
    statuses: Mapping[str, PoolStatus],
    *,
    settings: Settings,
    now: float,
    failing: frozenset[str],
    reservations: Mapping[str, Reservation],
    reserved_victims: set[str],
) -> dict[Shape, list[Candidate]]:
    out: dict[Shape, list[Candidate]] = {}
    for key, js in idx.jobsets.items():
        if (
            key not in idx.managed
            or key in failing
            or key in reserved_victims
            or js.suspended
            or js.finished
            or not is_preemptible(js)
        ):
            continue
        if settings.protect_restart_budget and not restart_budget_left(js):
            continue
        running = tuple(p for p in idx.pods_of(key) if p.node is not None and not p.terminating)
        pools = {idx.node_pool[p.node] for p in running if p.node in idx.node_pool}
        freed = []
        for name in sorted(pools):
            pool = idx.pools[name]
            if (
                statuses[name].usable
                and name not in idx.nominated_pools
                and name not in reservations
                and pool.topology == js.topology
                and pool.accelerator == js.accelerator
                and all(p.jobset == key for p in idx.pods_by_pool[name] if p.uses_accelerator)
            ):
                freed.append(name)
        if not freed:
            continue
        cost = int(js.chips * work_lost_seconds(js, now))
        out.setdefault((js.accelerator, js.topology), []).append(
            Candidate(key, js.priority, cost, tuple(freed), running)
        )
    return out


def _record(
    idx: ClusterIndex,
    beneficiary: JobSet,
    *,
    need: int,
    chosen: tuple[Candidate, ...],
    now: float,
    plan: PreemptionPlan,
) -> None:
    pools = tuple(sorted(p for c in chosen for p in c.pools))
    for c in chosen:
        victim = idx.jobsets[c.key]
        count = _int(victim.annotations.get(k.PREEMPTION_COUNT_ANNOTATION)) + 1
        why = (
            f"freed {len(c.pools)} {victim.topology} slice(s) for {beneficiary.key} "
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
                EvictPod(
                    namespace=p.namespace,
                    name=p.name,
                    uid=p.uid,
                    cause=EvictionCause.PREEMPTION,
                    node=p.node,
                    pool=idx.node_pool.get(p.node) if p.node is not None else None,
                    jobset=c.key,
                    reason=why,
                )
            )
        plan.events.append(
            EmitEvent(
                kind="JobSet",
                namespace=victim.namespace,
                name=victim.name,
                uid=victim.uid,
                type="Warning",
                reason="HotswapPreempted",
                message=why,
                action="Preempt",
            )
        )
    plan.events.append(
        EmitEvent(
            kind="JobSet",
            namespace=beneficiary.namespace,
            name=beneficiary.name,
            uid=beneficiary.uid,
            type="Normal",
            reason="HotswapPreemptedForSlices",
            message=f"Preempted {', '.join(c.key for c in chosen)} to free node pool(s) {', '.join(pools)}",
            action="Preempt",
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
        )
    )


def _continue_reservations(
    idx: ClusterIndex, reservations: Mapping[str, Reservation], active: set[str], plan: PreemptionPlan
) -> None:
    """Re-issue evictions that did not take (e.g. refused by a PDB) while the beneficiary still waits.

    Only the victim's pods from before the preemption are evicted; its restarted pods are left alone.
    """
    for pool in sorted(reservations):
        r = reservations[pool]
        if r.beneficiary not in active:
            continue
        for p in idx.pods_by_pool[pool]:
            if p.jobset == r.victim and not p.terminating and p.created <= r.at:
                plan.evictions.append(
                    EvictPod(
                        namespace=p.namespace,
                        name=p.name,
                        uid=p.uid,
                        cause=EvictionCause.PREEMPTION,
                        node=p.node,
                        pool=pool,
                        jobset=r.victim,
                        reason=f"completing preemption of {r.victim} for {r.beneficiary}",
                    )
                )


def _int(text: str | None) -> int:
    try:
        return int(text) if text else 0
    except ValueError:
        return 0
