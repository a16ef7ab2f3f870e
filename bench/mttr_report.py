"""Markdown tables from a saved ``bench/mttr.py`` run, written between markers in the docs so every
figure there is regenerated from one run, never typed.

    .venv/bin/python bench/mttr.py --days 20 --kind-days 5 --range-days 5 > out/mttr.txt
    .venv/bin/python bench/mttr_report.py out/mttr.txt --write README.md docs/measured.md docs/benchmarks.md

A section is the text between ``<!-- mttr:NAME -->`` and ``<!-- /mttr:NAME -->``; NAME is one of
``SECTIONS``. The run's command and wall time come from its own output.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

COLUMNS = ("recipe", "kueue_tas", "kueue_tas_mid", "hotswap")
POLICIES = ("recipe", "kueue_tas", "hotswap")
TITLES = {
    "recipe": "recipe",
    "kueue_tas": "`kueue_tas` (strongest)",
    "kueue_tas_mid": "`kueue_tas` (mid)",
    "hotswap": "hotswap (the prod stack as shipped)",
}
DEFAULTS_TITLE = "hotswap, the component's defaults"
"""The first ablation row: the settings every stack gets unless it sets its own (no Lease signal)."""
KIND_TITLES = {
    "host_death": "silent host death",
    "chip_error": "chip/ICI error, kubelet alive",
    "kubelet_restart": "kubelet restart",
    "maintenance": "scheduled maintenance (7-day notice)",
    "spot_preemption": "Spot preemption (30 s notice)",
    "mass_event": "mass event (3 slices at once)",
    "workload_crash": "software crash, healthy hardware",
}
RUN_LINE = re.compile(
    r"^== (?P<kind>\w+) on (?P<stack>\w+): \d+ slices, (?P<days>[\d.]+) days, (?P<incidents>\d+) incidents.*"
    r"floor (?P<floor>\d+) s running"
)
MARKER = "<!-- mttr:{0} -->\n(.*?)<!-- /mttr:{0} -->"


def _s(x: Any) -> str:
    return "-" if x is None else f"{x} s"


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def headline(doc: dict[str, Any], runs: dict[str, dict[str, str]]) -> str:
    h = doc["headline"]
    base = next(iter(doc["ablation"].values()), None) if doc["ablation"] else None

    def row(label: str, cell: Callable[[dict[str, Any]], object], default: object = "-") -> list[object]:
        return [label, *(cell(h[c]) for c in COLUMNS), *([default] if base else [])]

    def span(r: dict[str, Any]) -> str:
        s = r["host_death_p50_range_s"]
        return "-" if s is None else f"{s[0]:.0f}-{s[1]:.0f} s"

    host = base.get("host_death", {}) if base else {}
    kubelet = base.get("kubelet_restart", {}) if base else {}
    return _table(
        ["", *(TITLES[c] for c in COLUMNS), *([DEFAULTS_TITLE] if base else [])],
        [
            row(
                "silent host death: pods Running p50 / p95",
                lambda r: f"{r['host_death_p50_s']} / {_s(r['host_death_p95_s'])}",
                f"{host.get('mttr_p50_s')} / {_s(host.get('mttr_p95_s'))}",
            ),
            row("  p50 over the chosen parameters' ranges", span),
            row(
                "kubelet restart: p50",
                lambda r: _s(r.get("kubelet_restart_p50_s")),
                _s(kubelet.get("mttr_p50_s")),
            ),
            row("  JobSets interrupted (false positives)", lambda r: r.get("kubelet_restart_interrupted")),
            row(
                "maintenance: high-priority downtime, planned moves included",
                lambda r: _s(r.get("maintenance_total_downtime_s")),
            ),
            row("chip/ICI error: p50", lambda r: _s(r.get("chip_error_p50_s"))),
            row("host death: lower-priority work lost (chip-h)", lambda r: r["low_priority_lost_chip_hours"]),
            row(
                "force deletions of a pod whose VM still ran (all kinds)",
                lambda r: r["unsafe_force_deletes"],
                f"{host.get('unsafe_force_deletes', 0) + kubelet.get('unsafe_force_deletes', 0)}"
                " (host death, kubelet restart)",
            ),
            row(
                "pools declared unhealthy on healthy hardware",
                lambda r: r["pools_declared_on_healthy_hardware"],
            ),
        ],
    )


def kinds(doc: dict[str, Any], runs: dict[str, dict[str, str]]) -> str:
    rows = []
    for kind, by in doc["by_kind"].items():
        run = runs.get(kind, {})
        label = (
            f"{KIND_TITLES.get(kind, kind)} ({run.get('stack')}, {run.get('days')} d, {run.get('incidents')})"
        )
        cells = {**by, "kueue_tas_mid": doc["kueue_tas_mid"][kind]}
        rows.append(
            [label]
            + [
                f"{p['mttr_p50_s']} / {p['mttr_p95_s']} s, {p['resumed_p50_s']} s"
                for p in (cells[c] for c in COLUMNS)
            ]
            + [f"{run.get('floor')} s"]
        )
    return _table(["failure kind (stack, days, incidents)", *(TITLES[c] for c in COLUMNS), "floor"], rows)


def sensitivity(doc: dict[str, Any], runs: dict[str, dict[str, str]]) -> str:
    defaults = {name: p["value"] for name, p in doc["parameters"].items()}
    rows = []
    for name, points in doc["sensitivity"].items():
        for value, by in points.items():
            mark = " (default)" if float(value) == float(defaults[name]) else ""
            rows.append(
                [f"`{name}` = {value}{mark}"]
                + [
                    f"{by[c]['mttr_p50_s']} / {by[c]['mttr_p95_s']} s ({by[c]['unsafe_force_deletes']})"
                    for c in POLICIES
                ]
            )
    return _table(["chosen parameter", *(TITLES[c] for c in POLICIES)], rows)


def ablation(doc: dict[str, Any], runs: dict[str, dict[str, str]]) -> str:
    rows = [
        [
            label,
            *(f"{a['mttr_p50_s']} / {a['mttr_p95_s']} s" for a in by.values()),
            *(f"{a['unsafe_force_deletes']} / {a['force_deletes']}" for a in by.values()),
        ]
        for label, by in doc["ablation"].items()
    ]
    kinds_ = list(next(iter(doc["ablation"].values())))
    return _table(
        ["mechanism", *(f"{k} p50 / p95" for k in kinds_), *(f"{k} unsafe / forced" for k in kinds_)], rows
    )


def chips(doc: dict[str, Any], runs: dict[str, dict[str, str]]) -> str:
    rows = [
        [
            label,
            *(f"{c['mttr_p50_s']} / {c['mttr_p95_s']} s" for c in by.values()),
            *(c["pools_declared"] for c in by.values()),
        ]
        for label, by in doc["chip_signals"].items()
    ]
    kinds_ = list(next(iter(doc["chip_signals"].values())))
    return _table(
        ["signals", *(f"{k} p50 / p95" for k in kinds_), *(f"{k} pools declared" for k in kinds_)], rows
    )


def maintenance(doc: dict[str, Any], runs: dict[str, dict[str, str]]) -> str:
    m = doc["maintenance"]
    names = [*COLUMNS, "hotswap_moves_off"]
    titles = {**TITLES, "hotswap_moves_off": "hotswap, maintenance-aware moves off"}
    return _table(
        ["", *(titles[n] for n in names)],
        [
            ["total high-priority downtime", *(_s(m[n]["total_downtime_s"]) for n in names)],
            ["  unplanned", *(_s(m[n]["unplanned_downtime_s"]) for n in names)],
            ["  planned moves at a checkpoint", *(_s(m[n]["planned_downtime_s"]) for n in names)],
            [
                "moves at a checkpoint / at the deadline",
                *(f"{m[n]['moves_at_checkpoint']} / {m[n]['moves_at_deadline']}" for n in names),
            ],
            ["lower-priority work lost (chip-h)", *(m[n]["low_priority_lost_chip_hours"] for n in names)],
        ],
    )


def parameters(doc: dict[str, Any], runs: dict[str, dict[str, str]]) -> str:
    rows = [[f"`{name}`", p["value"], p["source"], p["ref"]] for name, p in doc["parameters"].items()]
    return _table(["timing", "value", "source", "reference"], rows)


def _verdict(ok: bool) -> str:
    return "**met**" if ok else "**missed**"


def targets(doc: dict[str, Any], runs: dict[str, dict[str, str]]) -> str:
    """The goals of the shipped settings, judged on the run."""
    h = doc["headline"]
    hot, tas, recipe = h["hotswap"], h["kueue_tas"], h["recipe"]
    p50, tas50 = hot["host_death_p50_s"], tas["host_death_p50_s"]
    ratio = tas50 / p50 if p50 else float("nan")
    chip = hot.get("chip_error_p50_s")
    declared = hot["pools_declared_on_healthy_hardware"]
    ours_down = hot.get("maintenance_total_downtime_s") or 0.0
    theirs_down = recipe.get("maintenance_total_downtime_s") or 0.0
    rows = [
        ["silent host death: pods Running p50 ≤ 60 s", f"{_verdict(p50 <= 60)}: {p50} s"],
        [
            "≥ 2x `kueue_tas` at its strongest (p50)",
            f"{_verdict(ratio >= 2)}: {ratio:.2f}x ({tas50} s / {p50} s)",
        ],
        [
            "0 force deletions of a pod whose VM still ran, shipped settings, every kind",
            f"{_verdict(hot['unsafe_force_deletes'] == 0)}: {hot['unsafe_force_deletes']}"
            f" (`kueue_tas` {tas['unsafe_force_deletes']})",
        ],
        [
            "chip/ICI error with a live kubelet: p50 ≤ 60 s",
            f"{_verdict(chip is not None and chip <= 60)}: {_s(chip)}",
        ],
        [
            "pools declared unhealthy on healthy hardware: 0",
            f"{_verdict(declared == 0)}: {declared}",
        ],
        [
            "maintenance: total high-priority downtime below the recipe's",
            f"{_verdict(ours_down < theirs_down)}: {_s(ours_down)} against {_s(theirs_down)}",
        ],
        [
            "host death: lower-priority work lost not above the recipe's",
            f"{_verdict(hot['low_priority_lost_chip_hours'] <= recipe['low_priority_lost_chip_hours'])}: "
            f"{hot['low_priority_lost_chip_hours']} against {recipe['low_priority_lost_chip_hours']} chip-h",
        ],
    ]
    return _table(["target", "result"], rows)


def command(doc: dict[str, Any], runs: dict[str, dict[str, str]]) -> str:
    return f"`{runs['_meta']['command']}` ({runs['_meta']['wall']})\n"


SECTIONS: dict[str, Callable[[dict[str, Any], dict[str, dict[str, str]]], str]] = {
    "command": command,
    "headline": headline,
    "kinds": kinds,
    "sensitivity": sensitivity,
    "ablation": ablation,
    "chips": chips,
    "maintenance": maintenance,
    "parameters": parameters,
    "targets": targets,
}


def read_run(path: Path) -> tuple[dict[str, Any], dict[str, dict[str, str]]]:
    """The run's JSON line and, per kind, what its table heading says (stack, days, incidents, floor);
    under ``_meta`` the command line and the wall time it printed."""
    lines = path.read_text().splitlines()
    doc = json.loads(next(line for line in reversed(lines) if line.startswith("{")))
    runs: dict[str, dict[str, str]] = {}
    for line in lines:
        m = RUN_LINE.match(line)
        if m and m["kind"] not in runs:
            runs[m["kind"]] = {k: m[k] for k in ("stack", "days", "incidents", "floor")}
    wall = next((line.split("wall time ")[1] for line in lines if "benchmark wall time" in line), "?")
    cmd = next((line[2:] for line in lines if line.startswith("$ ")), "python bench/mttr.py")
    runs["_meta"] = {"command": cmd, "wall": f"{wall} wall"}
    return doc, runs


def rewrite(text: str, doc: dict[str, Any], runs: dict[str, dict[str, str]]) -> tuple[str, list[str]]:
    done = []
    for name, make in SECTIONS.items():
        found = re.compile(MARKER.format(name), re.S).search(text)
        if found:
            block = f"<!-- mttr:{name} -->\n{make(doc, runs)}<!-- /mttr:{name} -->"
            text = text[: found.start()] + block + text[found.end() :]
            done.append(name)
    return text, done


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "run", type=Path, help="the saved output of bench/mttr.py (its first line may be '$ COMMAND')"
    )
    p.add_argument("--write", type=Path, nargs="*", default=[], help="files whose marked sections to rewrite")
    args = p.parse_args(argv)
    doc, runs = read_run(args.run)
    if not args.write:
        for name, make in SECTIONS.items():
            print(f"<!-- mttr:{name} -->\n{make(doc, runs)}<!-- /mttr:{name} -->\n")
        return 0
    for path in args.write:
        text, done = rewrite(path.read_text(), doc, runs)
        path.write_text(text)
        print(f"{path}: {', '.join(done) or 'no sections'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
