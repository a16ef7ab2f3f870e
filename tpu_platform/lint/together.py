"""Across documents: JobSets of one run that their queue can never hold at the same time.

Kueue admits a workload only while its ClusterQueue's usage plus the request fits the nominal
quota plus what the cohort can lend (bounded by the queue's ``borrowingLimit``). When the
JobSets sent to one ClusterQueue need more chips together than that ceiling, each may be fine
alone, but they never run at once: one waits while another runs, or preempts it.

The ceiling is an upper bound: nominal chips of the queue, plus the nominal chips of the other
ClusterQueues in its cohort (what they could lend when idle), capped by its borrowing limit.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from .context import LintContext
from .findings import Finding
from .jobset import JobSetView
from .objects import RunIndex, tpu_nominal
from .rules import QUEUE_LABEL


@dataclass(frozen=True)
class Submitted:
    """One JobSet of the run: where it was found and what it asks for."""

    file: str
    document: int
    view: JobSetView


@dataclass(frozen=True)
class Ceiling:
    cluster_queue: str
    nominal: int
    borrowable: int

    @property
    def total(self) -> int:
        return self.nominal + self.borrowable


def chips_needed(js: JobSetView) -> int:
    """google.com/tpu of all pods of every replicated Job at once (gang admission)."""
    total = 0
    for rj in js.replicated_jobs:
        per_pod = rj.tpu_limit
        if per_pod is None or per_pod <= 0:
            continue
        pods = min(rj.parallelism or 0, rj.completions or rj.parallelism or 0)
        total += max(rj.replicas, 0) * max(pods, 0) * per_pod
    return total


def _queue_name(js: JobSetView) -> str | None:
    queue = js.labels.get(QUEUE_LABEL, js.annotations.get(QUEUE_LABEL))
    return str(queue) if queue is not None else None


def _context_ceilings(ctx: LintContext) -> dict[str, tuple[int | None, str | None]]:
    """ClusterQueue -> (nominal chips or None, cohort) from the context's queues."""
    found: dict[str, tuple[int | None, str | None]] = {}
    for target in ctx.local_queues.values():
        chips = [f.chips for f in target.flavors]
        nominal = sum(c for c in chips if c is not None) if chips and None not in chips else None
        found[target.cluster_queue] = (nominal, target.cohort)
    return found


def ceilings(ctx: LintContext, run: RunIndex) -> dict[str, Ceiling]:
    """The most chips each known ClusterQueue can ever hold at once."""
    raw: dict[str, tuple[int | None, int | None, str | None]] = {
        name: (nominal, None, cohort) for name, (nominal, cohort) in _context_ceilings(ctx).items()
    }
    for name, spec in run.cluster_queues.items():
        nominal, limit = tpu_nominal(spec)
        cohort = spec.get("cohortName") if isinstance(spec.get("cohortName"), str) else None
        raw[name] = (nominal, limit, cohort)
    out: dict[str, Ceiling] = {}
    for name, (nominal, limit, cohort) in raw.items():
        if nominal is None:
            continue
        lendable = 0
        if cohort:
            lendable = sum(n or 0 for other, (n, _, c) in raw.items() if c == cohort and other != name)
        borrowable = lendable if limit is None else min(limit, lendable)
        out[name] = Ceiling(name, nominal, borrowable)
    return out


def _cluster_queue(js: JobSetView, ctx: LintContext, run: RunIndex) -> str | None:
    queue = _queue_name(js)
    if queue is None:
        return None
    key = (js.namespace, queue)
    if key in run.local_queues:
        return run.local_queues[key]
    target = ctx.local_queues.get(key)
    return target.cluster_queue if target is not None else None


def together_rules(
    submitted: Iterable[Submitted], ctx: LintContext, run: RunIndex
) -> Iterator[tuple[Submitted, Finding]]:
    """A warning on each JobSet of a group that cannot all be admitted at once."""
    limits = ceilings(ctx, run)
    groups: dict[str, list[tuple[Submitted, int]]] = {}
    for item in submitted:
        cq = _cluster_queue(item.view, ctx, run)
        chips = chips_needed(item.view)
        if cq is not None and chips > 0:
            groups.setdefault(cq, []).append((item, chips))
    for cq, members in sorted(groups.items()):
        ceiling = limits.get(cq)
        total = sum(chips for _, chips in members)
        if ceiling is None or len(members) < 2 or total <= ceiling.total:
            continue
        names = ", ".join(f"{m.view.name or '#' + str(m.document)} ({chips})" for m, chips in members)
        lend = (
            f" + {ceiling.borrowable} the cohort can lend"
            if ceiling.borrowable
            else ", no cohort to borrow from"
        )
        for item, _ in members:
            yield (
                item,
                Finding(
                    "queue-quota-together",
                    "warning",
                    "metadata.labels",
                    f"the JobSets of this run sent to ClusterQueue {cq!r} need {total} google.com/tpu "
                    f"together ({names}) but it holds at most {ceiling.total} (nominal {ceiling.nominal}"
                    f"{lend}): they never run at the same time; one waits while another runs, or preempts it",
                    "give the queue more quota or a cohort to borrow from, or plan for them to run in turn",
                ),
            )
