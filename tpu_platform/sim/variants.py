"""The benchmark's figures per run and its reruns of one policy with other settings or timings on the
same trace: the early-detection ablation, the chip/ICI signal configurations, the ``kueue_tas`` mid
setup and the sensitivity of the headline to each chosen parameter (``provenance.SENSITIVITY``).

Pure over simulator results: ``bench/mttr.py`` prints what these return.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from tpu_platform.hotswap.core import settings_from_mapping
from tpu_platform.sim.failures import CHIP_ERROR, HOST_DEATH, KUBELET_RESTART, WORKLOAD_CRASH
from tpu_platform.sim.kueue_tas import KueueTas
from tpu_platform.sim.metrics import percentile
from tpu_platform.sim.policies import Hotswap
from tpu_platform.sim.run import POLICIES, Result, Scenario, make_policy, run

Figures = dict[str, float | int | None]

KUEUE_TAS_MID: dict[str, float] = {"tas_toleration_s": 30.0, "termination_grace_s": 30.0}
"""``kueue_tas`` in the mid setup: 30 s tolerations and the default 30 s grace (its strongest is 0 s
and 1 s, the timings' defaults)."""


def r1(x: float, nd: int = 1) -> float | None:
    return None if math.isnan(x) else round(x, nd)


def figures(r: Result, kind: str) -> Figures:
    """A policy's figures for the episodes of ``kind`` in one run."""
    eps = [e for e in r.metrics.episodes if e.kind == kind]
    running = [e.seconds for e in eps if e.seconds is not None]
    resumed = [e.resumed_seconds for e in eps if e.resumed_seconds is not None]
    return {
        "mttr_p50_s": r1(percentile(running, 50)),
        "mttr_p95_s": r1(percentile(running, 95)),
        "resumed_p50_s": r1(percentile(resumed, 50)),
        "low_priority_lost_chip_hours": r1(r.summary.low_priority_lost_chip_hours),
        "utilization": round(r.summary.utilization, 4),
        "force_deletes": r.cluster.force_deletes,
        "unsafe_force_deletes": r.cluster.unsafe_force_deletes,
    }


def episode_percentiles(r: Result, kind: str) -> Figures:
    eps = [e.seconds for e in r.metrics.episodes if e.kind == kind and e.seconds is not None]
    return {"mttr_p50_s": r1(percentile(eps, 50)), "mttr_p95_s": r1(percentile(eps, 95))}


def maintenance_figures(r: Result) -> Figures:
    """High-priority downtime of one run: unplanned (GKE's drain, moves without an answer, anything
    else), planned (moves at a checkpoint) and their total (``tpu_platform.sim.downtime``)."""
    d = r.downtime
    assert d is not None
    return {
        "unplanned_downtime_s": round(d.unplanned_s, 1),
        "planned_downtime_s": round(d.planned_s, 1),
        "total_downtime_s": round(d.unplanned_s + d.planned_s, 1),
        "moves_at_checkpoint": d.planned_moves,
        "moves_at_deadline": d.unplanned_moves,
        "low_priority_lost_chip_hours": r1(r.summary.low_priority_lost_chip_hours),
    }


def declared(r: Result) -> int:
    """Pools the controller declared unhealthy in the run (each taint interval once)."""
    return len(r.controller.tainted) if r.controller is not None else 0


def hotswap_variant(
    base: Scenario, settings: Mapping[str, Any], timings: Mapping[str, Any] | None = None
) -> Result:
    """The hotswap controller alone on ``base``'s trace with these settings and timings on top."""
    scenario = replace(
        base,
        settings=settings_from_mapping({**base.settings.to_dict(), **settings}),
        timings=base.timings.with_overrides(dict(timings or {})),
    )
    return run(scenario, Hotswap(scenario.settings))


def kueue_tas_mid(base: Scenario) -> Result:
    return run(replace(base, timings=base.timings.with_overrides(KUEUE_TAS_MID)), KueueTas())


Rows = tuple[tuple[str, dict[str, Any], dict[str, Any]], ...]
"""Label, controller settings and timings on top of the run's."""

_SHIPPED = {
    "lease_stale_seconds": 0,
    "compute_corroboration": True,
    "force_delete_unconfirmed": False,
    "reset_silent_vms": True,
}
_LEASE = {**_SHIPPED, "lease_stale_seconds": 20}
_UNFENCED = {**_LEASE, "reset_silent_vms": False}
ABLATION: Rows = (
    ("Compute confirms, reset fence (shipped default)", _SHIPPED, {}),
    ("+ Lease signal", _LEASE, {}),
    ("+ Lease, Compute status 120 s late", _LEASE, {"compute_status_lag_s": 120.0}),
    ("+ Lease, 50% Compute API errors", _LEASE, {"compute_api_error_rate": 0.5}),
    ("+ Lease, no reset fence", _UNFENCED, {}),
    ("+ Lease, no reset fence, status 120 s late", _UNFENCED, {"compute_status_lag_s": 120.0}),
    ("NotReady timer, Compute veto (opt-in)", {**_SHIPPED, "force_delete_unconfirmed": True}, {}),
    (
        "NotReady timer, no Compute (opt-in)",
        {**_SHIPPED, "compute_corroboration": False, "force_delete_unconfirmed": True},
        {},
    ),
    ("no Compute, no timer", {**_SHIPPED, "compute_corroboration": False}, {}),
)
"""Mechanism label, controller settings on top of the run's, timings on top of the run's. Every row
sets every mechanism explicitly, so a stack that turns one on does not make two rows the same."""
ABLATION_KINDS = (HOST_DEATH, KUBELET_RESTART)

CHIP_SIGNALS: Rows = (
    ("reports + withdrawn chips (default)", {}, {}),
    ("reports only (device plugin silent)", {}, {"chips_withdrawn_report_s": None}),
    ("withdrawn chips, reports off", {"workload_signals": False}, {}),
    (
        "one report, device plugin silent",
        {},
        {"chips_withdrawn_report_s": None, "chip_coordinator_report_s": None},
    ),
    ("workload signals off", {"workload_signals": False, "chips_withdrawn_signal": False}, {}),
)
"""Chip/ICI failure signals: label, controller settings, timings (on top of the run's)."""
CHIP_KINDS = (CHIP_ERROR, WORKLOAD_CRASH)


def _reruns(
    name: str,
    rows: Rows,
    kinds: tuple[str, ...],
    scenarios: Mapping[str, Scenario],
    *,
    measure: Callable[[Result], Figures],
    on_step: Callable[[str], object],
) -> dict[str, dict[str, Figures]]:
    """The hotswap controller alone, per row of settings and timings, on each of ``kinds``' traces
    given (same trace, same seed): ``{label: {kind: percentiles + measure(result)}}``."""
    out: dict[str, dict[str, Figures]] = {}
    for label, settings, timings in rows:
        out[label] = {}
        for kind in kinds:
            if kind in scenarios:
                on_step(f"{name}: {label} on {kind} ...")
                r = hotswap_variant(scenarios[kind], settings, timings)
                out[label][kind] = {**episode_percentiles(r, kind), **measure(r)}
    return out


def ablation(
    scenarios: Mapping[str, Scenario], on_step: Callable[[str], object] = lambda _: None
) -> dict[str, dict[str, Figures]]:
    """Per early-detection mechanism, on the host-death and kubelet-restart traces."""
    return _reruns(
        "ablation",
        ABLATION,
        ABLATION_KINDS,
        scenarios,
        measure=lambda r: {
            "force_deletes": r.cluster.force_deletes,
            "unsafe_force_deletes": r.cluster.unsafe_force_deletes,
        },
        on_step=on_step,
    )


def chip_signals(
    scenarios: Mapping[str, Scenario], on_step: Callable[[str], object] = lambda _: None
) -> dict[str, dict[str, Figures]]:
    """Per chip/ICI signal configuration, on the chip-error and software-crash traces (healthy
    hardware: every pool it declares there is a false declaration)."""
    return _reruns(
        "chip signals",
        CHIP_SIGNALS,
        CHIP_KINDS,
        scenarios,
        measure=lambda r: {"pools_declared": declared(r)},
        on_step=on_step,
    )


def sensitivity(
    base: Scenario, values: Mapping[str, tuple[float, ...]], on_step: Callable[[str], object] = lambda _: None
) -> dict[str, dict[str, dict[str, Figures]]]:
    """Silent host deaths on ``base``'s trace with one chosen timing at each of its values, every
    policy: ``{timing: {value: {policy: {mttr_p50_s, mttr_p95_s, unsafe_force_deletes}}}}``."""
    out: dict[str, dict[str, dict[str, Figures]]] = {}
    for name, points in values.items():
        out[name] = {}
        for value in points:
            scenario = replace(base, timings=base.timings.with_overrides({name: value}))
            row: dict[str, Figures] = {}
            for policy in POLICIES:
                on_step(f"sensitivity: {name}={value:g}, {policy} ...")
                r = run(scenario, make_policy(policy, scenario))
                row[policy] = {
                    **episode_percentiles(r, HOST_DEATH),
                    "unsafe_force_deletes": r.cluster.unsafe_force_deletes,
                }
            out[name][f"{value:g}"] = row
    return out
