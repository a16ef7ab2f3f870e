"""The headline a reviewer reads: for each policy, MTTR next to what it costs, from the per-kind runs.

A kubelet restart breaks nothing, so every high-priority JobSet a policy interrupts in that run is a
false positive; maintenance counts all high-priority downtime, planned moves included; the host-death
p50 is shown with its span over the chosen parameters' ranges (``provenance.SENSITIVITY``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tpu_platform.sim.failures import CHIP_ERROR, HOST_DEATH, KUBELET_RESTART, MAINTENANCE
from tpu_platform.sim.run import Result
from tpu_platform.sim.variants import Figures, figures, maintenance_figures

Ranges = Mapping[str, Mapping[str, Mapping[str, Figures]]]
"""``{timing: {value: {policy: figures}}}`` from ``variants.sensitivity``."""


def _span(
    ranges: Mapping[str, Mapping[str, Mapping[str, Figures]]], policy: str
) -> tuple[float, float] | None:
    p50s = [
        float(v)
        for points in ranges.values()
        for row in points.values()
        if policy in row and (v := row[policy]["mttr_p50_s"]) is not None
    ]
    return (min(p50s), max(p50s)) if p50s else None


def headline(
    runs: Mapping[str, Mapping[str, Result]],
    columns: Sequence[str],
    ranges: Ranges,
    false_declarations: int | None,
) -> dict[str, dict[str, Any]]:
    """``{column: row}`` over ``runs`` (``{kind: {column: result}}``; host deaths at least)."""
    out: dict[str, dict[str, Any]] = {}
    for n in columns:
        host = figures(runs[HOST_DEATH][n], HOST_DEATH)
        row: dict[str, Any] = {
            "host_death_p50_s": host["mttr_p50_s"],
            "host_death_p95_s": host["mttr_p95_s"],
            "host_death_p50_range_s": _span(ranges, n),
            "low_priority_lost_chip_hours": host["low_priority_lost_chip_hours"],
            "unsafe_force_deletes": sum(by[n].cluster.unsafe_force_deletes for by in runs.values()),
        }
        if KUBELET_RESTART in runs:
            r = runs[KUBELET_RESTART][n]
            row["kubelet_restart_p50_s"] = figures(r, KUBELET_RESTART)["mttr_p50_s"]
            row["kubelet_restart_interrupted"] = sum(
                1 for e in r.metrics.episodes if e.kind == KUBELET_RESTART and e.interrupted is not None
            )
        if MAINTENANCE in runs:
            row["maintenance_total_downtime_s"] = maintenance_figures(runs[MAINTENANCE][n])[
                "total_downtime_s"
            ]
        if CHIP_ERROR in runs:
            row["chip_error_p50_s"] = figures(runs[CHIP_ERROR][n], CHIP_ERROR)["mttr_p50_s"]
        row["pools_declared_on_healthy_hardware"] = false_declarations if n == "hotswap" else 0
        out[n] = row
    return out
