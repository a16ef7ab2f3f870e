"""Rendering a :class:`~tpu_platform.status.model.PlatformStatus`: aligned tables for a terminal, or JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..hotswap.core.times import format_time
from .model import PlatformStatus


def age(seconds: float | None) -> str:
    """``95`` -> ``1m35s``; ``None`` -> ``-``."""
    if seconds is None:
        return "-"
    s = int(max(0.0, seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    return f"{s // 86400}d{(s % 86400) // 3600:02d}h"


def _since(now: float, t: float | None) -> str:
    return "-" if t is None else f"{format_time(t)} ({age(now - t)} ago)"


def _number(x: float | None) -> str:
    if x is None:
        return "-"
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Left-aligned columns two spaces apart; the last column is not padded."""
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows, strict=False)]
    lines = []
    for row in [headers, *rows]:
        cells = [str(c).ljust(w) for c, w in zip(row, widths, strict=False)]
        lines.append("  ".join(cells).rstrip())
    return lines


def render_text(status: PlatformStatus) -> str:
    now = status.now
    out: list[str] = [f"tpu-platform status at {format_time(now)}", ""]
    out.append("slice pools")
    if status.pools:
        out += table(
            ["POOL", "SHAPE", "READY", "STATE", "SINCE", "WHY"],
            [
                [
                    p.name,
                    p.topology or "?",
                    f"{p.ready}/{p.expected if p.expected is not None else p.nodes}",
                    p.state,
                    _since(now, p.since),
                    p.reason or "-",
                ]
                for p in status.pools
            ],
        )
    else:
        out.append("  (no TPU node pools)")
    out += ["", "cluster queues (chips per flavor: used / nominal, borrowed, borrowing limit)"]
    if status.queues:
        rows = []
        for q in status.queues:
            for i, f in enumerate(q.flavors or [None]):
                rows.append(
                    [
                        q.name if i == 0 else "",
                        (q.cohort or "-") if i == 0 else "",
                        "-" if f is None else f.flavor,
                        "-" if f is None else f"{_number(f.used)} / {_number(f.nominal)}",
                        "-" if f is None else _number(f.borrowed),
                        "-" if f is None else _number(f.borrowing_limit),
                        str(q.admitted) if i == 0 else "",
                        str(q.pending) if i == 0 else "",
                    ]
                )
        out += table(
            ["QUEUE", "COHORT", "FLAVOR", "USED/NOMINAL", "BORROWED", "LIMIT", "ADMITTED", "PENDING"], rows
        )
        pending = [(q, w) for q in status.queues for w in q.pending_workloads]
        out += ["", "pending workloads (highest priority first)"]
        if pending:
            out += table(
                ["QUEUE", "WORKLOAD", "PRIORITY", "WAITING", "POSITION", "SOURCE"],
                [
                    [
                        q.name,
                        f"{w.namespace}/{w.name}",
                        str(w.priority),
                        age(w.waiting_seconds),
                        "-" if w.position is None else str(w.position),
                        q.pending_source,
                    ]
                    for q, w in sorted(
                        pending, key=lambda qw: (-qw[1].priority, -(qw[1].waiting_seconds or 0))
                    )
                ],
            )
        else:
            out.append("  (none)")
        admitted = [(q, w) for q in status.queues for w in q.admitted_workloads]
        out += ["", "admitted workloads"]
        if admitted:
            out += table(
                ["QUEUE", "WORKLOAD", "PRIORITY"],
                [[q.name, f"{w.namespace}/{w.name}", str(w.priority)] for q, w in admitted],
            )
        else:
            out.append("  (none)")
    else:
        out.append("  (no ClusterQueues)")
    out += ["", "managed JobSets"]
    if status.jobsets:
        out += table(
            ["JOBSET", "STATE", "POOLS", "RESTARTS", "LAST PREEMPTION", "FOR", "REASON"],
            [
                [
                    f"{j.namespace}/{j.name}",
                    j.state,
                    ",".join(j.pools) or "-",
                    str(j.restarts),
                    _since(now, j.last_preemption),
                    j.preempted_for or "-",
                    j.preemption_reason or "-",
                ]
                for j in status.jobsets
            ],
        )
    else:
        out.append("  (none opted in)")
    c = status.controller
    out += [
        "",
        "hotswap controller",
        f"  lease            {c.lease or '-'}",
        f"  leader           {c.leader or 'NONE (no replica holds an unexpired lease)'}",
        f"  lease renewed    {_since(now, c.lease_renewed)}",
        f"  last decision    {_since(now, c.last_decision)}",
        f"  decisions (1h)   {c.decisions_last_hour}"
        + (
            f"  ({', '.join(f'{r} {n}' for r, n in c.decisions_by_reason.items())})"
            if c.decisions_by_reason
            else ""
        ),
    ]
    if c.recent:
        out += table(
            ["  WHEN", "TYPE", "OBJECT", "REASON", "NOTE"],
            [
                ["  " + _since(now, d.time), d.type, f"{d.kind} {d.object}", d.reason, d.note]
                for d in c.recent[:20]
            ],
        )
    if status.fleet:
        out += ["", "fleet workers (MultiKueueClusters on this manager)"]
        out += table(
            ["  WORKER", "CONNECTED", "SINCE", "WORKLOADS", "KUBECONFIG SECRET", "REASON"],
            [
                [
                    "  " + w.name,
                    {True: "yes", False: "NO", None: "unknown"}[w.active],
                    w.since or "-",
                    str(w.workloads),
                    w.secret or "-",
                    f"{w.reason}: {w.message}".strip(": ") or "-",
                ]
                for w in status.fleet
            ],
        )
    out += ["", "priorities each namespace may use (the platform's admission policy)"]
    if status.entitlements is None:
        out.append("  (no entitlement policy: every namespace may use every priority)")
    else:
        out += table(
            ["  NAMESPACE", "TEAM", "PRIORITIES"],
            [
                [
                    "  " + ("every other namespace" if e.namespace == "*" else e.namespace),
                    e.team or "-",
                    ", ".join(e.priorities) or "-",
                ]
                for e in status.entitlements
            ],
        )
    if status.notes:
        out += ["", "notes"] + [f"  {n}" for n in status.notes]
    return "\n".join(out) + "\n"


def render_json(status: PlatformStatus) -> str:
    """Times are epoch seconds (``now`` included), so a script can diff two runs."""
    return json.dumps(status.to_dict(), indent=2, sort_keys=True) + "\n"
