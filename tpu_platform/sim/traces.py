"""The incident traces the simulator replays: one ``Failure`` per incident, drawn per node, per slice
or fleet-wide as seeded Poisson processes, so every policy sees the same incidents."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from tpu_platform.config import PlatformConfig
from tpu_platform.sim.failures import (
    CHIP_ERROR,
    HOST_DEATH,
    KINDS,
    KUBELET_RESTART,
    MAINTENANCE,
    MASS_EVENT,
    SPOT_PREEMPTION,
    WORKLOAD_CRASH,
)
from tpu_platform.sim.model import Pool
from tpu_platform.sim.workload import pools_from_stack
from tpu_platform.slices import expand_slices


@dataclass(frozen=True, slots=True)
class Failure:
    """One incident at ``at`` on ``node`` (for maintenance and Spot: on that node's whole slice)."""

    at: float
    node: str
    """Node name; empty: decided when it fires (see ``Infra``'s ``target``)."""
    back_after: float | None = None
    """A reboot or a kubelet restart: the kubelet returns after this long. None: the node stays dead
    until GKE repairs the slice."""
    kind: str = HOST_DEATH

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"failure at {self.at}s: unknown kind {self.kind!r}; known: {', '.join(KINDS)}")
        if self.kind == KUBELET_RESTART and self.back_after is None:
            raise ValueError(f"failure at {self.at}s: a kubelet restart needs back_after (how long it takes)")


def random_trace(
    pools: Sequence[Pool],
    *,
    seed: int,
    start: float,
    end: float,
    node_mtbf_s: float,
    transient_fraction: float = 0.0,
    reboot_s: tuple[float, float] = (60.0, 300.0),
    kind: str = HOST_DEATH,
) -> list[Failure]:
    """Incidents of one ``kind`` as a Poisson process per node (rate 1/MTBF), in time order; same seed,
    same trace. Kubelet restarts take 5-90 s (chosen); ``transient_fraction`` of host deaths are reboots."""
    rng = random.Random(f"trace:{seed}" if kind == HOST_DEATH else f"trace:{seed}:{kind}")
    out: list[Failure] = []
    for pool in pools:
        for i in range(pool.size):
            t = start
            while True:
                t += rng.expovariate(1.0 / node_mtbf_s)
                if t >= end:
                    break
                back: float | None = None
                if kind == KUBELET_RESTART:
                    back = rng.uniform(5.0, 90.0)
                elif kind in (HOST_DEATH, MASS_EVENT):
                    back = rng.uniform(*reboot_s) if rng.random() < transient_fraction else None
                out.append(Failure(round(t, 3), f"{pool.name}-n{i}", back, kind))
    out.sort(key=lambda f: (f.at, f.node))
    return out


def pool_trace(
    pools: Sequence[Pool], *, seed: int, start: float, end: float, mean_s: float, kind: str
) -> list[Failure]:
    """Slice-level incidents (maintenance, Spot preemption) as a Poisson process per pool."""
    rng = random.Random(f"trace:{seed}:{kind}")
    out: list[Failure] = []
    for pool in pools:
        t = start
        while True:
            t += rng.expovariate(1.0 / mean_s)
            if t >= end:
                break
            out.append(Failure(round(t, 3), f"{pool.name}-n0", None, kind))
    out.sort(key=lambda f: (f.at, f.node))
    return out


def mass_trace(
    pools: Sequence[Pool], *, seed: int, start: float, end: float, mean_s: float, slices: int = 3
) -> list[Failure]:
    """Mass events every ``mean_s`` on average: one host in each of ``slices`` distinct pools dies at once."""
    rng = random.Random(f"trace:{seed}:{MASS_EVENT}")
    out: list[Failure] = []
    t = start
    while True:
        t += rng.expovariate(1.0 / mean_s)
        if t >= end:
            break
        for pool in rng.sample(list(pools), min(slices, len(pools))):
            node = f"{pool.name}-n{rng.randrange(pool.size)}"
            out.append(Failure(round(t, 3), node, None, MASS_EVENT))
    out.sort(key=lambda f: (f.at, f.node))
    return out


@dataclass(frozen=True, slots=True)
class Rates:
    """Stress rates of one benchmark run (all chosen; public rates are far lower, see ``failures``)."""

    node_mtbf_s: float
    """Mean time between incidents of one VM: host deaths, chip errors, kubelet restarts, crashes."""
    slice_mtbf_s: float
    """Per slice: maintenance."""
    spot_mtbf_s: float
    """Per Spot slice: preemptions."""
    mass_every_s: float
    """Mass events (a host in each of three slices at once)."""
    reboot_fraction: float
    """Share of host deaths that are reboots."""


def kind_trace(
    kind: str, cfg: PlatformConfig, rates: Rates, *, seed: int, start: float, end: float
) -> list[Failure]:
    """The trace of one failure kind on a stack's fleet (Spot preemptions on its Spot slices only)."""
    pools = pools_from_stack(cfg)
    if kind in (HOST_DEATH, CHIP_ERROR, KUBELET_RESTART, WORKLOAD_CRASH):
        reboots = rates.reboot_fraction if kind == HOST_DEATH else 0.0
        return random_trace(
            pools,
            seed=seed,
            start=start,
            end=end,
            node_mtbf_s=rates.node_mtbf_s,
            transient_fraction=reboots,
            kind=kind,
        )
    if kind == MASS_EVENT:
        return mass_trace(pools, seed=seed, start=start, end=end, mean_s=rates.mass_every_s)
    if kind == SPOT_PREEMPTION:
        spot = [p for s, p in zip(expand_slices(cfg), pools, strict=True) if s.capacity == "spot"]
        return pool_trace(spot, seed=seed, start=start, end=end, mean_s=rates.spot_mtbf_s, kind=kind)
    if kind == MAINTENANCE:
        return pool_trace(pools, seed=seed, start=start, end=end, mean_s=rates.slice_mtbf_s, kind=kind)
    raise ValueError(f"unknown failure kind {kind!r}; known: {', '.join(KINDS)}")
