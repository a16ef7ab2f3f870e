"""Who a tenant is, and the record of pools a tenant's word alone took out of service.

The tenant is the team (teams sharing a namespace are one); a namespace of no team has no word. The
tenants whose reports alone took a pool out are recorded on its nodes: while it is out they preempt
only their own work, and a tenant at its limit is not heard. Reasoning: docs/hotswap-core.md,
"tenancy.py".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.model import Node, NodePool, Pod
from tpu_platform.hotswap.core.settings import Settings
from tpu_platform.hotswap.core.times import CLOCK_SKEW_SECONDS, format_time, parse_time

MAX_ENTRIES = 16
"""Entries read from one stored value (a pool is declared on the word of a few tenants at most)."""
_TENANT = re.compile(r"^(team|ns):[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def team_of_namespace(settings: Settings) -> dict[str, str]:
    """Namespace -> tenant key of its team (teams joined through shared namespaces), for the teams
    the stack declares."""
    group = {team: team for team, _ in settings.teams}

    def root(team: str) -> str:
        while group[team] != team:
            team = group[team]
        return team

    first: dict[str, str] = {}
    for team, namespaces in settings.teams:
        for ns in namespaces:
            other = first.setdefault(ns, team)
            a, b = sorted((root(team), root(other)))
            group[b] = a
    return {ns: f"team:{root(team)}" for team, namespaces in settings.teams for ns in namespaces}


def tenant_key(namespace: str, teams: Mapping[str, str]) -> str:
    """The tenant that controls ``namespace``: its team, or the namespace itself."""
    return teams.get(namespace) or f"ns:{namespace}"


def has_word(namespace: str, teams: Mapping[str, str]) -> bool:
    """Whether reports from ``namespace`` may take a pool out on the tenants' word: with teams
    declared, only a team's namespace (a namespace of no team would be a second voice of some team);
    with none, every namespace."""
    return not teams or namespace in teams


def tenant_label(key: str) -> str:
    """``team a`` / ``namespace b``: for notes and events."""
    kind, _, name = key.partition(":")
    return f"team {name}" if kind == "team" else f"namespace {name}"


@dataclass(frozen=True, slots=True, order=True)
class Declaration:
    """A pool taken out of service at ``at`` on ``tenant``'s reports alone."""

    at: float
    tenant: str

    def encode(self) -> str:
        return f"{format_time(self.at)}/{self.tenant}"


def parse_declarations(text: str | None, now: float) -> list[Declaration]:
    """Stored entries, malformed ones and any later than now + skew dropped (a future time would
    keep a tenant rate-limited, or restricted, for as long as it names)."""
    if not text:
        return []
    out: list[Declaration] = []
    for entry in text[: MAX_ENTRIES * 96].split()[:MAX_ENTRIES]:
        at_text, sep, tenant = entry.partition("/")
        at = parse_time(at_text) if sep else None
        if at is None or at > now + CLOCK_SKEW_SECONDS or not _TENANT.match(tenant):
            continue
        out.append(Declaration(at, tenant))
    return out


def late_declarations(text: str | None, now: float) -> int:
    """How many well-formed stored entries are later than now + skew (dropped; for the refusal count)."""
    if not text:
        return 0
    late = now + CLOCK_SKEW_SECONDS
    count = 0
    for entry in text[: MAX_ENTRIES * 96].split()[:MAX_ENTRIES]:
        at_text, sep, tenant = entry.partition("/")
        at = parse_time(at_text) if sep else None
        if at is not None and at > late and _TENANT.match(tenant):
            count += 1
    return count


def pool_declarations(nodes: Iterable[Node], now: float) -> dict[str, float]:
    """Tenant -> earliest declaration time, merged over the pool's nodes (a partial write can leave
    them different)."""
    out: dict[str, float] = {}
    for n in nodes:
        text = n.annotations.get(k.TENANT_DECLARED_ANNOTATION) if n.annotations else None
        for d in parse_declarations(text, now):
            out[d.tenant] = min(out.get(d.tenant, d.at), d.at)
    return out


@dataclass(slots=True)
class TenantLedger:
    """Every pool's recorded declarations within the team window: read once per reconcile, and
    added to as pools are declared in it (so one reconcile cannot exceed the limit either)."""

    by_pool: dict[str, dict[str, float]]
    limit: int

    @classmethod
    def read(
        cls, nodes_by_pool: Mapping[str, Sequence[Node]], settings: Settings, now: float
    ) -> TenantLedger:
        start = now - settings.workload_signal_team_window_seconds
        by_pool: dict[str, dict[str, float]] = {}
        for pool, nodes in nodes_by_pool.items():
            out = any(_out_of_service(n) for n in nodes)
            kept = {t: at for t, at in pool_declarations(nodes, now).items() if out or at > start}
            if kept:
                by_pool[pool] = kept
        return cls(by_pool, settings.workload_signal_team_limit)

    def limited(self, pool: str) -> frozenset[str]:
        """Tenants not heard on ``pool``: they reached the limit on other pools."""
        counts: dict[str, int] = {}
        for other, tenants in self.by_pool.items():
            if other != pool:
                for t in tenants:
                    counts[t] = counts.get(t, 0) + 1
        return frozenset(t for t, n in counts.items() if n >= self.limit)

    def record(self, pool: str, declaring: Iterable[str], now: float) -> str | None:
        """Add ``declaring`` tenants to the pool's entries (an entry keeps its first time, so the
        window counts from it) and return the value the pool's nodes must carry."""
        entries = self.by_pool.setdefault(pool, {})
        for t in declaring:
            entries.setdefault(t, now)
        if not entries:
            del self.by_pool[pool]
            return None
        ordered = sorted(entries.items(), key=lambda e: (e[1], e[0]))
        return " ".join(Declaration(at, t).encode() for t, at in ordered)

    def forget(self, pool: str) -> None:
        """A signal no tenant writes confirmed the pool: its entries no longer restrict anyone nor
        count against any tenant's limit."""
        self.by_pool.pop(pool, None)

    def tenants_on(self, pool: str) -> frozenset[str]:
        return frozenset(self.by_pool.get(pool, ()))


def spare_slices(
    pools: Mapping[str, NodePool],
    nodes_by_pool: Mapping[str, Sequence[Node]],
    pods_by_pool: Mapping[str, Sequence[Pod]],
    troubled: Iterable[str],
) -> dict[tuple[str, str], list[str]]:
    """Free healthy slices by shape (accelerator, topology), sorted: every node present, schedulable,
    with no problem and not out of service, and no pod holding chips on it. A pool whose own pods
    JobSet has just deleted for a restart is among them: the caller leaves out the pool it judges."""
    bad = set(troubled)
    out: dict[tuple[str, str], list[str]] = {}
    for name, pool in pools.items():
        nodes = nodes_by_pool.get(name, ())
        if (
            len(nodes) < pool.expected_nodes
            or any(n.unschedulable or n.name in bad or _out_of_service(n) for n in nodes)
            or any(p.uses_accelerator for p in pods_by_pool.get(name, ()))
        ):
            continue
        out.setdefault((pool.accelerator, pool.topology), []).append(name)
    return {shape: sorted(names) for shape, names in out.items()}


def _out_of_service(node: Node) -> bool:
    """The node carries the controller's declared or recovering state (the flap history alone, kept
    after recovery, does not count)."""
    ann = node.annotations
    return node.has_taint(k.UNHEALTHY_TAINT_KEY) or (
        bool(ann) and (k.UNHEALTHY_SINCE_ANNOTATION in ann or k.CLEAN_SINCE_ANNOTATION in ann)
    )


def restricted_tenants(ledger: TenantLedger, unusable: Iterable[str]) -> frozenset[str]:
    """Tenants whose word alone holds an ``unusable`` pool out of service now (after the
    reconcile's :meth:`TenantLedger.record` calls)."""
    return frozenset(t for pool in unusable for t in ledger.tenants_on(pool))


__all__ = [
    "Declaration",
    "TenantLedger",
    "has_word",
    "late_declarations",
    "parse_declarations",
    "pool_declarations",
    "restricted_tenants",
    "team_of_namespace",
    "tenant_key",
    "tenant_label",
]
