"""Which lower-priority JobSets to preempt for a beneficiary, and at what cost: pure policy.

Victims are whole JobSets, each freeing all the slices of the beneficiary's shape it holds. The
chosen set has the lowest highest priority, then loses the least work, then has the fewest
victims, then frees the fewest slices, and no victim can be dropped from it (``set_rank``,
``select_victims``). ``VictimQueue`` serves the planner the same choice from a list sorted once,
as it walks the beneficiaries of one reconcile.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from tpu_platform.hotswap.core.model import JobSet, Pod


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
