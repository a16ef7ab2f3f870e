"""The simulator against the real control plane: each live incident's steps, and the same steps simulated.

The live tier records every scripted incident's step times (``tests/live/cluster/incidents.py``:
silent host death, 70 s kubelet restart, chip error, maintenance notice, Spot notice, under ``hotswap``,
``recipe`` and ``kueue_tas``); ``tpu_platform.sim.calibration`` replays each on the simulator with the
live tier's fleet, JobSets and settings and times the same steps. A live incident's place in the
kubelet's Lease cycle is unknown, so each runs at every phase of ``PHASES_S`` and the table shows the
simulated range; a step agrees when the live time is within 5 s or 10 % of that range.

    TPU_PLATFORM_LIVE_STEPS=/tmp/live-steps.jsonl ./dev live -k "incidents or notices or baselines"
    python bench/calibrate.py --live /tmp/live-steps.jsonl [--markdown]

Prints the table, the differences with their reasons, then one JSON line::

    {"calibration": [{"kind", "policy", "step", "sim_s", "sim_min_s", "sim_max_s", "live_s", "agrees"}...],
     "max_abs_diff_s": D, "max_rel_diff": R, "disagreements": N, "unexplained": U}

``sim_s`` is ``null`` where the simulator never reaches the step within its window; ``max_*`` are over
the steps both reach (distance from the live time to the simulated range); ``max_rel_diff`` over the
steps at least ``REL_FROM_S`` after the incident (a shorter one is judged by the 5 s bound alone).
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tpu_platform.sim.calibration import KINDS, KUBELET_SILENT_S, PHASES_S, STEPS, simulate

ABS_S = 5.0
REL = 0.10
POD_STARTUP_S = 1.0
"""measured: in the live tier's guide scenario kwok has a JobSet's 4 pods Running 0.6-1.1 s after
Kueue admits it (kwok starts containers at once: no image pull, no runtime start-up)."""

EXPLAINED: dict[tuple[str, str, str], str] = {
    ("chip error", "recipe", "high pods Running again"): (
        "the simulated chip stays broken: every pod the restart starts on that node fails when its TPU "
        "runtime initializes (Infra._on_pod), so the JobSet restarts until GKE's repair; the live tier "
        "breaks no chip (kwok runs what it is given), so its restarted pods run in place"
    ),
    ("chip error", "kueue_tas", "high pods Running again"): (
        "as for recipe: the simulated chip fails each restarted pod on the node, kwok's does not"
    ),
    ("Spot notice", "recipe", "node NotReady"): (
        "the simulator deletes the reclaimed Spot VMs' Node objects when the VMs stop, 30 s after the notice "
        "(Infra._down: the capacity is gone until it returns); the live tier has no cloud node lifecycle "
        "controller (k8s.io/cloud-provider controllers/nodelifecycle, which deletes a NotReady Node whose "
        "instance is gone) and no managed instance group, so its Nodes stay and read NotReady only once "
        "kube-controller-manager's 50 s grace after the VMs' last renewal is up. Neither side posts the "
        "kubelet's own Ready=False 'node is shutting down' at the notice (kubelet v1.34 nodeshutdown "
        "manager, ShutdownStatus): kwok has no graceful node shutdown, and its node-initialize Stage "
        "resets a managed node's Ready to True"
    ),
}
"""Differences whose cause is known and lies on the live side (a piece kwok does not have)."""

REL_FROM_S = 5.0
"""Steps this soon after the incident have no meaningful relative difference."""


@dataclass(frozen=True)
class Row:
    kind: str
    policy: str
    step: str
    live_s: float
    sims: tuple[float, ...]
    """One value per phase that reached the step."""
    runs: int

    @property
    def reached(self) -> bool:
        return len(self.sims) == self.runs

    @property
    def diff_s(self) -> float | None:
        if not self.reached:
            return None
        lo, hi = min(self.sims), max(self.sims)
        return 0.0 if lo <= self.live_s <= hi else min(abs(self.live_s - lo), abs(self.live_s - hi))

    @property
    def agrees(self) -> bool:
        diff = self.diff_s
        return diff is not None and (diff <= ABS_S or diff <= REL * max(self.live_s, 1e-9))

    def record(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "policy": self.policy,
            "step": self.step,
            "sim_s": round(statistics.median(self.sims), 1) if self.reached else None,
            "sim_min_s": min(self.sims) if self.reached else None,
            "sim_max_s": max(self.sims) if self.reached else None,
            "live_s": self.live_s,
            "agrees": self.agrees,
        }


def _policy(label: str) -> tuple[str, float]:
    """The live tier's policy label as the simulator's policy and ``kueue_tas`` tolerations."""
    if label.startswith("kueue_tas (tolerations "):
        return "kueue_tas", float(label.removeprefix("kueue_tas (tolerations ").split()[0])
    return label, 0.0


def rows_for(record: dict[str, Any], pod_startup_s: float) -> list[Row]:
    kind, label, live = record["kind"], record["policy"], record["steps"]
    if kind not in KINDS:
        raise ValueError(f"live record of kind {kind!r}: the simulator knows {', '.join(KINDS)}")
    policy, toleration = _policy(label)
    silent = float(live.get("node Ready again", KUBELET_SILENT_S))
    runs = [
        simulate(
            kind,
            policy,
            list(live),
            pod_startup_s=pod_startup_s,
            tas_toleration_s=toleration,
            kubelet_silent_s=silent,
            phase_s=phase,
        )
        for phase in PHASES_S
    ]
    return [
        Row(kind, label, step, float(t), tuple(r[step] for r in runs if step in r), len(runs))
        for step, t in live.items()
        if step in STEPS
    ]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--live", type=Path, required=True, help="the live tier's steps (JSON lines)")
    parser.add_argument(
        "--pod-startup-s", type=float, default=POD_STARTUP_S, help="the pods' start-up on kwok"
    )
    parser.add_argument(
        "--markdown", action="store_true", help="the table as docs/benchmarks.md shows it, instead of text"
    )
    return parser.parse_args(argv)


def print_table(rows: Sequence[Row], markdown: bool) -> None:
    if markdown:
        print("| incident | policy | step | live s | simulated s (range over the Lease phase) | agrees |")
        print("|---|---|---|---|---|---|")
    else:
        print(f"{'incident':22} {'policy':30} {'step':38} {'live s':>7} {'sim s (range)':>20}  agrees")
    for r in rows:
        sim = f"{min(r.sims):.1f}-{max(r.sims):.1f}" if r.reached else "not reached"
        if markdown:
            agrees = "yes" if r.agrees else "**no**"
            print(f"| {r.kind} | {r.policy} | {r.step} | {r.live_s:.1f} | {sim} | {agrees} |")
        else:
            agrees = "yes" if r.agrees else "NO"
            print(f"{r.kind:22} {r.policy:30} {r.step:38} {r.live_s:7.1f} {sim:>20}  {agrees}")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.live.is_file():
        raise SystemExit(
            f"--live {args.live}: no such file; write one with "
            f"TPU_PLATFORM_LIVE_STEPS={args.live} ./dev live -k 'incidents or notices or baselines'"
        )
    records = [json.loads(line) for line in args.live.read_text().splitlines() if line.strip()]
    rows = [row for record in records for row in rows_for(record, args.pod_startup_s)]
    print_table(rows, args.markdown)
    off = [r for r in rows if not r.agrees]
    unexplained = [r for r in off if (r.kind, _policy(r.policy)[0], r.step) not in EXPLAINED]
    if off:
        print("\ndifferences:")
        for r in off:
            reason = EXPLAINED.get((r.kind, _policy(r.policy)[0], r.step), "UNEXPLAINED")
            print(f"  {r.kind} / {r.policy} / {r.step}: {reason}")
    diffs = [(r.diff_s, r.live_s) for r in rows if r.diff_s is not None]
    out = {
        "calibration": [r.record() for r in rows],
        "max_abs_diff_s": round(max((d for d, _ in diffs), default=0.0), 1),
        "max_rel_diff": round(max((d / abs(t) for d, t in diffs if abs(t) >= REL_FROM_S), default=0.0), 3),
        "disagreements": len(off),
        "unexplained": len(unexplained),
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
