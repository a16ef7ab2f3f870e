"""``tpu-platform whatif <stack>``: what happens to this stack's work if a slice fails?

Builds the stack's fleet and queues, a plausible workload mix (or the JobSets of ``--workloads``),
fails one node at ``--at`` seconds, and runs the guide's recipe, the ``kueue_tas`` setup and the hotswap
controller on the same trace, once per seed over ``--draws`` consecutive seeds from ``--seed``. Prints,
as p50 with the p95 beside it, when every high-priority JobSet hit has its pods Running again and is
back where it was (which depends on the checkpoint interval), the work lower-priority JobSets lost, and
writes a timeline picture of the first seed's draw (one row per policy, zoomed around the incident,
only the slices that change). A controller without Compute Engine corroboration gets one more line: the
same draws with it, and the key that turns it on (``tpu_platform.sim.without_compute``).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tpu_platform.config import PlatformConfig
    from tpu_platform.sim.draws import Draw, Sample
    from tpu_platform.sim.model import WorkloadSpec
    from tpu_platform.sim.run import Result, Scenario
    from tpu_platform.terminal import Progress

HELP = (
    "simulate a slice failure in a stack: recovery and work lost under the recipe, Kueue's own recovery "
    "and the hotswap controller"
)

DEFAULT_DRAWS = 30
"""Seeds per run, measured on the dev and prod stacks: at 30 draws seeds 0-29 and 30-59 give p50s within
2 s and p95s within 6 s (at 20, 12 s apart); a p95 that falls between two recovery paths (hotswap on
dev: 106 s or 119 s) can flip between seed ranges until ~100 draws, which take over a minute on prod."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("stack", help="stack name (stacks/Pulumi.<STACK>.yaml)")
    parser.add_argument(
        "--fail",
        metavar="POOL",
        help="node pool (slice) that fails; default: the slice of the highest-priority running JobSet",
    )
    parser.add_argument(
        "--at", type=float, default=5400.0, metavar="SECONDS", help="failure time (default 5400)"
    )
    parser.add_argument(
        "--after",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help="simulate this long after it (default 3600)",
    )
    parser.add_argument(
        "--reboot",
        type=float,
        default=None,
        metavar="SECONDS",
        help="the node comes back by itself after this long (default: dead until GKE repairs the slice)",
    )
    parser.add_argument(
        "--workloads", type=Path, help="YAML file of JobSets to run instead of the stack's mix"
    )
    parser.add_argument(
        "--out", type=Path, default=Path("out"), help="folder for the timeline PNG (default out/)"
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="first seed of the scheduler's tie-breaks and repairs; the draws take consecutive seeds "
        "from it (default 0)",
    )
    parser.add_argument(
        "--draws",
        type=_draw_count,
        default=DEFAULT_DRAWS,
        metavar="N",
        help=f"seeded draws the p50 and p95 are taken over (default {DEFAULT_DRAWS})",
    )
    parser.add_argument(
        "--checkpoint-interval",
        type=_checkpoint_interval,
        default=None,
        metavar="DURATION",
        help="every JobSet checkpoints this often: a Go duration such as 10m or 1h30m, or seconds "
        "(default: each JobSet's own, one hour for the stack's mix)",
    )
    parser.add_argument("--stacks-dir", type=Path, default=None, help="folder of the stack files")
    parser.add_argument(
        "--worker", default=None, help="a fleet stack: the worker cluster to simulate (each runs on its own)"
    )


def _draw_count(text: str) -> int:
    """``--draws``: at least one, so there is a figure to print."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of draws >= 1, got {text!r}")
    return int(text)


def _checkpoint_interval(text: str) -> float:
    """``--checkpoint-interval`` in seconds: the Go durations a stack writes for Kueue's timeouts, or a
    plain number of seconds as ``--at`` takes; above zero and at most a year."""
    from tpu_platform.config.kueue import check_duration, duration_seconds

    value = f"{text}s" if text.replace(".", "", 1).isdigit() else text
    try:
        check_duration(value, "")
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"{str(err).strip()} (or a number of seconds)") from None
    seconds = duration_seconds(value)
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not longer than 0s")
    return seconds


def _duration(seconds: float | None) -> str:
    if seconds is None or math.isnan(seconds):
        return "-"
    m, s = divmod(round(seconds), 60)
    return f"{m}m{s:02d}s" if m else f"{s}s"


def one_cluster(cfg: PlatformConfig, worker: str | None) -> PlatformConfig:
    """The cluster to simulate: the stack's own, or a fleet's named worker (a slice failure and its
    recovery happen inside one worker; the manager runs no TPU)."""
    from tpu_platform.config import StackConfigError

    if cfg.fleet is None:
        if worker is not None:
            raise StackConfigError([f"--worker {worker}: not a fleet stack; leave --worker out"])
        return cfg
    names = [w.name for w in cfg.fleet.workers]
    chosen = next((w for w in cfg.fleet.workers if w.name == worker), None)
    if chosen is None:
        what = "a fleet stack simulates one worker at a time" if worker is None else f"no worker {worker!r}"
        raise StackConfigError([f"{what}: pass --worker with one of {', '.join(names)}"])
    return cfg.worker_platform(chosen)


def _workloads(cfg: PlatformConfig, args: argparse.Namespace) -> list[WorkloadSpec]:
    """The JobSets to run: the file's or the stack's mix, all at ``--checkpoint-interval`` if given."""
    from tpu_platform.sim.workload import load_workload_file, mix_from_stack

    specs = load_workload_file(args.workloads, cfg) if args.workloads else mix_from_stack(cfg)
    if args.checkpoint_interval is None:
        return specs
    return [replace(s, checkpoint_s=args.checkpoint_interval) for s in specs]


def _interval(seconds: float | None) -> str:
    return "never" if seconds is None else _duration(seconds)


def _checkpoint_line(specs: Sequence[WorkloadSpec], args: argparse.Namespace) -> str:
    """The checkpoint interval the run used and where it came from: it sets the work redone before
    training is back where it was, and every lost-work figure."""
    from tpu_platform.hotswap.core.constants import CHECKPOINT_INTERVAL_ANNOTATION
    from tpu_platform.sim.workload import HOUR

    if args.checkpoint_interval is not None:
        return f"checkpoint interval {_interval(args.checkpoint_interval)} (from --checkpoint-interval)"
    if args.workloads is None:
        return (
            f"checkpoint interval {_interval(HOUR)} (default: the stack's mix carries no "
            f"{CHECKPOINT_INTERVAL_ANNOTATION}; set it with --checkpoint-interval)"
        )
    values = {s.key: s.checkpoint_s for s in specs}
    shown = (
        _interval(next(iter(values.values())))
        if len(set(values.values())) == 1
        else ", ".join(f"{key} {_interval(v)}" for key, v in sorted(values.items()))
    )
    return (
        f"checkpoint interval {shown} (from each JobSet's annotation {CHECKPOINT_INTERVAL_ANNOTATION}: "
        f"checkpointSeconds in {args.workloads}, {_interval(HOUR)} where unset)"
    )


def run(args: argparse.Namespace) -> int:
    from tpu_platform.config import StackConfigError
    from tpu_platform.entry import entry_here, stack_platform
    from tpu_platform.hotswap.core import SettingsError
    from tpu_platform.plan.stacks import stack_file
    from tpu_platform.project import resolve_stack
    from tpu_platform.sim.run import POLICIES, stack_scenario
    from tpu_platform.sim.timeline import draw, windows_for
    from tpu_platform.sim.traces import Failure

    try:
        cfg = one_cluster(
            stack_platform(stack_file(args.stack, args.stacks_dir), entry_here())[1], args.worker
        )
        specs = _workloads(cfg, args)
        scenario = stack_scenario(cfg, end=args.at + args.after, seed=args.seed, workloads=specs)
    except StackConfigError as err:
        for problem in err.problems:
            print(f"whatif {args.stack}: {problem}", file=sys.stderr)
        return 2
    except (SettingsError, ValueError, OSError) as err:
        print(f"whatif {args.stack}: {err}", file=sys.stderr)
        return 2
    pools = {p.name: p for p in scenario.pools}
    node = ""
    if args.fail is not None:
        if args.fail not in pools:
            print(
                f"whatif {args.stack}: no node pool {args.fail!r}; pools: {', '.join(pools)}", file=sys.stderr
            )
            return 2
        node = f"{args.fail}-n{pools[args.fail].size - 1}"
    scenario = replace(scenario, trace=(Failure(args.at, node, back_after=args.reboot),))
    try:
        draws, first = _simulate(scenario, args.seed, args.draws)
    except ValueError as err:
        print(f"whatif {args.stack}: {err}", file=sys.stderr)
        return 2
    if draws[0].failed is None:
        print(
            f"whatif {args.stack}: nothing to fail at t={args.at:.0f}s (no JobSet running)", file=sys.stderr
        )
        return 2
    _print_setup(args, scenario, draws, _checkpoint_line(specs, args))
    _print_tables(draws)
    _print_without_compute(scenario, draws, kubeconfig=cfg.cluster.reached_by_kubeconfig)
    ordered = [first[name] for name in POLICIES]
    path = args.out / f"whatif-{resolve_stack(args.stack, args.stacks_dir).name}.png"
    titles = {
        "recipe": "the guide's recipe (scheduler only)",
        "kueue_tas": "Kueue 0.19 TAS + FailFast + FailureRecoveryPolicy",
        "hotswap": "hotswap controller",
    }
    draw(ordered, path, windows=windows_for(ordered), titles=[titles[n] for n in POLICIES])
    print()
    print(f"timeline: {path} (the draw of seed {args.seed})")
    return 0


def _simulate(scenario: Scenario, first: int, count: int) -> tuple[list[Draw], dict[str, Result]]:
    """Every draw reduced to its figures, and the full runs of the first one (for the picture)."""
    from tpu_platform.sim import draws
    from tpu_platform.terminal import Progress

    progress = Progress()
    out: list[Draw] = []
    kept: dict[str, Result] = {}
    for i, seed in enumerate(draws.seeds(first, count), start=1):
        d, results = draws.draw(scenario, seed, on_policy=_stepper(progress, f"seed {seed} ({i}/{count})"))
        out.append(d)
        if not kept:
            kept = results
    progress.done()
    return out, kept


def _print_without_compute(scenario: Scenario, draws: Sequence[Draw], *, kubeconfig: bool) -> None:
    """What the controller as configured loses for lack of Compute Engine corroboration, if it does."""
    from tpu_platform.sim.without_compute import lacks_corroboration, lost_line, with_corroboration
    from tpu_platform.terminal import Progress

    if not lacks_corroboration(scenario.settings):
        return
    progress = Progress()
    corroborated = []
    for i, d in enumerate(draws, start=1):
        progress.step(f"seed {d.seed} ({i}/{len(draws)}): hotswap with Compute Engine corroboration ...")
        corroborated.append(with_corroboration(scenario, d.seed))
    progress.done()
    print(f"  {lost_line(draws, corroborated, _spread, kubeconfig=kubeconfig)}")


def _stepper(progress: Progress, prefix: str) -> Callable[[str], None]:
    return lambda name: progress.step(f"{prefix}: {name} ...")


def _seed_range(draws: Sequence[Draw]) -> str:
    if len(draws) == 1:
        return f"1 seeded draw, seed {draws[0].seed}"
    return f"{len(draws)} seeded draws, seeds {draws[0].seed}-{draws[-1].seed}"


def _failed_where(draws: Sequence[Draw]) -> str:
    """The node that failed, or, when it differs by seed (the top JobSet's slice does), each one's count."""
    counts = Counter(d.failed for d in draws if d.failed is not None)
    if len(counts) == 1:
        node, pool = next(iter(counts))
        return f"node {node} of slice {pool}"
    each = [f"{node} in {n}" for (node, _), n in counts.most_common()]
    return f"a node of the top JobSet's slice ({each[0]} draws, {', '.join(each[1:])})"


def _print_setup(
    args: argparse.Namespace, scenario: Scenario, draws: Sequence[Draw], checkpoint: str
) -> None:
    from tpu_platform.sim.failures import HOST_DEATH
    from tpu_platform.sim.params import floor_seconds, restart_seconds

    t = scenario.timings
    chips = sum(p.chips for p in scenario.pools)
    print(
        f"stack {args.stack}: {len(scenario.pools)} slices ({chips} chips), "
        f"{len(scenario.workloads)} JobSets; {_failed_where(draws)} fails at t={args.at:.0f}s"
        + (f" and reboots after {args.reboot:.0f}s" if args.reboot else ", dead until GKE repairs the slice")
    )
    print(
        f"floor {floor_seconds(t, HOST_DEATH):.0f}s = NotReady {t.node_monitor_grace_s:.0f}s + one "
        f"unobstructed restart {restart_seconds(t):.0f}s (a victim's drain, new Jobs, scheduling, container "
        f"start); training resumes {t.compile_s + t.restore_s:.0f}s later (compile + restore) and then "
        "redoes the work since its last checkpoint"
    )
    print(checkpoint)
    print(
        f"over {_seed_range(draws)} (the seed moves the scheduler's tie-breaks, the dead VM's fate and "
        "the repair): each figure is the p50, the p95 beside it in brackets"
    )


def _spread(samples: Sequence[Sample]) -> str:
    """``p50 (p95)``; a quantile above every recovered draw is a lower bound (``>``)."""
    from tpu_platform.sim.draws import p50_p95

    # compared at the printed resolution: interpolating between equal draws can add a rounding error
    recovered = [round(s.seconds) for s in samples if not s.open]
    unrecovered = len(recovered) < len(samples)

    def one(q: float) -> str:
        bound = unrecovered and (not recovered or round(q) > max(recovered))
        return f">{_duration(q)}" if bound else _duration(q)

    p50, p95 = p50_p95([s.seconds for s in samples])
    return f"{one(p50)} ({one(p95)})"


Rows = list[tuple[str, list[str]]]


def _print_table(title: str, rows: Rows, notes: Sequence[str], width: int) -> None:
    from tpu_platform.sim.run import POLICIES

    print()
    print(f"{title:48}" + "".join(f"{n:>{width}}" for n in POLICIES))
    for label, cells in rows:
        print(f"  {label:46}" + "".join(f"{c:>{width}}" for c in cells))
    for note in notes:
        print(f"  ({note})")


def _print_tables(draws: Sequence[Draw]) -> None:
    """Recovery of the high-priority JobSets hit, then the work lower-priority ones lost, in one grid."""
    recovery, recovery_notes = _recovery_rows(draws)
    losses = _loss_rows(draws)
    width = max(22, *(len(c) + 2 for _, cells in recovery + losses for c in cells))
    _print_table("high-priority JobSets hit: pods Running", recovery, recovery_notes, width)
    _print_table("work lost by lower-priority JobSets (chip-h)", losses, [] if losses else ["none"], width)
    _print_loss_totals(draws)


def _recovery_cell(draws: Sequence[Draw], policy: str, key: str, *, resumed: bool) -> str:
    figures = [d.policies[policy] for d in draws]
    samples = [(f.resumed if resumed else f.running)[key] for f in figures if key in f.running]
    return _spread(samples) if samples else "not hit"


def _hit_note(draws: Sequence[Draw], key: str) -> str:
    """Where ``key`` was hit in only some draws (the failed slice ran another JobSet in the others)."""
    from tpu_platform.sim.run import POLICIES

    hits = {n: sum(1 for d in draws if key in d.policies[n].running) for n in POLICIES}
    if all(h == len(draws) for h in hits.values()):
        return ""
    each = ", ".join(f"{h} ({n})" for n, h in hits.items())
    return f"{key} hit in {each} of {len(draws)} draws; its figures are over the draws that hit it"


def _range_note(draws: Sequence[Draw], key: str) -> str:
    """The fastest and slowest draw of each policy: a percentile hides a fast tail (the recipe's
    restart is quick in the draws where the dead VM's pods go at once)."""
    from tpu_platform.sim.run import POLICIES

    spans = []
    for n in POLICIES:
        seconds = [d.policies[n].running[key].seconds for d in draws if key in d.policies[n].running]
        if seconds:
            spans.append(f"{n} {_duration(min(seconds))}-{_duration(max(seconds))}")
    return f"{key} pods Running, fastest-slowest draw: {', '.join(spans)}"


def _recovery_rows(draws: Sequence[Draw]) -> tuple[Rows, list[str]]:
    from tpu_platform.sim.run import POLICIES

    keys = sorted({k for d in draws for f in d.policies.values() for k in f.running})
    rows: Rows = [(key, [_recovery_cell(draws, n, key, resumed=False) for n in POLICIES]) for key in keys]
    back = [_recovery_cell(draws, n, keys[0], resumed=True) if keys else "-" for n in POLICIES]
    rows.append(("training back where it was", back))
    notes = [note for key in keys if (note := _hit_note(draws, key))]
    notes += [_range_note(draws, key) for key in keys]
    if not keys:
        notes.append("none: the failed slice ran no high-priority JobSet")
    return rows, notes


def _lost_cell(draws: Sequence[Draw], policy: str, key: str) -> str:
    from tpu_platform.sim.draws import p50_p95

    figures = [d.policies[policy] for d in draws]
    causes = sorted({c for f in figures for c in f.causes.get(key, ())})
    if not causes:
        return "0.0"
    p50, p95 = p50_p95([f.lost.get(key, 0.0) for f in figures])
    return f"{p50:.1f} ({p95:.1f}) {'/'.join(causes)}"


def _loss_rows(draws: Sequence[Draw]) -> Rows:
    from tpu_platform.sim.run import POLICIES

    victims = sorted({k for d in draws for f in d.policies.values() for k in f.lost})
    return [(key, [_lost_cell(draws, n, key) for n in POLICIES]) for key in victims]


def _print_loss_totals(draws: Sequence[Draw]) -> None:
    from tpu_platform.sim.draws import p50_p95
    from tpu_platform.sim.run import POLICIES

    for n in POLICIES:
        figures = [d.policies[n] for d in draws]
        total = p50_p95([f.lost_total for f in figures])
        preempted = p50_p95([f.lost_preempted for f in figures])
        hazards = sum(f.hazards for f in figures)
        print(
            f"  {n}: {total[0]:.1f} ({total[1]:.1f}) chip-h lost, {preempted[0]:.1f} ({preempted[1]:.1f}) "
            f"by preemption; {hazards} leader(s) placed on a broken slice in {len(draws)} draws"
        )
