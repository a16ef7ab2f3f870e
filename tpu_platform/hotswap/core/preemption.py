"""Whole-slice preemption for managed JobSets that cannot be placed, with its victims and reservations.

A beneficiary (a managed JobSet whose pods have waited unschedulable, with no nomination in flight)
gets whole slices of its shape from strictly lower-priority managed JobSets, once capacity already on
its way (free, recovering, draining or reserved pools) does not cover it. Victims are chosen by
:func:`set_rank`; the record written on each victim reserves the freed pools for the beneficiary
across controller restarts. Reasoning: docs/hotswap-core.md, "preemption.py".
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, replace

from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core import screening
from tpu_platform.hotswap.core.actions import AnnotateJobSet, EmitEvent, EvictionCause, EvictPod
from tpu_platform.hotswap.core.index import ClusterIndex
from tpu_platform.hotswap.core.model import PENDING, JobSet, NodePool, Pod, is_preemptible
from tpu_platform.hotswap.core.pool_health import PoolState, PoolStatus, still_draining
from tpu_platform.hotswap.core.settings import Settings
from tpu_platform.hotswap.core.tenancy import tenant_key, tenant_label
from tpu_platform.hotswap.core.times import CLOCK_SKEW_SECONDS, format_time, parse_time

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


def shape_of(js: JobSet) -> Shape:
    """(accelerator, topology) of a JobSet's slices."""
    return (js.accelerator, js.topology)


# --- the planner: beneficiaries, capacity on its way, then victims ---------------------------


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
    plan = PreemptionPlan([], [], [], [], [])
    benes = _beneficiaries(idx, settings, now, plan.notes)
    reservations = read_reservations(idx, settings, now, plan.notes)
    plan.evictions.extend(continue_reservations(idx, reservations, {b.js.key for b in benes}))
    if not benes:
        return plan
    free, draining = _capacity_on_its_way(
        idx, statuses, reservations=reservations, failing=failing, settings=settings, now=now
    )
    victims = _candidates(
        idx,
        statuses,
        settings=settings,
        now=now,
        failing=failing,
        reservations=reservations,
        reserved_victims={r.victim for r in reservations.values()},
        avoid=avoid,
    )
    taking = _Taking(
        idx,
        statuses,
        reservations=reservations,
        failing=failing,
        victims=victims,
        free=free,
        draining=draining,
        teams=teams if teams is not None else {},
        restricted=restricted,
        now=now,
        plan=plan,
    )
    for b in benes:
        taking.serve(b)
    return plan


Draining = tuple[str, int, frozenset[str]]
"""A pool whose occupants are all leaving: (pool, their highest priority, their JobSets)."""


def _capacity_on_its_way(
    idx: ClusterIndex,
    statuses: Mapping[str, PoolStatus],
    *,
    reservations: Mapping[str, Reservation],
    failing: frozenset[str],
    settings: Settings,
    now: float,
) -> tuple[dict[Shape, list[str]], dict[Shape, list[Draining]]]:
    """Free pools and draining pools by shape, sorted: usable (or recovering soon), not nominated by
    kube-scheduler and not reserved for an earlier preemption's beneficiary."""
    free: dict[Shape, list[str]] = {}
    draining: dict[Shape, list[Draining]] = {}
    for name, pool in idx.pools.items():
        status = statuses[name]
        if name in idx.nominated_pools or name in reservations:
            continue
        if not status.usable and not _recovering_soon(status, settings, now):
            continue
        shape = _pool_shape(pool)
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
    return free, draining


class _Taking:
    """One reconcile's preemptions: beneficiaries, highest priority first, take pools and victims that
    stay taken for every later one."""

    def __init__(
        self,
        idx: ClusterIndex,
        statuses: Mapping[str, PoolStatus],
        *,
        reservations: Mapping[str, Reservation],
        failing: frozenset[str],
        victims: Mapping[str, _Victim],
        free: Mapping[Shape, list[str]],
        draining: Mapping[Shape, list[Draining]],
        teams: Mapping[str, str],
        restricted: frozenset[str],
        now: float,
        plan: PreemptionPlan,
    ) -> None:
        self.idx = idx
        self.statuses = statuses
        self.reservations = reservations
        self.failing = failing
        self.victims = victims
        self.free = free
        self.draining = draining
        self.teams = teams
        self.restricted = restricted
        self.now = now
        self.plan = plan
        self.used_pools: set[str] = set()
        self.used_victims: set[str] = set()
        self.queues: dict[tuple[Shape, str | None], VictimQueue] = {}

    def serve(self, b: _Beneficiary) -> None:
        """Preempt for ``b`` if capacity on its way does not cover it, or note why not."""
        js = b.js
        if js.key in self.used_victims:
            return
        tenant = tenant_key(js.namespace, self.teams)
        own_only = tenant if tenant in self.restricted else None
        co_located: dict[str, Candidate] = {}
        cleared: tuple[str, ...] = ()
        if b.partial_pools:
            found = _co_located(
                self.idx,
                b,
                statuses=self.statuses,
                victims=self.victims,
                reservations=self.reservations,
                failing=self.failing,
                used_victims=self.used_victims,
                notes=self.plan.notes,
                own_only=None if own_only is None else (own_only, self.teams),
            )
            if found is None:
                return
            co_located, cleared = found
        need = self._claim_on_its_way(b)
        if need == 0 and not co_located:
            if b.pending_jobs:
                self.plan.notes.append(f"{js.key}: capacity is free or on its way; not preempting")
            return
        # Pools that victims cleared for the partly placed slices also free count first.
        rest = need - sum(1 for c in co_located.values() for p in c.pools if p not in b.own_pools)
        chosen: tuple[Candidate, ...] = ()
        if rest > 0:
            picked = self._queue(shape_of(js), own_only).select(
                rest,
                alive=_still_eligible(js.priority, self.used_victims, self.used_pools),
                skip=_held_by(co_located.values()),
            )
            if picked is None:
                whose = (
                    f" of {tenant_label(own_only)} (its reports alone hold a pool out of service)"
                    if own_only is not None
                    else ""
                )
                self.plan.notes.append(
                    f"{js.key}: needs {rest} {js.topology} slice(s); "
                    f"lower-priority victims{whose} free too few"
                )
                return
            chosen = picked
        chosen = tuple(co_located[key] for key in sorted(co_located)) + chosen
        _record(
            self.idx,
            js,
            need=need + len(cleared),
            chosen=chosen,
            cleared=cleared,
            now=self.now,
            plan=self.plan,
        )
        for c in chosen:
            self.used_victims.add(c.key)
            self.used_pools.update(c.pools)

    def _claim_on_its_way(self, b: _Beneficiary) -> int:
        """Slices ``b`` still needs once its reservations, free pools and draining pools (of a
        lower-priority or its own JobSet) are counted; the pools it takes stay taken."""
        js = b.js
        shape = shape_of(js)
        need = b.pending_jobs
        need -= sum(
            1 for r in self.reservations.values() if r.beneficiary == js.key and r.pool not in b.own_pools
        )
        for name in self.free.get(shape, ()):
            if need <= 0:
                break
            if name not in self.used_pools:
                self.used_pools.add(name)
                need -= 1
        for name, top, owners in self.draining.get(shape, ()):
            if need <= 0:
                break
            if name not in self.used_pools and (top < js.priority or owners == {js.key}):
                self.used_pools.add(name)
                need -= 1
        return max(need, 0)

    def _queue(self, shape: Shape, own_only: str | None) -> VictimQueue:
        """The shape's victim queue, shared by all beneficiaries; a restricted tenant gets its own
        (eligibility stays monotonic within it as in the shared one)."""
        queue = self.queues.get((shape, own_only))
        if queue is None:
            queue = self.queues[(shape, own_only)] = VictimQueue(
                v.candidate
                for key, v in self.victims.items()
                if v.shape == shape
                and (own_only is None or tenant_key(self.idx.jobsets[key].namespace, self.teams) == own_only)
            )
        return queue


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
        count = _previous_count(victim.annotations.get(k.PREEMPTION_COUNT_ANNOTATION)) + 1
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


def _previous_count(text: str | None) -> int:
    """The previous preemption count; anything but a bounded count restarts it from 0."""
    try:
        return screening.integer(text, reason="preemption-count", low=0, high=screening.INT32_MAX, default=0)
    except screening.InputError:
        return 0


# --- victims: which lower-priority JobSets to preempt, and at what cost ------------------------


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


def _order(c: Candidate) -> tuple[int, int, str]:
    """Within one priority level: least work lost, then fewest slices (a bigger victim than needed
    leaves freed slices idle), then name for determinism."""
    return (c.cost, len(c.pools), c.key)


def set_rank(chosen: Iterable[Candidate]) -> tuple[int, int, int, int]:
    """How a victim set is judged, smallest best: the lowest highest priority harmed, then least work
    lost, then fewest victims, then fewest slices freed.

    kube-scheduler takes the node whose highest-priority victim has the lowest priority (after PDB
    violations; kubernetes/kubernetes ``pkg/scheduler/framework/preemption/preemption.go``,
    ``pickOneNodeForPreemption``) and Kueue preempts lower priorities first
    (https://kueue.sigs.k8s.io/docs/concepts/preemption/); taking a higher-priority victim because it
    loses less work would let its restart preempt the lower one too."""
    items = tuple(chosen)
    return (
        max((c.priority for c in items), default=-(2**63)),
        sum(c.cost for c in items),
        len(items),
        sum(len(c.pools) for c in items),
    )


def select_victims(candidates: Iterable[Candidate], need: int) -> tuple[Candidate, ...] | None:
    """Best set freeing at least ``need`` slices by :func:`set_rank`; None if all together free fewer.

    The highest priority in the best set is the lowest priority level P at which the candidates of
    priority <= P can free ``need`` slices at all; among those candidates the set is a 0/1 covering
    knapsack over the slices still needed (``need`` is small: the slices of one JobSet), minimising
    (work lost, victims, slices). A best set never holds more than ceil(need/f) candidates freeing f
    slices (each victim is necessary), so only that many of the best per size are kept; the cost stays
    linear in the number of candidates.
    """
    if need <= 0:
        return ()
    by_level: dict[int, list[Candidate]] = {}
    for c in candidates:
        if c.pools:
            by_level.setdefault(c.priority, []).append(c)
    pruned = _Pruned(need)
    for level in sorted(by_level):
        for c in sorted(by_level[level], key=_order):
            pruned.offer(c)
        if pruned.capacity() >= need:
            return _cover(pruned.kept(), need)
    return None


class _Pruned:
    """The best ceil(need/f) candidates per slices-freed f (capped at ``need``), by :func:`_order`.

    Candidates are offered level by level; a later level's candidate can still displace an earlier
    one of the same size if it loses less work (both are at most the final level P)."""

    __slots__ = ("_by_size", "_need")

    def __init__(self, need: int) -> None:
        self._need = need
        self._by_size: dict[int, list[Candidate]] = {}

    def offer(self, c: Candidate) -> None:
        f = min(len(c.pools), self._need)
        limit = -(-self._need // f)
        items = self._by_size.setdefault(f, [])
        if len(items) < limit:
            items.append(c)
        elif _order(c) < _order(items[-1]):
            items[-1] = c
        else:
            return
        items.sort(key=_order)

    def capacity(self) -> int:
        return sum(f * len(items) for f, items in self._by_size.items())

    def kept(self) -> list[Candidate]:
        return sorted(
            (c for items in self._by_size.values() for c in items), key=lambda c: (c.priority, *_order(c))
        )


def _cover(kept: list[Candidate], need: int) -> tuple[Candidate, ...] | None:
    """The DP of :func:`select_victims`: min (work lost, victims, slices) over sets of ``kept``."""
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


class _Level:
    """One priority level's candidates, sorted once and grouped by slices freed, with dead ones
    unlinked the first time they are seen."""

    __slots__ = ("_head", "_items", "_next")

    def __init__(self, candidates: Iterable[Candidate]) -> None:
        by_size: dict[int, list[Candidate]] = {}
        for c in sorted(candidates, key=_order):
            by_size.setdefault(len(c.pools), []).append(c)
        self._items = {size: by_size[size] for size in sorted(by_size)}
        self._next = {size: list(range(1, len(items) + 1)) for size, items in self._items.items()}
        self._head = dict.fromkeys(self._items, 0)

    def empty(self) -> bool:
        return all(self._head[size] >= len(items) for size, items in self._items.items())

    def offer_to(
        self,
        pruned: _Pruned,
        need: int,
        alive: Callable[[Candidate], bool],
        skip: Callable[[Candidate], bool],
    ) -> None:
        """Offer the few candidates per size that can matter: ceil(need/size) below ``need``, and
        the best one of each size at or above it."""
        for size in self._items:
            count = -(-need // size) if size < need else 1
            for c in self._first(size, count, alive, skip):
                pruned.offer(c)

    def _first(
        self, size: int, count: int, alive: Callable[[Candidate], bool], skip: Callable[[Candidate], bool]
    ) -> list[Candidate]:
        items, nxt = self._items[size], self._next[size]
        out: list[Candidate] = []
        prev = -1
        i = self._head[size]
        while i < len(items) and len(out) < count:
            if alive(items[i]):
                if not skip(items[i]):
                    out.append(items[i])
                prev = i
            elif prev < 0:
                self._head[size] = nxt[i]
            else:
                nxt[prev] = nxt[i]
            i = nxt[i]
        return out


class VictimQueue:
    """One shape's candidates, sorted once by priority level, shared by all beneficiaries.

    Beneficiaries come highest priority first and the pools and victims they take stay taken, so a
    candidate that is not eligible for one beneficiary is not eligible for any later one: it is
    unlinked the first time it is seen, and each beneficiary looks at no more candidates per level
    than :func:`select_victims` would keep after pruning (plus those it unlinks). Levels are few
    (one per PriorityClass in use).
    """

    __slots__ = ("_levels",)

    def __init__(self, candidates: Iterable[Candidate]) -> None:
        by_level: dict[int, list[Candidate]] = {}
        for c in candidates:
            if c.pools:
                by_level.setdefault(c.priority, []).append(c)
        self._levels = [(level, _Level(by_level[level])) for level in sorted(by_level)]

    def select(
        self, need: int, *, alive: Callable[[Candidate], bool], skip: Callable[[Candidate], bool]
    ) -> tuple[Candidate, ...] | None:
        """Same result as ``select_victims`` over the candidates that are ``alive`` and not ``skip``ped.

        ``alive`` must stay false once false for every later call (they are unlinked); ``skip`` only
        applies to this call.
        """
        if need <= 0:
            return ()
        pruned = _Pruned(need)
        for _, level in self._levels:
            level.offer_to(pruned, need, alive, skip)
            if pruned.capacity() >= need:
                return _cover(pruned.kept(), need)
        self._levels = [(p, level) for p, level in self._levels if not level.empty()]
        return None


# --- reservations: the preemption record on a victim, read back -----------------------------


@dataclass(frozen=True, slots=True)
class Reservation:
    pool: str
    beneficiary: str
    victim: str
    at: float


RESERVATION_CLOCK_SKEW_SECONDS = CLOCK_SKEW_SECONDS
"""A ``preempted-at`` later than now by more than this is ignored: only a forger (or a broken clock)
writes a time in the future, and honouring one would hold a pool for as long as the forger likes."""


MAX_RESERVED_POOLS = 64
"""Pools read from one ``preempted-pools`` value, at most (a victim frees at most its own slices)."""


def read_reservations(
    idx: ClusterIndex, settings: Settings, now: float, notes: list[str] | None = None
) -> dict[str, Reservation]:
    """Pools freed by earlier preemptions that are still on their way to the beneficiary.

    A reservation holds while younger than the settle time, or while the victim's pods from before
    the preemption are still on the pool (draining; their eviction may also have been refused).

    Only a record the controller could have written counts: on a managed JobSet (the only kind it
    preempts), naming an existing managed beneficiary of strictly higher priority and the same slice
    shape that still has pods waiting, at a time not in the future, for pools of the victim's shape
    (no more of them than the victim has slices) that no third workload holds. The admission policy
    keeps anyone else from writing these annotations; these checks keep a record that got past it
    anyway from steering decisions.
    """
    out: dict[str, Reservation] = {}
    for key, js in idx.jobsets.items():
        ann = js.annotations
        beneficiary = ann.get(k.PREEMPTED_FOR_ANNOTATION) if ann else None
        if not beneficiary:
            continue
        at = parse_time(ann.get(k.PREEMPTED_AT_ANNOTATION))
        if at is None:
            continue
        why = forged_reason(idx, js, beneficiary, at, now)
        if why:
            if notes is not None:
                notes.append(f"{key}: preemption record ignored ({why})")
            continue
        named = ann.get(k.PREEMPTED_POOLS_ANNOTATION, "")[: MAX_RESERVED_POOLS * 64].split(",")
        pools = [p.strip() for p in named[:MAX_RESERVED_POOLS] if p.strip()]
        pools = [p for p in pools if p in idx.pools and _pool_shape(idx.pools[p]) == shape_of(js)]
        for pool in sorted(set(pools))[: js.slices]:
            if any(
                p.uses_accelerator and not p.terminating and p.jobset not in (js.key, beneficiary)
                for p in idx.pods_by_pool[pool]
            ):
                continue  # a third workload holds the pool: nothing is on its way to the beneficiary
            old_pods = any(
                p.jobset == js.key and (p.terminating or p.created <= at) for p in idx.pods_by_pool[pool]
            )
            if now - at < settings.preemption_settle_seconds or old_pods:
                prev = out.get(pool)
                if prev is None or prev.at < at:
                    out[pool] = Reservation(pool, beneficiary, js.key, at)
    return out


def forged_reason(idx: ClusterIndex, victim: JobSet, beneficiary: str, at: float, now: float) -> str:
    """Why this preemption record cannot be one the controller wrote ('' if it can be)."""
    if victim.key not in idx.managed:
        return "not a managed JobSet"
    if at > now + RESERVATION_CLOCK_SKEW_SECONDS:
        return "preempted-at is in the future"
    other = idx.jobsets.get(beneficiary)
    if other is None or beneficiary not in idx.managed:
        return f"beneficiary {beneficiary[:80]!r} is not a managed JobSet"
    if other.priority <= victim.priority or shape_of(other) != shape_of(victim):
        return "beneficiary is not of higher priority and the same slice shape"
    if not any(p.node is None and not p.terminating for p in idx.pods_of(beneficiary)):
        return "beneficiary is not waiting for slices"
    return ""


def continue_reservations(
    idx: ClusterIndex, reservations: Mapping[str, Reservation], active: set[str]
) -> list[EvictPod]:
    """Re-issue evictions that did not take (e.g. refused by a PDB) while the beneficiary still waits.

    Only the victim's pods from before the preemption are evicted; its restarted pods are left alone.
    """
    evictions: list[EvictPod] = []
    for pool in sorted(reservations):
        r = reservations[pool]
        if r.beneficiary not in active:
            continue
        for p in idx.pods_by_pool[pool]:
            if p.jobset == r.victim and not p.terminating and p.created <= r.at:
                evictions.append(
                    EvictPod.of(
                        p,
                        EvictionCause.PREEMPTION,
                        pool,
                        f"completing preemption of {r.victim} for {r.beneficiary}",
                    )
                )
    return evictions
