"""Recovery of high-priority JobSets and what it costs, per failure kind: the guide's recipe, Kueue
0.19.2 + JobSet 0.12.0 without our controller at its strongest documented setup (``kueue_tas``; its
mid setup as ``kueue_tas_mid``) and the hotswap controller with the settings a stack ships, each on
the same seeded trace.

The fleet, queues and priorities come from a stack (default: prod); its JobSets are a closed-loop
backlog (``tpu_platform.sim.workload.Backlog``), half BlockingRecreate with the repository's
podFailurePolicy, half JobSet's defaults. One run per failure kind: silent host deaths over ``--days``,
every other kind over ``--kind-days``, Spot preemptions on ``--spot-stack``. Then host deaths with GKE
keeping the Node objects through a repair, host deaths over each chosen parameter's range
(``tpu_platform.sim.provenance.SENSITIVITY``), the early-detection ablation, the chip/ICI signal
configurations and maintenance without maintenance-aware moves (``tpu_platform.sim.variants``), and
the headline (``tpu_platform.sim.headline``). Prints tables, then one JSON line::

    {"policies": {"recipe": P, "kueue_tas": P, "hotswap": P}, "floor_s": F,
     "by_kind": {KIND: {POLICY: P}}, "kueue_tas_mid": {KIND: P}, "headline": {COLUMN: H},
     "sensitivity": {TIMING: {VALUE: {POLICY: S}}}, "parameters": {NAME: {value, source, ref}},
     "ablation": {MECHANISM: {KIND: A}}, "chip_signals": {SIGNALS: {KIND: C}},
     "false_declarations": D, "unsafe_force_deletes": N, "maintenance": {POLICY: M}}

``P = {mttr_p50_s, mttr_p95_s, resumed_p50_s, low_priority_lost_chip_hours, utilization,
force_deletes, unsafe_force_deletes}`` (``policies`` and ``floor_s``: silent host death);
``unsafe_force_deletes`` counts pods force-deleted while their VM still ran (target: 0);
``false_declarations`` the pools declared unhealthy on healthy hardware (target: 0); ``M`` splits
high-priority downtime under maintenance into unplanned, planned (moves at a checkpoint) and total.

    python bench/mttr.py            # 60 days of host deaths + 20 days per other kind
    python bench/mttr.py --quick    # 4 days + 2 per kind
    python bench/mttr.py --quick --setting lease_stale_seconds=20   # controller settings for the run
    python bench/mttr.py --quick --no-ablation --no-sensitivity --timeline 4   # steps of 4 episodes
    python bench/mttr.py --kinds chip_error,workload_crash --no-ablation   # chip/ICI signals only
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tpu_platform.config import PlatformConfig
from tpu_platform.hotswap.core import SettingsError, settings_from_mapping
from tpu_platform.plan.stacks import STACKS_DIR, load_stack_config, parse_stack_config, stack_file
from tpu_platform.sim.episode_log import DecisionLog, episode_timeline
from tpu_platform.sim.failures import (
    CHIP_ERROR,
    HOST_DEATH,
    KINDS,
    KUBELET_RESTART,
    MAINTENANCE,
    SPOT_PREEMPTION,
    WORKLOAD_CRASH,
    rate,
)
from tpu_platform.sim.headline import headline
from tpu_platform.sim.metrics import percentile
from tpu_platform.sim.params import floor_seconds, resumed_floor_seconds
from tpu_platform.sim.policies import Hotswap
from tpu_platform.sim.provenance import CHOSEN, SENSITIVITY, parameters
from tpu_platform.sim.run import (
    POLICIES,
    Result,
    Scenario,
    compare_all,
    run,
    stack_scenario,
    stack_timings,
)
from tpu_platform.sim.traces import Failure, Rates, kind_trace
from tpu_platform.sim.variants import (
    ABLATION_KINDS,
    CHIP_KINDS,
    Figures,
    ablation,
    chip_signals,
    declared,
    figures,
    hotswap_variant,
    kueue_tas_mid,
    maintenance_figures,
    r1,
    sensitivity,
)
from tpu_platform.sim.workload import Backlog, priority_levels
from tpu_platform.terminal import Progress

DAY = 86400.0
WARMUP = 600.0


def _parse_timing(text: str) -> tuple[str, float | bool | None]:
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected NAME=SECONDS, got {text!r}")
    low = value.lower()
    if low == "none":
        return key, None
    if low in ("true", "false"):
        return key, low == "true"
    return key, float(value)


def _parse_setting(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` with a YAML scalar value, as the ConfigMap would hold it (``20``, ``30s``, ``false``)."""
    import yaml

    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, yaml.safe_load(value)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="4 days of host deaths and 2 per other kind")
    p.add_argument("--days", type=float, help="length of the host-death trace in days (default 60)")
    p.add_argument("--kind-days", type=float, help="length of every other kind's trace (default 20)")
    p.add_argument("--stack", default="prod")
    p.add_argument("--spot-stack", default="dev", help="stack with Spot slices for the Spot preemption run")
    p.add_argument("--stacks-dir", type=Path, default=STACKS_DIR)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument(
        "--node-mtbf-days",
        type=float,
        default=30.0,
        help="chosen stress rate: mean days between incidents of one VM, for host deaths, chip errors and "
        "kubelet restarts (public rates are far lower, see tpu_platform.sim.failures; they are printed)",
    )
    p.add_argument("--slice-mtbf-days", type=float, default=10.0, help="stress rate per slice: maintenance")
    p.add_argument(
        "--spot-mtbf-days", type=float, default=2.0, help="stress rate per Spot slice: preemptions"
    )
    p.add_argument("--mass-every-days", type=float, default=2.0, help="stress rate of mass events (3 slices)")
    p.add_argument("--reboot-fraction", type=float, default=0.2, help="share of host deaths that are reboots")
    p.add_argument("--recreate-fraction", type=float, default=0.5, help="share of JobSets using Recreate")
    p.add_argument("--kinds", default=",".join(KINDS), help="comma-separated failure kinds to run")
    p.add_argument(
        "--no-sensitivity",
        action="store_true",
        help="skip the repair-keeps-nodes run and the host-death runs over each chosen parameter's range",
    )
    p.add_argument(
        "--range-days", type=float, help="trace length of each parameter-range run (default: --kind-days)"
    )
    p.add_argument("--no-ablation", action="store_true", help="skip the early-detection ablation runs")
    p.add_argument(
        "--timeline",
        type=int,
        default=0,
        metavar="N",
        help="print the steps of the first N host-death episodes under the hotswap controller",
    )
    p.add_argument(
        "--no-chip-signals", action="store_true", help="skip the chip/ICI signal configuration runs"
    )
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


@dataclass
class KindRun:
    kind: str
    stack: str
    days: float
    incidents: int
    scenario: Scenario
    results: dict[str, Result]
    """Per column of ``COLUMNS``: the three policies and ``kueue_tas`` in its mid setup."""


COLUMNS = ("recipe", "kueue_tas", "kueue_tas_mid", "hotswap")


def _trace(kind: str, cfg: PlatformConfig, args: argparse.Namespace, seed: int, end: float) -> list[Failure]:
    rates = Rates(
        node_mtbf_s=args.node_mtbf_days * DAY,
        slice_mtbf_s=args.slice_mtbf_days * DAY,
        spot_mtbf_s=args.spot_mtbf_days * DAY,
        mass_every_s=args.mass_every_days * DAY,
        reboot_fraction=args.reboot_fraction,
    )
    return kind_trace(kind, cfg, rates, seed=seed, start=WARMUP, end=end)


def _scenario(
    cfg: PlatformConfig, args: argparse.Namespace, trace: list[Failure], end: float, timings: dict[str, Any]
) -> Scenario:
    top = priority_levels(cfg)[-1][1]
    backlog = Backlog(seed=args.seed, top_priority=top, recreate_fraction=args.recreate_fraction)
    workloads = backlog.initial(cfg)
    if args.no_scheduler_preemption:
        workloads = [replace(w, can_preempt=False) for w in workloads]
    scenario = stack_scenario(
        cfg,
        trace=tuple(trace),
        end=end,
        seed=args.seed,
        workloads=workloads,
        timings=stack_timings(cfg).with_overrides(timings),
        successor=backlog.successor,
    )
    if args.setting:
        try:
            settings = settings_from_mapping({**scenario.settings.to_dict(), **dict(args.setting)})
        except SettingsError as err:
            raise SystemExit(f"--setting: {err}") from err
        scenario = replace(scenario, settings=settings)
    return scenario


def _run_kind(
    kind: str, stack: str, days: float, args: argparse.Namespace, timings: dict[str, Any]
) -> KindRun:
    cfg = parse_stack_config(load_stack_config(stack_file(stack, args.stacks_dir)))
    end = days * DAY
    trace = _trace(kind, cfg, args, args.seed, end)
    scenario = _scenario(cfg, args, trace, end, timings)
    progress = Progress()
    results = compare_all(
        scenario, on_policy=lambda name: progress.step(f"{kind} on {stack}, {days:g} days: {name} ...")
    )
    progress.step(f"{kind} on {stack}, {days:g} days: kueue_tas, mid setup ...")
    results["kueue_tas_mid"] = kueue_tas_mid(scenario)
    progress.done()
    return KindRun(kind, stack, days, len(trace), scenario, results)


def _row(label: str, values: Sequence[object], width: int = 16) -> None:
    print(f"{label:38}" + "".join(f"{v!s:>{width}}" for v in values))


def _details(k: KindRun) -> None:
    res = k.results
    t = k.scenario.timings
    unit = "VM-days" if k.kind in (HOST_DEATH, CHIP_ERROR, MAINTENANCE, WORKLOAD_CRASH) else "days"
    public = rate(k.kind)
    print(
        f"\n== {k.kind} on {k.stack}: {len(k.scenario.pools)} slices, {k.days:g} days, "
        f"{k.incidents} incidents "
        f"(public rate: 1 per {public.mean_days:,.0f} {unit}, {public.source}); floor "
        f"{floor_seconds(t, k.kind):.0f} s running, {resumed_floor_seconds(t, k.kind):.0f} s resumed"
    )
    _row("", COLUMNS)
    eps = {n: [e for e in r.metrics.episodes if e.kind == k.kind] for n, r in res.items()}
    _row("high-priority JobSets touched", [len(eps[n]) for n in COLUMNS])
    _row("  interrupted", [sum(1 for e in eps[n] if e.interrupted is not None) for n in COLUMNS])
    _row("  not recovered by the end", [sum(1 for e in eps[n] if e.end is None) for n in COLUMNS])
    _row("  longer than 15 min", [sum(1 for e in eps[n] if (e.seconds or 0) > 900) for n in COLUMNS])
    for key, label in (
        ("mttr_p50_s", "pods Running p50 (s)"),
        ("mttr_p95_s", "pods Running p95 (s)"),
        ("resumed_p50_s", "training resumed p50 (s)"),
    ):
        _row(label, [figures(res[n], k.kind)[key] for n in COLUMNS])
    by: dict[str, dict[str, list[float]]] = {}
    for n in COLUMNS:
        for e in eps[n]:
            if e.seconds is not None:
                label = e.restart_strategy + (" + pfp" if e.pod_failure_policy else "")
                by.setdefault(label, {}).setdefault(n, []).append(e.seconds)
    for label, groups in sorted(by.items()):
        _row(
            f"  p50 {label}",
            [f"{r1(percentile(groups.get(n, []), 50))} (n={len(groups.get(n, []))})" for n in COLUMNS],
        )
    _row("lower-priority lost (chip-h)", [r1(res[n].summary.low_priority_lost_chip_hours) for n in COLUMNS])
    _row("high-priority lost (chip-h)", [r1(res[n].summary.high_priority_lost_chip_hours) for n in COLUMNS])
    _row("utilization (productive)", [f"{res[n].summary.utilization:.4f}" for n in COLUMNS])
    _row("leaders placed on broken slices", [res[n].summary.hazards for n in COLUMNS])
    _row("force deletions", [res[n].cluster.force_deletes for n in COLUMNS])
    _row("  of a pod whose VM still ran", [res[n].cluster.unsafe_force_deletes for n in COLUMNS])
    _row("JobSet restarts", [res[n].summary.restarts for n in COLUMNS])
    _row("  counted against maxRestarts", [res[n].metrics.counted_restarts for n in COLUMNS])
    _row("  JobSets failed (maxRestarts)", [res[n].metrics.failed_workloads for n in COLUMNS])
    kinds = sorted({key for n in COLUMNS for key in res[n].summary.preemptions})
    for kind in kinds:
        _row(f"preemptions by {kind}", [res[n].summary.preemptions.get(kind, 0) for n in COLUMNS])
    if k.kind == MAINTENANCE:
        m = {n: maintenance_figures(res[n]) for n in COLUMNS}
        _row("high-priority downtime, total (s)", [m[n]["total_downtime_s"] for n in COLUMNS])
        _row("  unplanned (s)", [m[n]["unplanned_downtime_s"] for n in COLUMNS])
        _row("  planned moves at a checkpoint (s)", [m[n]["planned_downtime_s"] for n in COLUMNS])
        _row(
            "  moves at a checkpoint / deadline",
            [f"{m[n]['moves_at_checkpoint']} / {m[n]['moves_at_deadline']}" for n in COLUMNS],
        )
    _row("simulated in (s)", [f"{res[n].wall_s:.1f}" for n in COLUMNS])


def _timelines(k: KindRun, n: int) -> None:
    """The hotswap controller rerun on the host-death trace, each episode's steps from the incident."""
    log = DecisionLog()
    r = run(k.scenario, Hotswap(k.scenario.settings, on_decision=log.record))
    nodes = {at: node for at, node, _ in r.metrics.failures}
    eps = [e for e in r.metrics.episodes if e.kind == HOST_DEATH and e.start in nodes][:n]
    print(f"\n== timeline: the first {len(eps)} host-death episodes, hotswap controller (s from the death)")
    for e in eps:
        print(f"{e.workload} ({e.restart_strategy}), node {nodes[e.start]}:")
        for name, at in episode_timeline(log, e, nodes[e.start], k.scenario.settings):
            print(f"  {'-' if at is None else f'{at:+7.1f}'}  {name}")


def _print_variants(
    title: str,
    out: dict[str, dict[str, Figures]],
    kinds: Sequence[str],
    last: tuple[str, Callable[[Figures], str]],
) -> None:
    """Each row's p50/p95 per kind, then ``last``: its heading and its cell per kind."""
    print(f"\n== {title}")
    heading, cell = last
    _row("", [f"{k} p50/p95 (s)" for k in kinds] + [f"{k} {heading}" for k in kinds], width=26)
    for label, by_kind in out.items():
        _row(
            label,
            [f"{by_kind[k]['mttr_p50_s']} / {by_kind[k]['mttr_p95_s']}" for k in kinds]
            + [cell(by_kind[k]) for k in kinds],
            width=26,
        )


def _print_ranges(ranges: dict[str, dict[str, dict[str, Figures]]]) -> None:
    print(
        "\n== silent host death over each chosen parameter (pods Running p50 / p95 s; unsafe force deletions)"
    )
    _row("", POLICIES, width=22)
    for name, points in ranges.items():
        for value, row in points.items():
            _row(
                f"{name} = {value}",
                [
                    f"{row[n]['mttr_p50_s']} / {row[n]['mttr_p95_s']} ({row[n]['unsafe_force_deletes']})"
                    for n in POLICIES
                ],
                width=22,
            )


def _headline(
    runs: dict[str, KindRun], ranges: dict[str, dict[str, dict[str, Figures]]], false_declarations: int | None
) -> dict[str, dict[str, Any]]:
    out = headline({k: r.results for k, r in runs.items()}, COLUMNS, ranges, false_declarations)
    print("\n== headline: shipped defaults; kueue_tas at its strongest, then its mid setup")
    _row("", COLUMNS)
    for key in out["hotswap"]:
        spans = key == "host_death_p50_range_s"
        _row(key, [_fmt_span(out[n][key]) if spans else out[n].get(key) for n in COLUMNS])
    return out


def _fmt_span(span: tuple[float, float] | None) -> str:
    return "-" if span is None else f"{span[0]:.0f}-{span[1]:.0f}"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    given = list(sys.argv[1:] if argv is None else argv)
    print("$ " + " ".join(["python", "bench/mttr.py", *given]))  # bench/mttr_report.py reads it back
    started = time.perf_counter()
    days = args.days if args.days is not None else (4.0 if args.quick else 60.0)
    kind_days = args.kind_days if args.kind_days is not None else (2.0 if args.quick else 20.0)
    range_days = args.range_days if args.range_days is not None else kind_days
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        raise SystemExit(f"--kinds: unknown {', '.join(unknown)}; known: {', '.join(KINDS)}")
    if HOST_DEATH not in kinds:
        kinds.insert(0, HOST_DEATH)
    timings = dict(args.timing)
    runs: dict[str, KindRun] = {}
    for kind in kinds:
        stack = args.spot_stack if kind == SPOT_PREEMPTION else args.stack
        runs[kind] = _run_kind(kind, stack, days if kind == HOST_DEATH else kind_days, args, timings)
        _details(runs[kind])
    main_run = runs[HOST_DEATH]
    t = main_run.scenario.timings
    print(
        f"\nstack {args.stack}: Kubernetes node-monitor-grace-period {t.node_monitor_grace_s:.0f} s; seed "
        f"{args.seed}; compile {t.compile_s:.0f} s + restore {t.restore_s:.0f} s before training resumes"
    )
    if args.setting:
        print("controller settings: " + ", ".join(f"{key}={value}" for key, value in args.setting))
    progress = Progress()
    ranges: dict[str, dict[str, dict[str, Figures]]] = {}
    if not args.no_sensitivity:
        sens = _run_kind(HOST_DEATH, args.stack, kind_days, args, {**timings, "repair_replaces_nodes": False})
        print("\n== sensitivity: GKE keeps the Node objects through a repair (the same names go Ready again)")
        _details(sens)
        base = _run_kind(HOST_DEATH, args.stack, range_days, args, timings)
        ranges = sensitivity(base.scenario, SENSITIVITY, progress.step)
        progress.done()
        _print_ranges(ranges)
    if args.timeline > 0:
        _timelines(main_run, args.timeline)
    ablated: dict[str, dict[str, Figures]] = {}
    if not args.no_ablation:
        if KUBELET_RESTART not in runs:
            runs[KUBELET_RESTART] = _run_kind(KUBELET_RESTART, args.stack, kind_days, args, timings)
            _details(runs[KUBELET_RESTART])
        ablated = ablation({k: r.scenario for k, r in runs.items()}, progress.step)
        progress.done()
        _print_variants(
            "ablation: early detection, hotswap controller only (same traces)",
            ablated,
            [k for k in ABLATION_KINDS if k in runs],
            ("unsafe/forced", lambda a: f"{a['unsafe_force_deletes']} / {a['force_deletes']}"),
        )
    chips: dict[str, dict[str, Figures]] = {}
    if not args.no_chip_signals and CHIP_ERROR in runs:
        chips = chip_signals({k: r.scenario for k, r in runs.items()}, progress.step)
        progress.done()
        _print_variants(
            "chip/ICI failure signals, hotswap controller only (same traces)",
            chips,
            [k for k in CHIP_KINDS if k in runs],
            ("pools declared", lambda c: str(c["pools_declared"])),
        )
    false_declarations = declared(runs[WORKLOAD_CRASH].results["hotswap"]) if WORKLOAD_CRASH in runs else None
    if false_declarations is not None:
        print(
            "\npools declared unhealthy on healthy hardware (software crashes), hotswap: "
            f"{false_declarations}"
        )
    maintenance: dict[str, Any] = {}
    if MAINTENANCE in runs:
        maintenance = {n: maintenance_figures(runs[MAINTENANCE].results[n]) for n in COLUMNS}
        progress.step("maintenance: hotswap without maintenance-aware moves ...")
        maintenance["hotswap_moves_off"] = maintenance_figures(
            hotswap_variant(runs[MAINTENANCE].scenario, {"maintenance_moves": False})
        )
        progress.done()
        off = maintenance["hotswap_moves_off"]
        print(
            "\nmaintenance, hotswap with maintenance-aware moves off: total downtime "
            f"{off['total_downtime_s']} s, "
            f"lower-priority lost {off['low_priority_lost_chip_hours']} chip-h"
        )
    unsafe = sum(r.cluster.unsafe_force_deletes for k in runs.values() for r in k.results.values()) + sum(
        int(a["unsafe_force_deletes"] or 0) for by_kind in ablated.values() for a in by_kind.values()
    )
    print(f"\nforce deletions of a pod whose VM still ran, all runs: {unsafe}")
    headline = _headline(runs, ranges, false_declarations)
    params = parameters(t)
    chosen = sorted(name for name, p in params.items() if p["source"] == CHOSEN)
    print(
        f"\nparameters: {len(params)} ({len(params) - len(chosen)} sourced or measured, {len(chosen)} chosen)"
    )
    print(f"\nbenchmark wall time {time.perf_counter() - started:.0f} s")
    print(
        json.dumps(
            {
                "policies": {n: figures(main_run.results[n], HOST_DEATH) for n in POLICIES},
                "floor_s": round(floor_seconds(t, HOST_DEATH), 1),
                "by_kind": {k: {n: figures(r.results[n], k) for n in POLICIES} for k, r in runs.items()},
                "kueue_tas_mid": {k: figures(r.results["kueue_tas_mid"], k) for k, r in runs.items()},
                "headline": headline,
                "sensitivity": ranges,
                "parameters": params,
                "ablation": ablated,
                "chip_signals": chips,
                "false_declarations": false_declarations,
                "unsafe_force_deletes": unsafe,
                "maintenance": maintenance,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
