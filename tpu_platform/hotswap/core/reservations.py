"""The preemption record on a victim, read back: which freed pools are still on their way.

The controller writes ``preempted-for``, ``preempted-at`` and ``preempted-pools`` on each victim it
preempts (``preemption._record``), so a restarted controller still holds those pools for the
beneficiary. A tenant can write a JobSet's annotations too, so only a record the controller could
have written counts (``forged_reason``), and evictions refused the first time are issued again
while the beneficiary waits (``continue_reservations``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.actions import EvictionCause, EvictPod
from tpu_platform.hotswap.core.index import ClusterIndex
from tpu_platform.hotswap.core.model import JobSet
from tpu_platform.hotswap.core.settings import Settings
from tpu_platform.hotswap.core.timeutil import CLOCK_SKEW_SECONDS, parse_time

Shape = tuple[str, str]
"""(accelerator, topology)"""


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
        pools = [
            p
            for p in pools
            if p in idx.pools and (idx.pools[p].accelerator, idx.pools[p].topology) == shape_of(js)
        ]
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


def shape_of(js: JobSet) -> Shape:
    """(accelerator, topology) of a JobSet's slices."""
    return (js.accelerator, js.topology)


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
