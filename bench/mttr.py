"""Recovery of high-priority JobSets, lower-priority work lost and chip utilization, per failure kind:
the guide's recipe, the strongest Kueue 0.19.2 + JobSet 0.12.0 setup without our controller
(``kueue_tas``) and the hotswap controller, each on the same seeded trace.

The fleet, queues and priorities come from a stack (default: prod); its JobSets are a closed-loop
backlog (every finished JobSet is replaced by the next of its slot, see
``tpu_platform.sim.workload.Backlog``), half of them BlockingRecreate with the repository's
podFailurePolicy and half JobSet's defaults (Recreate, no failure rules). One run per failure kind
(``tpu_platform.sim.failures``): silent host deaths over ``--days`` (the headline), every other kind
over ``--kind-days``; Spot preemptions on the ``--spot-stack`` (prod has no Spot capacity). A last run
repeats host deaths with GKE keeping the Node objects through a repair (sources disagree on it).
Prints tables, then one JSON line::

    {"policies": {"recipe": P, "kueue_tas": P, "hotswap": P}, "floor_s": F, "by_kind": {KIND: {POLICY: P}},
     "ablation": {MECHANISM: {KIND: A}}, "unsafe_force_deletes": N,
     "chip_signals": {SIGNALS: {KIND: C}}, "false_declarations": D,
     "maintenance": {POLICY: M}}

with ``P = {mttr_p50_s, mttr_p95_s, resumed_p50_s, low_priority_lost_chip_hours, utilization,
force_deletes, unsafe_force_deletes}``; ``policies`` and ``floor_s`` are for silent host death on the
stack. The ablation reruns the hotswap controller on the host-death trace and on the kubelet-restart
trace (a live VM whose kubelet falls silent: the false positive of every node-side signal) with each
early-detection mechanism on its own and together (``A = {mttr_p50_s, mttr_p95_s, force_deletes,
unsafe_force_deletes}``); ``unsafe_force_deletes`` sums, over every run of every policy, the pods
force-deleted while their VM still ran (the fencing target: 0). ``chip_signals`` reruns the controller
on the chip-error trace and the software-crash trace (``workload_crash``: healthy hardware, some crashes
reporting a TPU error anyway) per chip/ICI signal configuration (``C = {mttr_p50_s, mttr_p95_s,
pools_declared}``); ``false_declarations`` counts the pools the controller declared unhealthy in the
software-crash run (target: 0). ``maintenance`` (when that kind ran) has, per policy and for the hotswap
controller with maintenance-aware moves off (``hotswap_moves_off``), ``M = {unplanned_downtime_s,
planned_downtime_s, moves_at_checkpoint, moves_at_deadline, low_priority_lost_chip_hours}``: seconds a
managed high-priority JobSet was not running, apart from planned moves at a checkpoint
(``tpu_platform.sim.downtime``).

    python bench/mttr.py            # 60 days of host deaths + 20 days per other kind (several minutes)
    python bench/mttr.py --quick    # 4 days + 2 per kind
    python bench/mttr.py --quick --setting lease_stale_seconds=20   # controller settings for the run
    python bench/mttr.py --quick --no-ablation                      # skip the mechanism ablation
    python bench/mttr.py --quick --no-ablation --no-sensitivity --timeline 4   # steps of 4 episodes
    python bench/mttr.py --kinds chip_error,workload_crash --no-ablation   # chip/ICI signals only
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Sequence
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
    MASS_EVENT,
    SPOT_PREEMPTION,
    WORKLOAD_CRASH,
    rate,
)
from tpu_platform.sim.infra import Failure, mass_trace, pool_trace, random_trace
from tpu_platform.sim.metrics import percentile
from tpu_platform.sim.params import floor_seconds, resumed_floor_seconds
from tpu_platform.sim.policies import Hotswap
from tpu_platform.sim.run import (
    POLICIES,
    Result,
    Scenario,
    compare_all,
    run,
    stack_scenario,
    stack_timings,
)
from tpu_platform.sim.workload import Backlog, pools_from_stack, priority_levels
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
    p.add_argument("--no-sensitivity", action="store_true", help="skip the repair-keeps-nodes run")
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


def _r(x: float, nd: int = 1) -> float | None:
    return None if math.isnan(x) else round(x, nd)


@dataclass
class KindRun:
    kind: str
    stack: str
    days: float
    incidents: int
    scenario: Scenario
    results: dict[str, Result]


def _trace(kind: str, cfg: PlatformConfig, args: argparse.Namespace, seed: int, end: float) -> list[Failure]:
    pools = pools_from_stack(cfg)
    if kind in (HOST_DEATH, CHIP_ERROR, KUBELET_RESTART, WORKLOAD_CRASH):
        return random_trace(
            pools,
            seed=seed,
            start=WARMUP,
            end=end,
            node_mtbf_s=args.node_mtbf_days * DAY,
            transient_fraction=args.reboot_fraction if kind == HOST_DEATH else 0.0,
            kind=kind,
        )
    if kind == MASS_EVENT:
        return mass_trace(pools, seed=seed, start=WARMUP, end=end, mean_s=args.mass_every_days * DAY)
    if kind == SPOT_PREEMPTION:
        spot = [p for s, p in zip(_spot_flags(cfg), pools, strict=True) if s]
        return pool_trace(spot, seed=seed, start=WARMUP, end=end, mean_s=args.spot_mtbf_days * DAY, kind=kind)
    if kind == MAINTENANCE:
        return pool_trace(
            pools, seed=seed, start=WARMUP, end=end, mean_s=args.slice_mtbf_days * DAY, kind=kind
        )
    raise ValueError(kind)


def _spot_flags(cfg: PlatformConfig) -> list[bool]:
    from tpu_platform.slices import expand_slices

    return [s.capacity == "spot" for s in expand_slices(cfg)]


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
    progress.done()
    return KindRun(kind, stack, days, len(trace), scenario, results)


def _p(r: Result, kind: str) -> dict[str, float | None]:
    eps = [e for e in r.metrics.episodes if e.kind == kind]
    running = [e.seconds for e in eps if e.seconds is not None]
    resumed = [e.resumed_seconds for e in eps if e.resumed_seconds is not None]
    return {
        "mttr_p50_s": _r(percentile(running, 50)),
        "mttr_p95_s": _r(percentile(running, 95)),
        "resumed_p50_s": _r(percentile(resumed, 50)),
        "low_priority_lost_chip_hours": _r(r.summary.low_priority_lost_chip_hours),
        "utilization": round(r.summary.utilization, 4),
        "force_deletes": r.cluster.force_deletes,
        "unsafe_force_deletes": r.cluster.unsafe_force_deletes,
    }


def _maintenance(r: Result) -> dict[str, float | int | None]:
    """High-priority downtime of one run: unplanned (GKE's drain, moves without an answer, anything
    else) and planned (moves at a checkpoint), see ``tpu_platform.sim.downtime``."""
    d = r.downtime
    assert d is not None
    return {
        "unplanned_downtime_s": round(d.unplanned_s, 1),
        "planned_downtime_s": round(d.planned_s, 1),
        "moves_at_checkpoint": d.planned_moves,
        "moves_at_deadline": d.unplanned_moves,
        "low_priority_lost_chip_hours": _r(r.summary.low_priority_lost_chip_hours),
    }


def _hotswap_variant(
    base: Scenario, settings: dict[str, Any], timings: dict[str, Any] | None = None
) -> Result:
    """The hotswap controller alone on ``base``'s trace with these settings and timings on top."""
    scenario = replace(
        base,
        settings=settings_from_mapping({**base.settings.to_dict(), **settings}),
        timings=base.timings.with_overrides(timings or {}),
    )
    return run(scenario, Hotswap(scenario.settings))


def _episode_percentiles(r: Result, kind: str) -> dict[str, float | int | None]:
    """Pods Running p50/p95 over the run's episodes of ``kind``."""
    eps = [e.seconds for e in r.metrics.episodes if e.kind == kind and e.seconds is not None]
    return {"mttr_p50_s": _r(percentile(eps, 50)), "mttr_p95_s": _r(percentile(eps, 95))}


def _maintenance_ablation(k: KindRun) -> dict[str, float | int | None]:
    """The hotswap controller on the maintenance trace with maintenance-aware moves off."""
    progress = Progress()
    progress.step("maintenance: hotswap without maintenance-aware moves ...")
    r = _hotswap_variant(k.scenario, {"maintenance_moves": False})
    progress.done()
    out = _maintenance(r)
    _row("  hotswap, moves off: unplanned (s)", [out["unplanned_downtime_s"]])
    _row("  hotswap, moves off: low lost (chip-h)", [out["low_priority_lost_chip_hours"]])
    return out


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
    _row("", POLICIES)
    eps = {n: [e for e in r.metrics.episodes if e.kind == k.kind] for n, r in res.items()}
    _row("high-priority JobSets touched", [len(eps[n]) for n in POLICIES])
    _row("  interrupted", [sum(1 for e in eps[n] if e.interrupted is not None) for n in POLICIES])
    _row("  not recovered by the end", [sum(1 for e in eps[n] if e.end is None) for n in POLICIES])
    _row("  longer than 15 min", [sum(1 for e in eps[n] if (e.seconds or 0) > 900) for n in POLICIES])
    for key, label in (
        ("mttr_p50_s", "pods Running p50 (s)"),
        ("mttr_p95_s", "pods Running p95 (s)"),
        ("resumed_p50_s", "training resumed p50 (s)"),
    ):
        _row(label, [_p(res[n], k.kind)[key] for n in POLICIES])
    by: dict[str, dict[str, list[float]]] = {}
    for n in POLICIES:
        for e in eps[n]:
            if e.seconds is not None:
                label = e.restart_strategy + (" + pfp" if e.pod_failure_policy else "")
                by.setdefault(label, {}).setdefault(n, []).append(e.seconds)
    for label, groups in sorted(by.items()):
        _row(
            f"  p50 {label}",
            [f"{_r(percentile(groups.get(n, []), 50))} (n={len(groups.get(n, []))})" for n in POLICIES],
        )
    _row("lower-priority lost (chip-h)", [_r(res[n].summary.low_priority_lost_chip_hours) for n in POLICIES])
    _row("high-priority lost (chip-h)", [_r(res[n].summary.high_priority_lost_chip_hours) for n in POLICIES])
    _row("utilization (productive)", [f"{res[n].summary.utilization:.4f}" for n in POLICIES])
    _row("leaders placed on broken slices", [res[n].summary.hazards for n in POLICIES])
    _row("force deletions", [res[n].cluster.force_deletes for n in POLICIES])
    _row("  of a pod whose VM still ran", [res[n].cluster.unsafe_force_deletes for n in POLICIES])
    _row("JobSet restarts", [res[n].summary.restarts for n in POLICIES])
    _row("  counted against maxRestarts", [res[n].metrics.counted_restarts for n in POLICIES])
    _row("  JobSets failed (maxRestarts)", [res[n].metrics.failed_workloads for n in POLICIES])
    kinds = sorted({key for n in POLICIES for key in res[n].summary.preemptions})
    for kind in kinds:
        _row(f"preemptions by {kind}", [res[n].summary.preemptions.get(kind, 0) for n in POLICIES])
    if k.kind == MAINTENANCE:
        m = {n: _maintenance(res[n]) for n in POLICIES}
        _row("high-priority unplanned downtime (s)", [m[n]["unplanned_downtime_s"] for n in POLICIES])
        _row("  planned moves at a checkpoint (s)", [m[n]["planned_downtime_s"] for n in POLICIES])
        _row(
            "  moves at a checkpoint / deadline",
            [f"{m[n]['moves_at_checkpoint']} / {m[n]['moves_at_deadline']}" for n in POLICIES],
        )
    _row("simulated in (s)", [f"{res[n].wall_s:.1f}" for n in POLICIES])


_NEITHER = {"lease_stale_seconds": 0, "compute_corroboration": False}
_BOTH = {"lease_stale_seconds": 20, "compute_corroboration": True}
ABLATION: tuple[tuple[str, dict[str, Any], dict[str, Any]], ...] = (
    ("NotReady + confirm (default)", _NEITHER, {}),
    ("+ Lease signal", {**_NEITHER, "lease_stale_seconds": 20}, {}),
    ("+ Compute Engine corroboration", {**_NEITHER, "compute_corroboration": True}, {}),
    ("+ both", _BOTH, {}),
    ("+ both, Compute status 120 s late", _BOTH, {"compute_status_lag_s": 120.0}),
    ("+ both, 50% Compute API errors", _BOTH, {"compute_api_error_rate": 0.5}),
)
"""Mechanism label, controller settings on top of the run's, timings on top of the run's. Every row
sets both mechanisms explicitly: a stack that already turns one on (prod: corroboration) would
otherwise make its "off" rows the same as its "on" rows."""
ABLATION_KINDS = (HOST_DEATH, KUBELET_RESTART)


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


def _ablation(runs: dict[str, KindRun]) -> dict[str, dict[str, dict[str, float | int | None]]]:
    """The hotswap controller alone, per mechanism, on the traces already run (same trace, same seed)."""
    out: dict[str, dict[str, dict[str, float | int | None]]] = {}
    progress = Progress()
    for label, settings, timings in ABLATION:
        out[label] = {}
        for kind in ABLATION_KINDS:
            if kind not in runs:
                continue
            progress.step(f"ablation: {label} on {kind} ...")
            r = _hotswap_variant(runs[kind].scenario, settings, timings)
            out[label][kind] = {
                **_episode_percentiles(r, kind),
                "force_deletes": r.cluster.force_deletes,
                "unsafe_force_deletes": r.cluster.unsafe_force_deletes,
            }
    progress.done()
    print("\n== ablation: early detection, hotswap controller only (same traces)")
    kinds = [k for k in ABLATION_KINDS if k in runs]
    _row("", [f"{k} p50/p95 (s)" for k in kinds] + [f"{k} unsafe/forced" for k in kinds], width=26)
    for label, by_kind in out.items():
        _row(
            label,
            [f"{by_kind[k]['mttr_p50_s']} / {by_kind[k]['mttr_p95_s']}" for k in kinds]
            + [f"{by_kind[k]['unsafe_force_deletes']} / {by_kind[k]['force_deletes']}" for k in kinds],
            width=26,
        )
    return out


CHIP_SIGNALS: tuple[tuple[str, dict[str, Any], dict[str, Any]], ...] = (
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


def _declared(r: Result) -> int:
    """Pools the controller declared unhealthy in the run (each taint interval once)."""
    return len(r.controller.tainted) if r.controller is not None else 0


def _chip_signals(runs: dict[str, KindRun]) -> dict[str, dict[str, dict[str, float | int | None]]]:
    """The hotswap controller alone on the chip-error trace and on the software-crash trace (healthy
    hardware: every pool it declares there is a false declaration), per signal configuration."""
    out: dict[str, dict[str, dict[str, float | int | None]]] = {}
    progress = Progress()
    for label, settings, timings in CHIP_SIGNALS:
        out[label] = {}
        for kind in (CHIP_ERROR, WORKLOAD_CRASH):
            if kind not in runs:
                continue
            progress.step(f"chip signals: {label} on {kind} ...")
            r = _hotswap_variant(runs[kind].scenario, settings, timings)
            out[label][kind] = {
                **_episode_percentiles(r, kind),
                "pools_declared": _declared(r),
            }
    progress.done()
    print("\n== chip/ICI failure signals, hotswap controller only (same traces)")
    kinds = [k for k in (CHIP_ERROR, WORKLOAD_CRASH) if k in runs]
    _row("", [f"{k} p50/p95 (s)" for k in kinds] + [f"{k} pools declared" for k in kinds], width=26)
    for label, by_kind in out.items():
        _row(
            label,
            [f"{by_kind[k]['mttr_p50_s']} / {by_kind[k]['mttr_p95_s']}" for k in kinds]
            + [str(by_kind[k]["pools_declared"]) for k in kinds],
            width=26,
        )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    days = args.days if args.days is not None else (4.0 if args.quick else 60.0)
    kind_days = args.kind_days if args.kind_days is not None else (2.0 if args.quick else 20.0)
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
    if not args.no_sensitivity:
        sens = _run_kind(HOST_DEATH, args.stack, kind_days, args, {**timings, "repair_replaces_nodes": False})
        sens.kind = HOST_DEATH
        print("\n== sensitivity: GKE keeps the Node objects through a repair (the same names go Ready again)")
        _details(sens)
        base = _run_kind(HOST_DEATH, args.stack, kind_days, args, timings) if kind_days != days else main_run
        _row(
            "  pods Running p50, nodes replaced",
            [_p(base.results[n], HOST_DEATH)["mttr_p50_s"] for n in POLICIES],
        )
        _row(
            "  pods Running p50, nodes kept",
            [_p(sens.results[n], HOST_DEATH)["mttr_p50_s"] for n in POLICIES],
        )
    if args.timeline > 0:
        _timelines(main_run, args.timeline)
    ablation: dict[str, dict[str, dict[str, float | int | None]]] = {}
    if not args.no_ablation:
        if KUBELET_RESTART not in runs:
            runs[KUBELET_RESTART] = _run_kind(KUBELET_RESTART, args.stack, kind_days, args, timings)
            _details(runs[KUBELET_RESTART])
        ablation = _ablation(runs)
    chip_signals: dict[str, dict[str, dict[str, float | int | None]]] = {}
    if not args.no_chip_signals and CHIP_ERROR in runs:
        chip_signals = _chip_signals(runs)
    false_declarations = (
        _declared(runs[WORKLOAD_CRASH].results["hotswap"]) if WORKLOAD_CRASH in runs else None
    )
    if false_declarations is not None:
        print(
            f"\npools declared unhealthy on healthy hardware (software crashes), hotswap: "
            f"{false_declarations}"
        )
    maintenance: dict[str, Any] = {}
    if MAINTENANCE in runs:
        maintenance = {n: _maintenance(runs[MAINTENANCE].results[n]) for n in POLICIES}
        print("\n== maintenance-aware moves, hotswap controller only (same trace)")
        maintenance["hotswap_moves_off"] = _maintenance_ablation(runs[MAINTENANCE])
    unsafe = sum(r.cluster.unsafe_force_deletes for k in runs.values() for r in k.results.values()) + sum(
        int(a["unsafe_force_deletes"] or 0) for by_kind in ablation.values() for a in by_kind.values()
    )
    print(f"\nforce deletions of a pod whose VM still ran, all runs: {unsafe}")
    print(f"\nbenchmark wall time {time.perf_counter() - started:.0f} s")
    print(
        json.dumps(
            {
                "policies": {n: _p(main_run.results[n], HOST_DEATH) for n in POLICIES},
                "floor_s": round(floor_seconds(t, HOST_DEATH), 1),
                "by_kind": {k: {n: _p(r.results[n], k) for n in POLICIES} for k, r in runs.items()},
                "ablation": ablation,
                "chip_signals": chip_signals,
                "false_declarations": false_declarations,
                "unsafe_force_deletes": unsafe,
                "maintenance": maintenance,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
