"""``tpu-platform whatif <stack>``: what happens to this stack's work if a slice fails?

Builds the stack's fleet and queues, a plausible workload mix (or the JobSets of ``--workloads``),
fails one node at ``--at`` seconds, and runs the guide's recipe, the ``kueue_tas`` setup and the hotswap
controller on the same trace. Prints when every high-priority JobSet hit has its pods Running again
and is back where it was, the work lower-priority JobSets lost, and writes a timeline picture (one
row per policy, zoomed around the incident, only the slices that change).
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tpu_platform.config import PlatformConfig
    from tpu_platform.sim.run import Result

HELP = (
    "simulate a slice failure in a stack: recovery and work lost under the recipe, Kueue's own recovery "
    "and the hotswap controller"
)


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
    parser.add_argument("--seed", type=int, default=0, help="seed of the scheduler's tie-breaks and repairs")
    parser.add_argument("--stacks-dir", type=Path, default=None, help="folder of the stack files")
    parser.add_argument(
        "--worker", default=None, help="a fleet stack: the worker cluster to simulate (each runs on its own)"
    )


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


def run(args: argparse.Namespace) -> int:
    from tpu_platform.config import StackConfigError
    from tpu_platform.hotswap.core import SettingsError
    from tpu_platform.plan.stacks import load_stack_config, parse_stack_config, stack_file
    from tpu_platform.project import resolve_stack
    from tpu_platform.sim.failures import HOST_DEATH
    from tpu_platform.sim.model import PREEMPTIONS
    from tpu_platform.sim.params import floor_seconds, restart_seconds
    from tpu_platform.sim.run import POLICIES, compare_all, stack_scenario
    from tpu_platform.sim.timeline import draw, windows_for
    from tpu_platform.sim.traces import Failure
    from tpu_platform.sim.workload import load_workload_file
    from tpu_platform.terminal import Progress

    try:
        cfg = one_cluster(
            parse_stack_config(load_stack_config(stack_file(args.stack, args.stacks_dir))),
            args.worker,
        )
        workloads = load_workload_file(args.workloads, cfg) if args.workloads else None
        scenario = stack_scenario(cfg, end=args.at + args.after, seed=args.seed, workloads=workloads)
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
    failure = Failure(args.at, node, back_after=args.reboot)
    scenario = replace(scenario, trace=(failure,))
    try:
        progress = Progress()
        results = compare_all(scenario, on_policy=lambda name: progress.step(f"simulating {name} ..."))
        progress.done()
    except ValueError as err:
        print(f"whatif {args.stack}: {err}", file=sys.stderr)
        return 2
    ordered = [results[name] for name in POLICIES]
    base = results["recipe"]

    t = scenario.timings
    end = args.at + args.after
    floor = floor_seconds(t, HOST_DEATH)
    hit = base.metrics.failures[0] if base.metrics.failures else None
    if hit is None:
        print(
            f"whatif {args.stack}: nothing to fail at t={args.at:.0f}s (no JobSet running)", file=sys.stderr
        )
        return 2
    chips = sum(p.chips for p in scenario.pools)
    print(
        f"stack {args.stack}: {len(scenario.pools)} slices ({chips} chips), "
        f"{len(scenario.workloads)} JobSets; "
        f"node {hit[1]} of slice {hit[2]} fails at t={args.at:.0f}s"
        + (f" and reboots after {args.reboot:.0f}s" if args.reboot else ", dead until GKE repairs the slice")
    )
    print(
        f"floor {floor:.0f}s = NotReady {t.node_monitor_grace_s:.0f}s + one unobstructed restart "
        f"{restart_seconds(t):.0f}s (a victim's drain, new Jobs, scheduling, container start); training "
        f"resumes {t.compile_s + t.restore_s:.0f}s later (compile + restore) and then redoes the work since "
        "its last checkpoint"
    )
    width = 22
    print()
    print(f"{'high-priority JobSets hit: pods Running':48}" + "".join(f"{n:>{width}}" for n in POLICIES))
    keys = sorted({e.workload for r in ordered for e in r.metrics.episodes})
    for key in keys:
        print(f"  {key:46}" + "".join(f"{_mttr(r, key, end):>{width}}" for r in ordered))
    print(
        f"{'  training back where it was':48}"
        + "".join(f"{_resumed(r, keys[0], end) if keys else '-':>{width}}" for r in ordered)
    )
    if not keys:
        print("  (none: the failed slice ran no high-priority JobSet)")
    print()
    print(f"{'work lost by lower-priority JobSets (chip-h)':48}" + "".join(f"{n:>{width}}" for n in POLICIES))
    top = scenario.top_priority
    victims = sorted({x.workload for r in ordered for x in r.metrics.losses if x.priority < top})
    for key in victims:
        print(f"  {key:46}" + "".join(f"{_lost(r, key):>{width}}" for r in ordered))
    if not victims:
        print("  (none)")
    for r in ordered:
        pre = sum(v for cause, v in r.summary.lost_chip_hours.items() if cause in PREEMPTIONS)
        print(
            f"  {r.policy}: {r.summary.low_priority_lost_chip_hours:.1f} chip-h lost "
            f"({pre:.1f} by preemption), {r.summary.hazards} leader(s) placed on a broken slice"
        )
    path = args.out / f"whatif-{resolve_stack(args.stack, args.stacks_dir).name}.png"
    titles = {
        "recipe": "the guide's recipe (scheduler only)",
        "kueue_tas": "Kueue 0.19 TAS + FailFast + FailureRecoveryPolicy",
        "hotswap": "hotswap controller",
    }
    draw(ordered, path, windows=windows_for(ordered), titles=[titles[n] for n in POLICIES])
    print()
    print(f"timeline: {path}")
    return 0


def _resumed(r: Result, key: str, end: float) -> str:
    eps = [e for e in r.metrics.episodes if e.workload == key]
    if not eps:
        return "not hit"
    if any(e.end is None for e in eps):
        return f">{_duration(end - eps[0].start)}"
    return _duration(sum(e.resumed_seconds or 0.0 for e in eps))


def _mttr(r: Result, key: str, end: float) -> str:
    eps = [e for e in r.metrics.episodes if e.workload == key]
    if not eps:
        return "not hit"
    if any(e.end is None for e in eps):
        return f">{_duration(end - eps[0].start)}"
    return _duration(sum(e.seconds or 0.0 for e in eps))


def _lost(r: Result, key: str) -> str:
    mine = [x for x in r.metrics.losses if x.workload == key]
    if not mine:
        return "0.0"
    causes = sorted({x.cause.removeprefix("preempted-by-") for x in mine})
    return f"{sum(x.chip_seconds for x in mine) / 3600:.1f} {'/'.join(causes)}"
