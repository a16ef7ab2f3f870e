"""Time of the offline plan (``tpu_platform.commands.plan.render_plan``) for a large stack.

The stack is generated into a temporary folder: ``--slices`` slices (three quarters 4x4, the rest
8x8), ``--teams`` teams in cohorts of ten, each team guaranteed whole slices so that the nominal quotas
add up to exactly the slices there are (a valid stack: nothing overcommitted), with borrowing limits
inside each cohort, and three priorities. The first render includes imports and Pulumi's mock
start-up; the rest are steady-state.

    python bench/plan.py            # 50 teams, 64 slices, 5 renders
    python bench/plan.py --quick    # 2 renders
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from tpu_platform.plan.stacks import load_stack_config, parse_stack_config, stack_file
from tpu_platform.slices import expand_slices

STACK = "bench"


def big_stack(teams: int, slices: int) -> dict[str, Any]:
    """A valid stack config map with ``teams`` teams sharing ``slices`` slices."""
    if teams < 1 or slices < 2:
        raise ValueError("need at least one team and two slices")
    small = max(1, slices * 3 // 4)
    large = slices - small
    shapes = [("4x4", small)] + ([("8x8", large)] if large else [])
    quota: list[dict[str, list[dict[str, Any]]]] = [{"quota": []} for _ in range(teams)]
    for topology, count in shapes:
        for i in range(count):
            entries = quota[i % teams]["quota"]
            entry = next((e for e in entries if e["topology"] == topology), None)
            if entry is None:
                entries.append({"topology": topology, "slices": 1})
            else:
                entry["slices"] += 1
    cohorts = [f"cohort-{j}" for j in range((teams + 9) // 10)]
    team_docs = []
    for i in range(teams):
        entries = quota[i]["quota"] or [{"topology": "4x4", "slices": 0}]
        for e in entries:
            e["borrowingLimitSlices"] = 2
        team_docs.append(
            {
                "name": f"team-{i:03d}",
                "cohortName": cohorts[i // 10],
                "quota": entries,
                "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
            }
        )
    return {
        "gcp:project": "bench-project",
        "gcp:region": "us-east5",
        "gcp:zone": "us-east5-b",
        "tpu-platform:cluster": {"name": "tpu-bench"},
        "tpu-platform:slicePools": [
            {"name": f"pool-{topology}", "topology": topology, "count": count} for topology, count in shapes
        ],
        "tpu-platform:priorities": [
            {"name": "low-priority-job", "value": 1_000_000},
            {"name": "medium-priority-job", "value": 1_500_000},
            {"name": "high-priority-job", "value": 2_000_000},
        ],
        "tpu-platform:cohorts": [{"name": c} for c in cohorts],
        "tpu-platform:teams": team_docs,
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="2 renders instead of 5")
    p.add_argument("--teams", type=int, default=50)
    p.add_argument("--slices", type=int, default=64)
    p.add_argument("--renders", type=int)
    args = p.parse_args(argv)
    renders = args.renders or (2 if args.quick else 5)
    with tempfile.TemporaryDirectory() as tmp:
        stacks_dir = Path(tmp)
        stack_file(STACK, stacks_dir).write_text(
            yaml.safe_dump({"config": big_stack(args.teams, args.slices)})
        )
        t0 = time.perf_counter()
        cfg = parse_stack_config(load_stack_config(stack_file(STACK, stacks_dir)))
        validate_s = time.perf_counter() - t0
        from tpu_platform.commands.plan import render_plan

        times = []
        text = ""
        for _ in range(renders):
            t0 = time.perf_counter()
            text, _summary = render_plan(STACK, stacks_dir)
            times.append(time.perf_counter() - t0)
    doc = yaml.safe_load(text)
    resources = len(doc.get("resources", [])) if isinstance(doc, dict) else 0
    steady = times[1:] or times
    result = {
        "teams": len(cfg.teams),
        "slices": len(expand_slices(cfg)),
        "resources": resources,
        "plan_kib": round(len(text.encode()) / 1024, 1),
        "validate_s": round(validate_s, 3),
        "render_first_s": round(times[0], 3),
        "render_p50_s": round(statistics.median(steady), 3),
        "renders": renders,
    }
    print(
        f"{result['teams']} teams, {result['slices']} slices: {resources} resources, "
        f"{result['plan_kib']} KiB plan; "
        f"validate {result['validate_s']} s, first render {result['render_first_s']} s, "
        f"then p50 {result['render_p50_s']} s over {len(steady)} render(s)"
    )
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
