"""The timeline picture: slices down the side, time across, one panel per policy.

Each bar is a JobSet holding a slice, in that JobSet's colour: solid while it makes progress, pale and
hatched while it holds the slice without progressing (starting up, hung on a broken slice, draining).
Red crosses mark node failures, grey bands GKE's repair (pool recreated), orange outlines the time the
controller kept the slice tainted.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.patches import Patch, Rectangle

from tpu_platform.sim.metrics import Interval
from tpu_platform.sim.run import Result


def _clip(a0: float, a1: float, b0: float, b1: float) -> tuple[float, float] | None:
    lo, hi = max(a0, b0), min(a1, b1)
    return (lo, hi) if hi > lo else None


def draw(
    results: Sequence[Result],
    path: Path,
    *,
    start: float,
    end: float,
    origin: float = 0.0,
    titles: Sequence[str] | None = None,
) -> Path:
    """Write a PNG of ``results`` (one panel each) between ``start`` and ``end`` seconds.

    The time axis is in minutes relative to ``origin`` (e.g. the failure time).
    """
    pools = sorted(results[0].cluster.pools)
    workloads = sorted(
        {iv.key for r in results for iv in r.metrics.occupancy},
        key=lambda key: (-_priority(results, key), key),
    )
    cmap = plt.get_cmap("tab20")
    order = [*range(0, 20, 2), *range(1, 20, 2)]
    colour = {key: cmap(order[i % 20]) for i, key in enumerate(workloads)}
    rows = {pool: i for i, pool in enumerate(pools)}
    height = max(3.0, 0.45 * len(pools) + 1.6)
    fig, axes = plt.subplots(len(results), 1, figsize=(13, height * len(results)), sharex=True, squeeze=False)
    scale = 60.0
    for ax, r, title in zip(axes[:, 0], results, titles or [r.policy for r in results], strict=True):
        runs: dict[str, list[Interval]] = {}
        for iv in r.metrics.runs:
            runs.setdefault(iv.key, []).append(iv)
        for pool, t0, t1 in r.metrics.repairs:
            span = _clip(t0, t1 if t1 is not None else end, start, end)
            if span is not None:
                y = rows[pool]
                ax.add_patch(
                    Rectangle(
                        ((span[0] - origin) / scale, y - 0.45),
                        (span[1] - span[0]) / scale,
                        0.9,
                        facecolor="0.85",
                        edgecolor="0.6",
                        hatch="xx",
                        linewidth=0.5,
                        zorder=1,
                    )
                )
        if r.controller is not None:
            for pool, t0, t1 in r.controller.tainted:
                span = _clip(t0, t1 if t1 is not None else end, start, end)
                if span is not None:
                    y = rows[pool]
                    ax.add_patch(
                        Rectangle(
                            ((span[0] - origin) / scale, y - 0.48),
                            (span[1] - span[0]) / scale,
                            0.96,
                            fill=False,
                            edgecolor="darkorange",
                            linewidth=2.0,
                            zorder=4,
                        )
                    )
        for iv in r.metrics.occupancy:
            span = _clip(iv.start, iv.end, start, end)
            if span is None:
                continue
            y = rows[iv.lane]
            c = colour[iv.key]
            ax.add_patch(
                Rectangle(
                    ((span[0] - origin) / scale, y - 0.35),
                    (span[1] - span[0]) / scale,
                    0.7,
                    facecolor=(*c[:3], 0.3),
                    edgecolor=c,
                    hatch="///",
                    linewidth=0.6,
                    zorder=2,
                )
            )
            for run in runs.get(iv.key, ()):
                part = _clip(run.start, run.end, *span)
                if part is not None:
                    ax.add_patch(
                        Rectangle(
                            ((part[0] - origin) / scale, y - 0.35),
                            (part[1] - part[0]) / scale,
                            0.7,
                            facecolor=c,
                            edgecolor=c,
                            linewidth=0.6,
                            zorder=3,
                        )
                    )
        for t, _node, pool in r.metrics.failures:
            if start <= t <= end:
                ax.plot(
                    [(t - origin) / scale],
                    [rows[pool]],
                    marker="X",
                    color="red",
                    markersize=11,
                    markeredgecolor="black",
                    zorder=5,
                )
        ax.set_yticks(range(len(pools)), pools)
        ax.set_ylim(-0.7, len(pools) - 0.3)
        ax.invert_yaxis()
        ax.set_xlim((start - origin) / scale, (end - origin) / scale)
        ax.grid(axis="x", linestyle=":", linewidth=0.5)
        ax.set_title(title, loc="left", fontsize=10)
    axes[-1, 0].set_xlabel("minutes from the failure" if origin else "minutes")
    handles = [Patch(facecolor=colour[key], label=f"{key} ({_class(results, key)})") for key in workloads]
    handles += [
        Patch(facecolor="black", label="making progress (solid colour)"),
        Patch(facecolor="0.85", edgecolor="0.5", hatch="///", label="holding the slice, no progress"),
        Patch(facecolor="0.85", edgecolor="0.6", hatch="xx", label="GKE repair (pool recreated)"),
        Patch(fill=False, edgecolor="darkorange", linewidth=2, label="tainted by the controller"),
        Patch(facecolor="red", label="node failure (X)"),
    ]
    legend_rows = (len(handles) + 2) // 3
    fig.legend(handles=handles, loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, min(0.5, 0.18 * legend_rows / (height * len(results))), 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _priority(results: Sequence[Result], key: str) -> int:
    for r in results:
        w = r.cluster.workloads.get(key)
        if w is not None:
            return w.priority
    return next((s.priority for s in results[0].scenario.workloads if s.key == key), 0)


def _class(results: Sequence[Result], key: str) -> str:
    for r in results:
        w = r.cluster.workloads.get(key)
        if w is not None:
            return w.spec.priority_class
    return next((s.priority_class for s in results[0].scenario.workloads if s.key == key), "?")


__all__ = ["draw"]
