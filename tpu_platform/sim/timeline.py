"""The timeline picture: one row per policy, one column per incident (zoomed around it), and in each
panel only the slices whose occupancy changes there.

A bar is a JobSet holding a slice, in that JobSet's own colour; its height says its priority (full
height: the top priority, lower for each level below), solid while it trains, pale and hatched while it
holds the slice without training (starting up, compiling, restoring, hung on a broken slice, draining).
Vertical markers for the JobSet the incident hit: failure (red), first reaction (restart or Kueue
eviction, grey dash-dot), pods Running (black dashed), training resumed (black). Grey hatching: GKE
repairing the slice; an orange outline: the controller keeping the slice tainted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from tpu_platform.sim.metrics import Episode, Interval
from tpu_platform.sim.run import Result

MARKERS: tuple[tuple[str, str, Literal["-", "--", ":", "-."]], ...] = (
    ("failure", "red", "-"),
    ("first reaction (restart or Kueue eviction)", "0.35", "-."),
    ("pods Running", "black", "--"),
    ("training resumed", "black", "-"),
)
PALETTE = (0, 2, 4, 5, 6, 8, 9)
"""tab10 without orange, red and grey: those mark the controller's taint, failures and repairs."""


@dataclass(frozen=True, slots=True)
class Window:
    """One incident's zoom: ``start``..``end`` seconds, the axis counted from ``origin``."""

    origin: float
    start: float
    end: float
    workload: str | None = None


def _clip(a0: float, a1: float, b0: float, b1: float) -> tuple[float, float] | None:
    lo, hi = max(a0, b0), min(a1, b1)
    return (lo, hi) if hi > lo else None


def windows_for(results: Sequence[Result], *, before: float = 60.0, after: float = 120.0) -> list[Window]:
    """A zoom around each distinct incident that hit a high-priority JobSet: from just before it to just
    after the slowest policy has that JobSet training again."""
    out: list[Window] = []
    starts = sorted({e.start for r in results for e in r.metrics.episodes})
    end = results[0].scenario.end
    for t0 in starts:
        eps = [e for r in results for e in r.metrics.episodes if e.start == t0]
        last = max((e.end if e.end is not None else end) for e in eps)
        out.append(Window(t0, max(0.0, t0 - before), min(end, last + after), eps[0].workload))
    return out


def _changing_lanes(results: Sequence[Result], w: Window) -> list[str]:
    """Pools whose occupancy, repair or taint changes inside the window under any policy."""
    lanes: set[str] = set()
    for r in results:
        for iv in r.metrics.occupancy:
            if w.start < iv.start < w.end or w.start < iv.end < w.end:
                lanes.add(iv.lane)
        for pool, t0, t1 in r.metrics.repairs:
            if _clip(t0, t1 if t1 is not None else w.end, w.start, w.end):
                lanes.add(pool)
        for t, _node, pool in r.metrics.failures:
            if w.start <= t <= w.end:
                lanes.add(pool)
        if r.controller is not None:
            for pool, t0, t1 in r.controller.tainted:
                if _clip(t0, t1 if t1 is not None else w.end, w.start, w.end):
                    lanes.add(pool)
    return sorted(lanes)


def _priority(results: Sequence[Result], key: str) -> int:
    for r in results:
        wl = r.cluster.workloads.get(key)
        if wl is not None:
            return wl.priority
    for r in results:
        for loss in r.metrics.losses:
            if loss.workload == key:
                return loss.priority
    return next((s.priority for s in results[0].scenario.workloads if s.key == key), 0)


def _episode(r: Result, w: Window) -> Episode | None:
    return next((e for e in r.metrics.episodes if e.start == w.origin), None)


@dataclass(frozen=True, slots=True)
class _Style:
    colour: Mapping[str, tuple[float, ...]]
    height: Mapping[str, float]


def _panel(
    ax: Axes,
    r: Result,
    w: Window,
    lanes: list[str],
    style: _Style,
) -> None:
    colour, height = style.colour, style.height
    scale = 60.0
    rows = {pool: i for i, pool in enumerate(lanes)}

    def x(t: float) -> float:
        return (t - w.origin) / scale

    runs: dict[str, list[Interval]] = {}
    for iv in r.metrics.runs:
        runs.setdefault(iv.key, []).append(iv)
    for pool, t0, t1 in r.metrics.repairs:
        span = _clip(t0, t1 if t1 is not None else w.end, w.start, w.end)
        if span is not None and pool in rows:
            ax.add_patch(
                Rectangle(
                    (x(span[0]), rows[pool] - 0.48),
                    (span[1] - span[0]) / scale,
                    0.96,
                    facecolor="0.88",
                    edgecolor="0.6",
                    hatch="xx",
                    linewidth=0.4,
                    zorder=1,
                )
            )
    if r.controller is not None:
        for pool, t0, t1 in r.controller.tainted:
            span = _clip(t0, t1 if t1 is not None else w.end, w.start, w.end)
            if span is not None and pool in rows:
                ax.add_patch(
                    Rectangle(
                        (x(span[0]), rows[pool] - 0.5),
                        (span[1] - span[0]) / scale,
                        1.0,
                        fill=False,
                        edgecolor="darkorange",
                        linewidth=2.0,
                        zorder=5,
                    )
                )
    for iv in r.metrics.occupancy:
        span = _clip(iv.start, iv.end, w.start, w.end)
        if span is None or iv.lane not in rows:
            continue
        y, c, h = rows[iv.lane], colour[iv.key], height[iv.key]
        ax.add_patch(
            Rectangle(
                (x(span[0]), y - h / 2),
                (span[1] - span[0]) / scale,
                h,
                facecolor=(*c[:3], 0.25),
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
                        (x(part[0]), y - h / 2),
                        (part[1] - part[0]) / scale,
                        h,
                        facecolor=c,
                        edgecolor="black" if h > 0.75 else c,
                        linewidth=0.8,
                        zorder=3,
                    )
                )
    for t, _node, pool in r.metrics.failures:
        if w.start <= t <= w.end and pool in rows:
            ax.plot(
                [x(t)],
                [rows[pool]],
                marker="X",
                color="red",
                markersize=11,
                zorder=7,
                markeredgecolor="white",
            )
    ep = _episode(r, w)
    if ep is not None:
        times: tuple[float | None, ...] = (ep.start, ep.acted, ep.running_at, ep.end)
        for (_label, col, line), at in zip(MARKERS, times, strict=True):
            if at is not None and w.start <= at <= w.end:
                ax.axvline(x(at), color=col, linestyle=line, linewidth=1.4, zorder=6)
    ax.set_ylim(-0.6, len(lanes) - 0.4)
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels(lanes, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(x(w.start), x(w.end))
    ax.grid(axis="x", color="0.9", zorder=0)


def _title(r: Result, w: Window, label: str) -> str:
    ep = _episode(r, w)
    if ep is None:
        return f"{label}: not hit"
    if ep.end is None:
        return f"{label}: not recovered in the window"
    running = ep.seconds or 0.0
    resumed = ep.resumed_seconds or 0.0
    return f"{label}: pods Running after {running:.0f} s, back where it was after {resumed / 60:.1f} min"


def draw(
    results: Sequence[Result],
    path: Path,
    *,
    windows: Sequence[Window] | None = None,
    titles: Sequence[str] | None = None,
) -> Path:
    """Write a PNG of ``results`` (one row each) with one zoomed column per incident window."""
    wins = list(windows) if windows is not None else windows_for(results)
    if not wins:
        end = results[0].scenario.end
        wins = [Window(0.0, 0.0, end)]
    labels = list(titles or [r.policy for r in results])
    lanes = {
        i: _changing_lanes(results, w) or sorted(results[0].cluster.pools)[:1] for i, w in enumerate(wins)
    }
    keys = sorted(
        {iv.key for r in results for iv in r.metrics.occupancy},
        key=lambda key: (-_priority(results, key), key),
    )
    levels = sorted({_priority(results, key) for key in keys}, reverse=True)
    height = {key: 0.9 - 0.25 * levels.index(_priority(results, key)) for key in keys}
    palette = [plt.get_cmap("tab10")(i) for i in PALETTE] + [plt.get_cmap("Dark2")(i) for i in range(8)]
    colour = {key: palette[i % len(palette)] for i, key in enumerate(keys)}
    tallest = max(len(v) for v in lanes.values())
    fig_h = len(results) * (0.42 * tallest + 1.0) + 1.8
    fig, axes = plt.subplots(
        len(results), len(wins), figsize=(max(11.0, 7.5 * len(wins)), fig_h), squeeze=False, sharex="col"
    )
    for row, (r, label) in enumerate(zip(results, labels, strict=True)):
        for col, w in enumerate(wins):
            ax = axes[row, col]
            _panel(ax, r, w, lanes[col], _Style(colour, height))
            ax.set_title(_title(r, w, label), fontsize=10, loc="left")
            if row == len(results) - 1:
                ax.set_xlabel(f"minutes after the failure at t={w.origin:.0f} s")
    shown = sorted(
        {
            iv.key
            for r in results
            for iv in r.metrics.occupancy
            for i, w in enumerate(wins)
            if iv.lane in lanes[i] and _clip(iv.start, iv.end, w.start, w.end)
        },
        key=lambda key: (-_priority(results, key), key),
    )
    handles: list[Patch | Line2D] = [
        Patch(
            facecolor=colour[key],
            edgecolor="black" if height[key] > 0.75 else colour[key],
            label=f"{key} (priority {_priority(results, key):,})",
        )
        for key in shown
    ]
    handles += [Line2D([0], [0], color=c, linestyle=s, label=lbl) for lbl, c, s in MARKERS]
    handles += [
        Patch(facecolor="white", edgecolor="0.4", hatch="///", label="holding the slice, not training"),
        Patch(facecolor="0.88", edgecolor="0.6", hatch="xx", label="GKE repairing the slice"),
        Patch(facecolor="white", edgecolor="darkorange", linewidth=2, label="tainted by the controller"),
    ]
    ncol = 3
    rows_needed = (len(handles) + ncol - 1) // ncol
    fig.legend(handles=handles, loc="lower center", ncol=ncol, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, min(0.45, (0.22 * rows_needed + 0.2) / fig_h), 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


__all__ = ["Window", "draw", "windows_for"]
