"""Time and peak memory of one controller reconcile (``tpu_platform.hotswap.core.decide``) as the fleet grows.

Each size is a busy fleet of 4x4 slices (4 nodes each, one pod per node): a quarter of the slices run
high-priority JobSets, some of them two-slice, the rest low-priority ones. On top, *incidents*: a slice
that has just lost a node (NotReady past T_bad and the dead-node confirmation, so this reconcile taints
the pool, evicts and force-deletes) and a high-priority JobSet whose leader has been unschedulable for
20 s (so the preemption planner searches victims). Two series: one incident per 64 slices (incidents
grow with the fleet, as failures do) and a single incident at every size. The snapshot is built once
per size; only ``decide`` is timed.

    python bench/reconcile.py            # 16, 256, 1024 slices, 200 runs each
    python bench/reconcile.py --quick    # 30 runs each
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import statistics
import time
import tracemalloc
from collections.abc import Sequence

from tpu_platform.hotswap.core import Node, Pod, Settings, Snapshot, decide
from tpu_platform.testing.hotswap_builders import (
    fail_node,
    make_jobset,
    make_nodes,
    make_pools,
    pending_pods,
    running_pods,
)

HIGH = 2_000_000
LOW = 1_000_000
NOW = 100_000.0


def busy_fleet(slices: int, incidents: int) -> Snapshot:
    """The fleet described in the module docstring."""
    pools = make_pools("pool", slices, "4x4")
    nodes = {p.name: make_nodes(p, ready_since=0.0) for p in pools}
    jobsets = []
    pods: list[Pod] = []
    i = 0
    n = 0
    while i < slices:
        high = n % 4 == 0
        width = 2 if high and n % 8 == 0 and i + 1 < slices else 1
        js = make_jobset(
            f"js-{n:05d}",
            priority=HIGH if high else LOW,
            slices=width,
            running_since=NOW - 3600.0 - 10.0 * n,
            checkpoint_interval=3600.0,
        )
        jobsets.append(js)
        pods.extend(running_pods(js, pools[i : i + width], nodes, started=NOW - 3600.0 - 10.0 * n))
        i += width
        n += 1
    for j in range(incidents):
        waiting = make_jobset(f"waiting-{j:04d}", priority=HIGH + 1, created=NOW - 60.0)
        jobsets.append(waiting)
        pods.extend(pending_pods(waiting, unschedulable_since=NOW - 20.0))
    all_nodes: list[Node] = [x for p in pools for x in nodes[p.name]]
    for j in range(incidents):
        k = (j * slices // incidents) * 4 + 1
        all_nodes[k] = fail_node(all_nodes[k], NOW - 75.0)
    return Snapshot(now=NOW, pools=pools, nodes=tuple(all_nodes), jobsets=tuple(jobsets), pods=tuple(pods))


def measure(slices: int, incidents: int, runs: int, settings: Settings) -> dict[str, float | int]:
    snap = busy_fleet(slices, incidents)
    decision = decide(snap, settings)
    times = []
    gc.collect()
    for _ in range(runs):
        t0 = time.perf_counter()
        decide(snap, settings)
        times.append((time.perf_counter() - t0) * 1000.0)
    tracemalloc.start()
    decide(snap, settings)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    times.sort()
    return {
        "slices": slices,
        "nodes": len(snap.nodes),
        "pods": len(snap.pods),
        "incidents": incidents,
        "actions": len(decision.actions),
        "reconcile_ms_p50": round(statistics.median(times), 3),
        "reconcile_ms_p99": round(times[min(len(times) - 1, int(0.99 * len(times)))], 3),
        "peak_mib": round(peak / 2**20, 3),
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="30 runs per size instead of 200")
    p.add_argument("--sizes", type=int, nargs="+", default=[16, 256, 1024], help="slices per fleet")
    p.add_argument("--runs", type=int, help="timed runs per size")
    p.add_argument(
        "--no-preemption", action="store_true", help="turn the preemption planner off (to see its share)"
    )
    args = p.parse_args(argv)
    runs = args.runs or (30 if args.quick else 200)
    settings = Settings(preemption=not args.no_preemption)
    series = {
        "one incident per 64 slices": [measure(n, max(1, n // 64), runs, settings) for n in args.sizes],
        "a single incident": [measure(n, 1, runs, settings) for n in args.sizes],
    }
    for title, results in series.items():
        print(f"{title}:")
        print(
            f"{'slices':>7} {'nodes':>7} {'pods':>7} {'incid.':>7} {'actions':>8} {'p50 ms':>9} "
            f"{'p99 ms':>9} {'peak MiB':>9} {'us/node':>8}"
        )
        for r in results:
            per_node = 1000.0 * float(r["reconcile_ms_p50"]) / int(r["nodes"])
            print(
                f"{r['slices']:>7} {r['nodes']:>7} {r['pods']:>7} {r['incidents']:>7} {r['actions']:>8} "
                f"{r['reconcile_ms_p50']:>9} {r['reconcile_ms_p99']:>9} {r['peak_mib']:>9} {per_node:>8.2f}"
            )
        for a, b in itertools.pairwise(results):
            size = int(b["nodes"]) / int(a["nodes"])
            cost = float(b["reconcile_ms_p50"]) / float(a["reconcile_ms_p50"])
            print(f"  {a['slices']} -> {b['slices']} slices: {size:.0f}x the nodes, {cost:.1f}x the time")
    keys = ("slices", "nodes", "pods", "reconcile_ms_p50", "reconcile_ms_p99", "peak_mib")
    grow, single = series.values()
    print(
        json.dumps(
            {
                "runs": [{k: r[k] for k in keys} for r in grow],
                "runs_single_incident": [{k: r[k] for k in keys} for r in single],
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
