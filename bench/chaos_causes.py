"""Why each missed episode of a chaos run was missed, from the run's own records and the logs.

    python -m bench.chaos --keep DIR 2> DIR/bench.err
    python -m bench.chaos_causes DIR

A missed episode (``missed: Episode(...)`` lines, monotonic times) had, by the bench's definition,
a stretch longer than T_bad + one reconcile + one retry in which one leader could act (``stretch:``
lines). The replica of its longest stretch is the one that should have acted; its JSON log (wall
times; ``clock offset:`` converts) within that stretch says why it did not. Causes, in order:

- ``writes fenced`` / ``writes failed`` / ``writes in backoff`` / ``writes conflicted``: the leader
  decided the taint but the dominant outcome of its pool patches was that.
- ``leader not deciding (caches stale)``: it decided nothing for the pool, and its node watch
  failed three times in a row meanwhile (a stale node cache stops every decision);
  ``leader not deciding`` otherwise.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from datetime import datetime
from pathlib import Path

EPISODE = re.compile(
    r"pool='(?P<pool>[^']+)'.*failed_at=(?P<f>[\d.]+), recover_at=(?P<r>[\d.]+).*ended_at=(?P<e>[\d.]+|None)"
)


def wall(ts: str) -> float:
    return datetime.fromisoformat(ts).timestamp()


def classify(window: tuple[float, float], pool: str, lines: list[dict]) -> str:
    """The cause, from one replica's log ``lines`` within the window it could act in."""
    lines = [d for d in lines if window[0] <= wall(d["ts"]) <= window[1]]
    outcomes = Counter(d.get("outcome") for d in lines if d.get("msg") == "action" and d.get("pool") == pool)
    outcomes.pop("applied", None)
    outcomes.pop("skipped", None)
    if outcomes:
        top = outcomes.most_common(1)[0][0]
        return {"fenced": "writes fenced", "failed": "writes failed", "backoff": "writes in backoff"}.get(
            str(top), f"writes {top}"
        )
    if any(
        d.get("msg") == "watch failed" and d.get("resource") == "nodes" and int(d.get("failures") or 0) >= 3
        for d in lines
    ):
        return "leader not deciding (caches stale)"
    return "leader not deciding"


def longest(stretches: list[tuple[str, float, float]], start: float, end: float) -> tuple[str, float, float]:
    """The longest stretch clipped to ``[start, end]``: (holder, from, to), monotonic."""
    clipped = [(h, max(a, start), min(b, end)) for h, a, b in stretches if min(b, end) > max(a, start)]
    return max(clipped, key=lambda s: s[2] - s[1], default=("", start, start))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("dir")
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
    err = Path(args.err or d / "bench.err").read_text().splitlines()
    offset = next(float(line.split(":", 1)[1]) for line in err if line.startswith("clock offset:"))
    stretches = [
        (parts[1], float(parts[2]), float(parts[3]))
        for line in err
        if line.startswith("stretch:") and len(parts := line.split()) == 4
    ]
    causes: Counter[str] = Counter()
    for line in err:
        m = EPISODE.search(line) if line.startswith("missed:") else None
        if m is None:
            continue
        end = float(m["e"]) if m["e"] not in (None, "None") else float(m["r"])
        holder, start, stop = longest(stretches, float(m["f"]), end)
        causes[classify((start + offset, stop + offset), m["pool"], logs.get(holder, []))] += 1
    print(json.dumps(dict(causes.most_common())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
