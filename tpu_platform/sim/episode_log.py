"""One host-death episode as the controller lived it: when the dead node's Lease was last renewed, when
it became suspect, what Compute Engine answered, when the pool was declared, the pods failed fast and
force-deleted, and when the JobSet's pods ran again. It shows which wait bounds the recovery
(``bench/mttr.py --timeline``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tpu_platform.hotswap.core import Decision, EvictPod, ForceDeletePod, Settings, Snapshot
from tpu_platform.hotswap.core.vm_evidence import confirmed_down, suspect_since
from tpu_platform.sim.metrics import Episode

WINDOW_S = 600.0
"""How long after an incident its steps are looked for."""


@dataclass(slots=True)
class DecisionLog:
    """Every (snapshot, decision) of a run, in order: pass :meth:`record` as ``Hotswap(on_decision=)``."""

    entries: list[tuple[Snapshot, Decision]] = field(default_factory=list)

    def record(self, snapshot: Snapshot, decision: Decision) -> None:
        self.entries.append((snapshot, decision))


def episode_timeline(
    log: DecisionLog, episode: Episode, node: str, settings: Settings
) -> list[tuple[str, float | None]]:
    """The steps of ``episode`` (whose incident hit ``node``), each with its time from the incident, in
    the order they happened (a step never seen has None and comes last)."""
    t0 = episode.start
    first: dict[str, float] = {}
    for snap, d in log.entries:
        now = snap.now
        if now < t0 or now > t0 + WINDOW_S:
            continue
        n = next((x for x in snap.nodes if x.name == node), None)
        if n is None:
            continue
        if n.lease_renewed is not None:
            first.setdefault("last Lease renewal", n.lease_renewed)
        since = suspect_since(n, settings, now)
        if since is not None:
            first.setdefault("suspect", since)
        if n.instance is not None:
            first.setdefault(f"first Compute answer ({n.instance.status})", now)
            if confirmed_down(n, settings, now) is not None:
                first.setdefault("confirmed not running", now)
        ready = n.condition("Ready")
        if ready is not None and ready.status != "True":
            first.setdefault("NotReady", ready.last_transition)
        status = d.pool(n.pool)
        if status is not None and status.declared:
            first.setdefault("pool declared", now)
        if any(isinstance(a, EvictPod) and a.pool == n.pool for a in d.actions):
            first.setdefault("fail-fast eviction", now)
        if any(isinstance(a, ForceDeletePod) and a.node == node for a in d.actions):
            first.setdefault("force delete", now)
    if episode.acted is not None:
        first["JobSet restarted"] = episode.acted
    steps: list[tuple[str, float | None]] = sorted(
        ((name, at - t0) for name, at in first.items()), key=lambda s: (s[1], s[0])
    )
    if episode.running_at is not None:
        steps.append(("pods Running", episode.running_at - t0))
    else:
        steps.append(("pods Running", None))
    return steps
