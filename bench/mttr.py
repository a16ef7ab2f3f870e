"""MTTR of high-priority JobSets, lower-priority work lost and chip utilization over a long random
failure trace: the scheduler-only recipe versus the hotswap controller, on the same seeded trace.

The fleet, queues and priorities come from a stack (default: prod); its JobSets are a closed-loop
backlog (every finished JobSet is replaced by the next of its slot, see
``tpu_platform.sim.workload.Backlog``), half of them BlockingRecreate with the repository's
podFailurePolicy and half JobSet's defaults (Recreate, no failure rules). Nodes fail as a Poisson
process; some failures are reboots, the rest wait for GKE's repair. Prints a table, then one JSON
line.

    python bench/mttr.py            # 60 days on prod (a few minutes)
    python bench/mttr.py --quick    # 4 days (under a minute)
    python bench/mttr.py --quick --setting lease_stale_seconds=20   # controller settings for the run
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from tpu_platform.hotswap.core import SettingsError, settings_from_mapping
from tpu_platform.plan.stacks import STACKS_DIR, load_stack_config, parse_stack_config, stack_file
from tpu_platform.sim.infra import random_trace
from tpu_platform.sim.metrics import percentile
from tpu_platform.sim.params import Timings, floor_seconds
from tpu_platform.sim.run import Result, compare, stack_scenario
from tpu_platform.sim.workload import Backlog, pools_from_stack, priority_levels

DAY = 86400.0


def _parse_timing(text: str) -> tuple[str, float | None]:
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected NAME=SECONDS, got {text!r}")
    return key, None if value.lower() == "none" else float(value)


def _parse_setting(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` with a YAML scalar value, as the ConfigMap would hold it (``20``, ``30s``, ``false``)."""
    import yaml

    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, yaml.safe_load(value)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="4 days instead of 60")
    p.add_argument("--days", type=float, help="length of the trace in days")
    p.add_argument("--stack", default="prod")
    p.add_argument("--stacks-dir", type=Path, default=STACKS_DIR)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--node-mtbf-days", type=float, default=30.0, help="mean days between failures of one VM")
    p.add_argument("--reboot-fraction", type=float, default=0.2, help="share of failures that are reboots")
    p.add_argument("--recreate-fraction", type=float, default=0.5, help="share of JobSets using Recreate")
    p.add_argument(
        "--no-scheduler-preemption",
        action="store_true",
        help="PriorityClasses with preemptionPolicy Never: kube-scheduler never preempts (hotswap may)",
    )
    p.add_argument(
        "--timing",
        type=_parse_timing,
        action="append",
        default=[],
        metavar="NAME=SECONDS",
        help="override a tpu_platform.sim.params.Timings field (repeatable), e.g. pod_startup_s=120",
    )
    p.add_argument(
        "--setting",
        type=_parse_setting,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a controller setting for the run (repeatable), e.g. lease_stale_seconds=20",
    )
    return p.parse_args(argv)


def _r(x: float, nd: int = 1) -> float | None:
    return None if math.isnan(x) else round(x, nd)


def _span(values: Sequence[float]) -> str:
    return f"{min(values):.0f} / {max(values):.0f}" if values else "-"


def _longer(values: Sequence[float], limit: float) -> int:
    """Recoveries Kueue's waitForPodsReady (recoveryTimeout 15 min on prod) would have cut short."""
    return sum(1 for v in values if v > limit)


def _by_strategy(r: Result) -> dict[str, tuple[int, float]]:
    groups: dict[str, list[float]] = {}
    for e in r.metrics.episodes:
        if e.seconds is not None:
            label = e.restart_strategy + (" + podFailurePolicy" if e.pod_failure_policy else "")
            groups.setdefault(label, []).append(e.seconds)
    return {k: (len(v), percentile(v, 50)) for k, v in sorted(groups.items())}


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    days = args.days if args.days is not None else (4.0 if args.quick else 60.0)
    cfg = parse_stack_config(load_stack_config(stack_file(args.stack, args.stacks_dir)))
    timings = Timings().with_overrides(dict(args.timing))
    top = priority_levels(cfg)[-1][1]
    backlog = Backlog(seed=args.seed, top_priority=top, recreate_fraction=args.recreate_fraction)
    end = days * DAY
    warmup = 600.0
    trace = tuple(
        random_trace(
            pools_from_stack(cfg),
            seed=args.seed,
            start=warmup,
            end=end,
            node_mtbf_s=args.node_mtbf_days * DAY,
            transient_fraction=args.reboot_fraction,
        )
    )
    workloads = backlog.initial(cfg)
    if args.no_scheduler_preemption:
        workloads = [replace(w, can_preempt=False) for w in workloads]
    scenario = stack_scenario(
        cfg,
        trace=trace,
        end=end,
        seed=args.seed,
        workloads=workloads,
        timings=timings,
        successor=backlog.successor,
    )
    if args.setting:
        try:
            settings = settings_from_mapping({**scenario.settings.to_dict(), **dict(args.setting)})
        except SettingsError as err:
            raise SystemExit(f"--setting: {err}") from err
        scenario = replace(scenario, settings=settings)
    base, hot = compare(scenario)
    s = scenario.settings
    floor = floor_seconds(timings, s.unhealthy_after_seconds, s.lease_stale_seconds)

    chips = sum(p.chips for p in scenario.pools)
    print(
        f"stack {args.stack}: {len(scenario.pools)} slices, {chips} chips; {days:g} days; {len(trace)} node "
        f"failures (MTBF {args.node_mtbf_days:g} d/VM, {args.reboot_fraction:.0%} reboots); seed {args.seed}"
    )
    if args.setting:
        print("controller settings: " + ", ".join(f"{key}={value}" for key, value in args.setting))
    signal = "NotReady" if s.lease_stale_seconds <= 0 else "min(NotReady, stale Lease)"
    print(f"physical floor: {floor:.0f} s ({signal} + T_bad + one unobstructed JobSet restart)")
    print(f"{'':34} {'baseline':>14} {'hotswap':>14}")

    def row(label: str, b: object, h: object) -> None:
        print(f"{label:34} {b!s:>14} {h!s:>14}")

    sb, sh = base.summary, hot.summary
    row("high-priority recoveries", len(sb.mttr_s), len(sh.mttr_s))
    row("  not recovered by the end", sb.unrecovered, sh.unrecovered)
    row("  longer than 15 min", _longer(sb.mttr_s, 900.0), _longer(sh.mttr_s, 900.0))
    row("MTTR p50 (s)", _r(sb.mttr_p50_s), _r(sh.mttr_p50_s))
    row("MTTR p95 (s)", _r(sb.mttr_p95_s), _r(sh.mttr_p95_s))
    row("MTTR min / max (s)", _span(sb.mttr_s), _span(sh.mttr_s))
    row("MTTR p50 / floor", _r(sb.mttr_p50_s / floor, 2), _r(sh.mttr_p50_s / floor, 2))
    for label in sorted(set(_by_strategy(base)) | set(_by_strategy(hot))):
        nb, pb = _by_strategy(base).get(label, (0, math.nan))
        nh, ph = _by_strategy(hot).get(label, (0, math.nan))
        row(f"  p50 {label}"[:34], f"{_r(pb)} (n={nb})", f"{_r(ph)} (n={nh})")
    row(
        "lower-priority lost (chip-h)",
        _r(sb.low_priority_lost_chip_hours),
        _r(sh.low_priority_lost_chip_hours),
    )
    for cause in sorted(set(sb.lost_chip_hours) | set(sh.lost_chip_hours)):
        row(f"  {cause}", _r(sb.lost_chip_hours.get(cause, 0.0)), _r(sh.lost_chip_hours.get(cause, 0.0)))
    row(
        "high-priority lost (chip-h)",
        _r(sb.high_priority_lost_chip_hours),
        _r(sh.high_priority_lost_chip_hours),
    )
    row("utilization (productive)", f"{sb.utilization:.4f}", f"{sh.utilization:.4f}")
    row("leaders placed on broken slices", sb.hazards, sh.hazards)
    row("JobSets stuck half-placed at end", len(sb.stuck), len(sh.stuck))
    row("JobSet restarts", sb.restarts, sh.restarts)
    row("  counted against maxRestarts", base.metrics.counted_restarts, hot.metrics.counted_restarts)
    row("  JobSets failed (maxRestarts)", base.metrics.failed_workloads, hot.metrics.failed_workloads)
    for kind in sorted(set(sb.preemptions) | set(sh.preemptions)):
        row(f"preemptions by {kind}", sb.preemptions.get(kind, 0), sh.preemptions.get(kind, 0))
    row("JobSets completed", base.metrics.completed, hot.metrics.completed)
    if hot.controller is not None:
        c = hot.controller
        mean_ms = 1000 * c.decide_seconds / max(c.reconciles, 1)
        print(
            f"controller: {c.reconciles} reconciles ({c.skipped_idle} skipped while idle), decide mean "
            f"{mean_ms:.2f} ms, max {1000 * c.max_decide_seconds:.2f} ms; "
            f"actions {dict(sorted(c.actions.items()))}"
        )
    print(
        f"simulated in {base.wall_s:.1f} s (baseline, {base.events} events) + "
        f"{hot.wall_s:.1f} s (hotswap, {hot.events} events)"
    )
    if sh.mttr_p50_s:
        print(
            f"controller p50 is {sh.mttr_p50_s / floor:.2f}x the floor (target <= 1.2x); baseline p50 is "
            f"{sb.mttr_p50_s / sh.mttr_p50_s:.1f}x the controller's (target >= 10x)"
        )
    print(
        json.dumps(
            {
                "baseline_mttr_p50_s": _r(sb.mttr_p50_s),
                "baseline_mttr_p95_s": _r(sb.mttr_p95_s),
                "hotswap_mttr_p50_s": _r(sh.mttr_p50_s),
                "hotswap_mttr_p95_s": _r(sh.mttr_p95_s),
                "floor_s": round(floor, 1),
                "low_priority_lost_chip_hours": {
                    "baseline": _r(sb.low_priority_lost_chip_hours),
                    "hotswap": _r(sh.low_priority_lost_chip_hours),
                },
                "utilization": {"baseline": round(sb.utilization, 4), "hotswap": round(sh.utilization, 4)},
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
