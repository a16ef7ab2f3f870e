"""Chip and ICI failures with a live kubelet: workload reports and withdrawn chips, and when they
mark a pool bad.

One tenant's report makes a pool suspect only; a signal no tenant writes, or the word of two tenants
(or one repeating while alone on the pool) confirms it. Reports are kept on the pool's nodes so they
outlive their pods, and every tenant-written value is read within bounds. Sources and reasoning:
docs/hotswap-core.md, "workload_signals.py".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.model import Node, Pod
from tpu_platform.hotswap.core.pool_health import Problem, chips_withdrawn
from tpu_platform.hotswap.core.settings import Settings
from tpu_platform.hotswap.core.tenancy import has_word, tenant_key, tenant_label
from tpu_platform.hotswap.core.times import CLOCK_SKEW_SECONDS, MAX_EPOCH, format_time, parse_time

MAX_TERMINATIONS = 8
"""Terminations read per pod (a TPU pod has one trainer container, a few sidecars at most)."""
MAX_MESSAGE_CHARS = 4096
"""The kubelet caps a termination message at 4096 bytes; nothing beyond is read."""
MAX_REASON_CHARS = 1024
MAX_REPORTS = 16
"""Reports kept per pool (the newest): enough for repetition, bounded against a crash loop."""
REPORTED_REASON = "TPU error reported by workloads"
"""Start of the reason of a pool-level problem from confirmed reports (for logs and metrics)."""
WITHDRAWN_NOTE = "device plugin withdrew chips"
"""In the reason when withdrawn chips confirmed the reports."""
# CLOCK_SKEW_SECONDS (core/times.py): a report time this far in the future still counts (the kubelet's
# clock against the controller's); a later one is dropped (core/screening.py reports it).

_NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_UID = re.compile(r"^[A-Za-z0-9-]{1,64}$")


@dataclass(frozen=True, slots=True, order=True)
class Report:
    """One pod's report of a TPU error: when its container ended, its tenant (namespace) and UID."""

    at: float
    namespace: str
    pod_uid: str

    def encode(self) -> str:
        return f"{format_time(self.at)}/{self.namespace}/{self.pod_uid}"


def parse_reports(text: str | None, *, not_after: float | None = None) -> list[Report]:
    """The stored reports; malformed or out-of-bounds entries are dropped, at most MAX_REPORTS read.
    With ``not_after``, entries later than it are dropped before that count, so they cannot crowd out
    the others."""
    if not text:
        return []
    out: list[Report] = []
    entries = text[: MAX_REPORTS * 128].split()
    for entry in entries if not_after is not None else entries[:MAX_REPORTS]:
        report = _report(entry)
        if report is None or (not_after is not None and report.at > not_after):
            continue
        out.append(report)
        if len(out) == MAX_REPORTS:
            break
    return out


def _report(entry: str) -> Report | None:
    parts = entry.split("/")
    if len(parts) != 3:
        return None
    at = parse_time(parts[0])
    if at is None or not _NAMESPACE.match(parts[1]) or not _UID.match(parts[2]):
        return None
    return Report(at, parts[1], parts[2])


def late_reports(text: str | None, now: float) -> int:
    """How many well-formed stored entries are later than now + :data:`CLOCK_SKEW_SECONDS` (dropped)."""
    if not text:
        return 0
    late = now + CLOCK_SKEW_SECONDS
    return sum(1 for e in text[: MAX_REPORTS * 128].split() if (r := _report(e)) is not None and r.at > late)


def stored_reports(nodes: Iterable[Node]) -> str | None:
    """The stored reports of a pool: the union over its nodes (a partial write can leave them
    different), as one annotation value."""
    texts = {n.annotations.get(k.TPU_ERRORS_ANNOTATION) for n in nodes if n.annotations}
    texts.discard(None)
    if not texts:
        return None
    if len(texts) == 1:
        return next(iter(texts))
    merged = {r for text in texts for r in parse_reports(text)}
    return format_reports(sorted(merged)[-MAX_REPORTS:])


def format_reports(reports: Iterable[Report]) -> str:
    return " ".join(r.encode() for r in sorted(reports))


def reports_tpu_error(pod: Pod, patterns: Sequence[str]) -> float | None:
    """When ``pod`` reported a TPU error (the latest such container end), or None.

    A report is a container that exited non-zero with one of ``patterns`` in its termination reason
    or message, read within bounds. Only a pod that holds TPU chips can report, and only with a
    well-formed namespace and UID (they identify the tenant and the report)."""
    if not patterns or not pod.uses_accelerator or not pod.terminations:
        return None
    if not _NAMESPACE.match(pod.namespace) or not _UID.match(pod.uid):
        return None
    latest: float | None = None
    for t in pod.terminations[:MAX_TERMINATIONS]:
        if type(t.exit_code) is not int or t.exit_code == 0:
            continue
        at = t.finished
        if type(at) not in (float, int) or not 0.0 <= at <= MAX_EPOCH:  # type: ignore[operator]
            continue
        reason = t.reason[:MAX_REASON_CHARS] if isinstance(t.reason, str) else ""
        message = t.message[:MAX_MESSAGE_CHARS] if isinstance(t.message, str) else ""
        if any(p in reason or p in message for p in patterns):
            assert at is not None
            latest = float(at) if latest is None else max(latest, float(at))
    return latest


@dataclass(frozen=True, slots=True)
class PoolSignals:
    """What the workload signals say about one pool."""

    reports: tuple[Report, ...] = ()
    """Reports within the window, oldest first (stored ones and new ones)."""
    confirmed: bool = False
    why: str = ""
    """Why confirmed, or why only suspect."""
    annotation: str | None = None
    """The value :data:`TPU_ERRORS_ANNOTATION` must have on the pool's nodes (None: absent)."""

    withdrawn: tuple[str, ...] = ()
    """Nodes of the pool with chips the device plugin marked Unhealthy (with the signal on)."""
    tenants: tuple[str, ...] = ()
    """Confirmed on these tenants' word alone (no signal a tenant cannot write): they are recorded
    on the pool (:mod:`tpu_platform.hotswap.core.tenancy`). Empty when a system signal confirmed."""

    @property
    def suspect(self) -> bool:
        return bool(self.reports or self.withdrawn) and not self.confirmed

    @property
    def since(self) -> float | None:
        return self.reports[0].at if self.reports else None

    def problem(self) -> Problem | None:
        """The pool-level problem of confirmed reports, dated by the first report. Confirmed already,
        it does not wait out T_bad: the trainers have exited, there is no blip to let pass."""
        if not self.confirmed:
            return None
        return Problem("", f"{REPORTED_REASON} ({self.why})", self.since, confirmed=True)


def assess_pool_signals(
    nodes: Sequence[Node],
    reporting: Iterable[Pod],
    occupants: Iterable[Pod],
    *,
    stored: str | None,
    settings: Settings,
    now: float,
    teams: Mapping[str, str] | None = None,
    limited: frozenset[str] = frozenset(),
    system: str | None = None,
    room: bool | Callable[[Sequence[str]], bool] = True,
) -> PoolSignals:
    """The pool's reports (stored ``stored`` plus those of ``reporting``, its pods with container
    terminations) and whether they are confirmed. ``occupants`` are the unfinished pods bound to the
    pool's nodes (whose tenants a single tenant's reports must not override). ``teams`` maps a
    namespace to its tenant (:func:`~tpu_platform.hotswap.core.tenancy.team_of_namespace`); a namespace
    it leaves out, when it maps any, is not heard (:func:`~tpu_platform.hotswap.core.tenancy.has_word`);
    ``limited`` tenants are at their rate limit and not heard; ``system`` names a problem the system
    set on one of the pool's nodes (a signal no tenant can write), if any; without ``room`` for the
    restart (a spare slice, or only the declaring tenants' own lower-priority pods to preempt: a
    callable gets the tenants), the tenants' word alone does not take the pool out (kube-scheduler
    would preempt another team's pods for it: :mod:`tpu_platform.hotswap.core.tenancy`)."""
    if not settings.workload_signals:
        return PoolSignals(annotation=stored.strip() if stored and stored.strip() else None)
    window = settings.workload_signal_window_seconds
    low, high = now - window, now + CLOCK_SKEW_SECONDS
    by_pod: dict[str, Report] = {}
    # Each node's own list too: the merged ``stored`` keeps the newest entries, which a future one
    # would crowd out before it is dropped here.
    texts = [stored] if stored else []
    if stored and len(nodes) > 1:
        texts = sorted({stored, *(n.annotations.get(k.TPU_ERRORS_ANNOTATION) or "" for n in nodes)} - {""})
    for text in texts:
        for r in parse_reports(text, not_after=high):
            if low < r.at and (r.pod_uid not in by_pod or by_pod[r.pod_uid].at < r.at):
                by_pod[r.pod_uid] = r
    patterns = settings.tpu_error_patterns
    for pod in reporting:
        raw = reports_tpu_error(pod, patterns)
        # The time as the annotation stores it (microseconds), so a stored report and its pod agree
        # exactly and the order of the stored list never changes between reconciles.
        at = parse_time(format_time(raw)) if raw is not None else None
        if at is None or not low < at <= high:
            continue
        known = by_pod.get(pod.uid)
        if known is None or known.at < at:
            by_pod[pod.uid] = Report(at, pod.namespace, pod.uid)
    reports = tuple(sorted(by_pod.values())[-MAX_REPORTS:])
    annotation = format_reports(reports) if reports else None
    withdrawn = tuple(n.name for n in nodes if chips_withdrawn(n)) if settings.chips_withdrawn_signal else ()
    if not reports:
        named = ", ".join(withdrawn[:3]) + (f" and {len(withdrawn) - 3} more" if len(withdrawn) > 3 else "")
        why = f"TPU chips withdrawn on {named}: alone no proof (a device plugin restart does the same)"
        return PoolSignals((), False, why if withdrawn else "", annotation, withdrawn)
    team_map = teams if teams is not None else {}

    def tenant(namespace: str) -> str:
        return tenant_key(namespace, team_map)

    everyone = sorted({tenant(r.namespace) for r in reports})
    worded = [r for r in reports if has_word(r.namespace, team_map)]
    heard = [r for r in worded if tenant(r.namespace) not in limited]
    tenants = sorted({tenant(r.namespace) for r in heard})
    muted = sorted({tenant(r.namespace) for r in worded} - set(tenants))
    teamless = sorted(set(everyone) - {tenant(r.namespace) for r in worded})
    pods = len({r.pod_uid for r in heard})
    who = f"{len({r.pod_uid for r in reports})} pod(s) of {_labels(everyone)}"
    if withdrawn:
        return PoolSignals(reports, True, f"{who}; {WITHDRAWN_NOTE}", annotation, withdrawn)
    if system is not None:
        return PoolSignals(reports, True, f"{who}; {system}", annotation)
    others = sorted({tenant(p.namespace) for p in occupants if p.uses_accelerator} - set(tenants))
    unheard = _unheard_note(muted, teamless, settings)
    declaring = tuple(tenants)
    enough = len(tenants) >= 2 or bool(tenants and pods >= settings.workload_signal_repeats and not others)
    if enough and not (room(tenants) if callable(room) else room):
        why = (
            f"{who}; no free slice of its shape for the restart: taken out on {_labels(tenants)}'s word "
            f"alone, kube-scheduler would preempt another team's pods for it{unheard}"
        )
        return PoolSignals(reports, False, why, annotation)
    if len(tenants) >= 2:
        why = f"{who}: independent tenants{unheard}"
        return PoolSignals(reports, True, why, annotation, tenants=declaring)
    if tenants and pods >= settings.workload_signal_repeats and not others:
        return PoolSignals(reports, True, f"{who}: repeated{unheard}", annotation, tenants=declaring)
    if others and tenants:
        why = f"{who}; pool also runs {_labels(others)}: one tenant's reports alone do not count{unheard}"
    elif tenants:
        why = f"{who}; {settings.workload_signal_repeats} needed{unheard}"
    else:
        why = who + unheard
    return PoolSignals(reports, False, why, annotation)


def _unheard_note(muted: Sequence[str], teamless: Sequence[str], settings: Settings) -> str:
    """Who reported but was not heard, and why: at its rate limit, or a namespace of no team."""
    note = ""
    if muted:
        note += (
            f"; {_labels(muted)} already took {settings.workload_signal_team_limit} pool(s) out on its own "
            f"reports within {settings.workload_signal_team_window_seconds:g}s: not heard"
        )
    if teamless:
        note += f"; {_labels(teamless)} of no team of the stack: not heard"
    return note


def _labels(tenants: Sequence[str]) -> str:
    return ", ".join(tenant_label(t) for t in tenants)


__all__ = [
    "MAX_MESSAGE_CHARS",
    "MAX_REPORTS",
    "MAX_TERMINATIONS",
    "REPORTED_REASON",
    "WITHDRAWN_NOTE",
    "PoolSignals",
    "Report",
    "assess_pool_signals",
    "chips_withdrawn",
    "format_reports",
    "late_reports",
    "parse_reports",
    "reports_tpu_error",
    "stored_reports",
]
