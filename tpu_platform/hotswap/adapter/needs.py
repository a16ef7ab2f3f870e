"""Which caches an action needs to be fresh: a stale cache blocks only what it affects.

The core judges a pool's health from its nodes alone (conditions, taints, the controller's own
annotations; node Leases when ``lease_stale_seconds`` is on): ``ClusterIndex`` builds pools and
nodes before it looks at any pod or JobSet, and ``assess_pool`` and the mass-outage guard read only
those. So tainting, untainting and annotating a pool's nodes, and the Event on the node that
reports it, need only the node caches. Everything that reads pods or JobSets (fail-fast and
preemption evictions, preemption records, force deletions of stuck pods, their Events) needs
every cache: a stale pod list could evict a pod that already left or miss the one that matters,
and a stale JobSet or Job list could attribute pods to the wrong owner or forge a preemption record.

| action | needs fresh |
|---|---|
| ``PatchNode`` (taint, untaint, pool annotations) | nodes (+ node leases if watched) |
| ``EmitEvent`` on a Node | nodes (+ node leases if watched) |
| ``EvictPod``, ``ForceDeletePod``, ``AnnotateJobSet`` | nodes, pods, JobSets, Jobs (+ node leases) |
| ``EmitEvent`` on a JobSet | nodes, pods, JobSets, Jobs (+ node leases) |
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from tpu_platform.hotswap.core.actions import Action, EmitEvent, PatchNode

NODE_CACHES = frozenset({"nodes", "leases"})
"""The caches a pool's health is judged from."""


def needs(action: Action, watched: Collection[str]) -> frozenset[str]:
    """The caches (by resource name, among ``watched``) that must be fresh to issue ``action``."""
    if isinstance(action, PatchNode) or (isinstance(action, EmitEvent) and action.kind == "Node"):
        return NODE_CACHES & frozenset(watched)
    return frozenset(watched)


def can_decide(fresh: Collection[str], watched: Collection[str]) -> bool:
    """Deciding is worth it once the caches node actions need are fresh."""
    return NODE_CACHES & frozenset(watched) <= frozenset(fresh)


def runnable(
    actions: Sequence[Action], fresh: Collection[str], watched: Collection[str]
) -> tuple[tuple[Action, ...], list[Action]]:
    """(actions whose caches are all fresh, actions withheld until a stale cache is fresh again)."""
    ok = frozenset(fresh)
    go: list[Action] = []
    withheld: list[Action] = []
    for a in actions:
        (go if needs(a, watched) <= ok else withheld).append(a)
    return tuple(go), withheld
