"""Why each missed episode of a chaos run was missed, from the run's own records and the logs.

    python -m bench.chaos --keep DIR 2> DIR/bench.err
    python -m bench.chaos_causes DIR --offset SECONDS   # wall minus monotonic clock of the run's host

An episode (``missed: Episode(...)`` lines, monotonic times) is matched against each replica's
JSON log (wall times): when that replica led ("leadership changed" to stopping/lost), and what its
applier logged for the pool's nodes. Causes, in order:

- ``no leader``: during the episode no replica led for more than ``unhealthy_after_seconds +
  retry_period_seconds`` of the run's ``config.yaml`` (the detection threshold plus one retry):
  a handover or outage the controller could not act through; a measurement artifact, not a miss.
- ``writes fenced`` / ``writes failed`` / ``writes in backoff`` / ``writes conflicted``: the leader
  decided the taint but the dominant outcome of its pool patches was that.
- ``leader not deciding (caches stale)``: it led, decided nothing for the pool, and its watches
  were failing repeatedly; ``leader not deciding`` otherwise.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from datetime import datetime
from pathlib import Path

import yaml

EPISODE = re.compile(r"pool='(?P<pool>[^']+)'.*failed_at=(?P<f>[\d.]+), recover_at=(?P<r>[\d.]+)")


def wall(ts: str) -> float:
    return datetime.fromisoformat(ts).timestamp()


def leading_intervals(lines: list[dict]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    since: float | None = None
    for d in lines:
        t = wall(d["ts"])
        msg = d.get("msg")
        if msg == "leadership changed":
            if d.get("leader") and since is None:
                since = t
            elif not d.get("leader") and since is not None:
                out.append((since, t))
                since = None
        elif msg in ("stopping", "lost the lease: stopping", "starting") and since is not None:
            out.append((since, t))
            since = None
    if since is not None:
        out.append((since, float("inf")))
    return out


def overlap(a: tuple[float, float], b: tuple[float, float]) -> float:
    return max(0.0, min(a[1], b[1]) - max(a[0], b[0]))


def classify(window: tuple[float, float], pool: str, logs: dict[str, list[dict]], *, needed: float) -> str:
    led = {name: sum(overlap(window, iv) for iv in leading_intervals(lines)) for name, lines in logs.items()}
    if max(led.values(), default=0.0) <= needed:
        return "no leader"
    name = max(led, key=lambda n: led[n])
    lines = [d for d in logs[name] if window[0] <= wall(d["ts"]) <= window[1]]
    outcomes = Counter(d.get("outcome") for d in lines if d.get("msg") == "action" and d.get("pool") == pool)
    outcomes.pop("applied", None)
    outcomes.pop("skipped", None)
    if outcomes:
        top = outcomes.most_common(1)[0][0]
        return {"fenced": "writes fenced", "failed": "writes failed", "backoff": "writes in backoff"}.get(
            str(top), f"writes {top}"
        )
    if any(d.get("msg") == "watch failed" and int(d.get("failures") or 0) >= 3 for d in lines):
        return "leader not deciding (caches stale)"
    return "leader not deciding"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("dir")
    p.add_argument("--offset", type=float, required=True, help="wall minus monotonic seconds")
    p.add_argument("--err", default=None, help="the bench's stderr (default DIR/bench.err)")
    args = p.parse_args(argv)
    d = Path(args.dir)
    logs: dict[str, list[dict]] = {}
    for f in sorted(d.glob("*.log")):
        rows = []
        for line in f.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue
        logs[f.stem] = [r for r in rows if "ts" in r]
    config = yaml.safe_load((d / "config.yaml").read_text())
    needed = float(config["unhealthy_after_seconds"]) + float(config["runtime"]["retry_period_seconds"])
    causes: Counter[str] = Counter()
    for line in Path(args.err or d / "bench.err").read_text().splitlines():
        m = EPISODE.search(line) if line.startswith("missed:") else None
        if m is None:
            continue
        window = (float(m["f"]) + args.offset, float(m["r"]) + args.offset)
        causes[classify(window, m["pool"], logs, needed=needed)] += 1
    print(json.dumps(dict(causes.most_common())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
