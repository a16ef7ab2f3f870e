"""Wait for our own writes to show up in the caches before acting again on what they touched.

Right after applying, the watch may not have delivered the changes yet; deciding on that stale view
would repeat the same actions (or, for a preemption whose cost ranking moved, pick a second victim).
Like controller-runtime's expectations, actions wait until the writes they depend on are visible,
or until a timeout (a lost event must not wedge the controller; the next list/watch catches up).

Expectations are scoped, not global: a write holds back only actions on the same pool, JobSet or
pod, and a preemption write holds back every other preemption action (a preemption spans pools and
JobSets, and a stale record could pick a second victim). One slow watch event for one pool does
not block every other pool.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from tpu_platform.hotswap.adapter.applier import ApplyResult, Outcome, reported_by
from tpu_platform.hotswap.adapter.cache import WatchCache
from tpu_platform.hotswap.adapter.convert import NodeRecord
from tpu_platform.hotswap.core.actions import (
    Action,
    AnnotateJobSet,
    EmitEvent,
    EvictionCause,
    EvictPod,
    ForceDeletePod,
    PatchNode,
)
from tpu_platform.hotswap.core.model import JobSet, Pod

PREEMPTION = "preemption"


def scope(action: Action) -> frozenset[str]:
    """What an action touches: ``pool:``, ``jobset:``, ``pod:`` tokens and ``preemption``."""
    match action:
        case PatchNode():
            return frozenset({f"pool:{action.pool}"})
        case AnnotateJobSet():
            return frozenset({f"jobset:{action.key}", PREEMPTION})
        case EvictPod():
            tokens = {f"pod:{action.key}"}
            if action.pool:
                tokens.add(f"pool:{action.pool}")
            if action.jobset:
                tokens.add(f"jobset:{action.jobset}")
            if action.cause is EvictionCause.PREEMPTION:
                tokens.add(PREEMPTION)
            return frozenset(tokens)
        case ForceDeletePod():
            return frozenset(
                {f"pod:{action.key}"} | ({f"jobset:{action.jobset}"} if action.jobset else set())
            )
    return frozenset()


@dataclass(frozen=True, slots=True)
class _Expectation:
    describe: str
    scope: frozenset[str]
    deadline: float
    met: Callable[[], bool]


class Expectations:
    def __init__(
        self,
        nodes: WatchCache[NodeRecord],
        pods: WatchCache[Pod],
        jobsets: WatchCache[JobSet],
        *,
        timeout_seconds: float = 30.0,
    ) -> None:
        self.nodes = nodes
        self.pods = pods
        self.jobsets = jobsets
        self.timeout_seconds = timeout_seconds
        self._pending: list[_Expectation] = []

    def expect(self, results: list[ApplyResult], now: float) -> None:
        """Remember the writes that succeeded (monotonic ``now``), adding to those still pending."""
        deadline = now + self.timeout_seconds
        self._pending.extend(
            e for r in results if r.outcome is Outcome.APPLIED for e in self._for(r, deadline)
        )

    def pending(self, now: float) -> list[str]:
        """Writes not yet visible (and not timed out)."""
        self._pending = [e for e in self._pending if now < e.deadline and not e.met()]
        return [e.describe for e in self._pending]

    def hold(self, actions: Sequence[Action], now: float) -> tuple[tuple[Action, ...], list[Action]]:
        """(actions to apply now, actions held back by pending expectations on what they touch).

        An Event is held with the writes it reports, so none is sent for a held write."""
        self.pending(now)
        blocked = frozenset().union(*(e.scope for e in self._pending)) if self._pending else frozenset()
        if not blocked:
            return tuple(actions), []
        held_ids: set[int] = set()
        for a in actions:
            if not isinstance(a, EmitEvent) and scope(a) & blocked:
                held_ids.add(id(a))
        for a in actions:
            if isinstance(a, EmitEvent) and any(id(r) in held_ids for r in reported_by(a, actions)):
                held_ids.add(id(a))
        go = tuple(a for a in actions if id(a) not in held_ids)
        return go, [a for a in actions if id(a) in held_ids]

    def _for(self, r: ApplyResult, deadline: float) -> list[_Expectation]:
        a = r.action
        s = scope(a)
        match a:
            case PatchNode():
                return [_Expectation(f"node {a.node}", s, deadline, partial(self._node_matches, a))]
            case AnnotateJobSet():
                return [_Expectation(f"jobset {a.key}", s, deadline, partial(self._jobset_matches, a))]
            case EvictPod():
                return [
                    _Expectation(
                        f"pod {a.key} terminating", s, deadline, partial(self._pod_leaving, a.key, a.uid)
                    )
                ]
            case ForceDeletePod():
                return [_Expectation(f"pod {a.key} gone", s, deadline, partial(self._pod_gone, a.key, a.uid))]
        return []

    def _node_matches(self, a: PatchNode) -> bool:
        record = self.nodes.get(a.node)
        if record is None:
            return True
        node = record.node
        keys = {t.key for t in node.taints}
        return (
            all(t.key in keys for t in a.add_taints)
            and not any(key in keys for key in a.remove_taints)
            and all(node.annotations.get(key) == v for key, v in a.set_annotations)
            and not any(key in node.annotations for key in a.remove_annotations)
        )

    def _jobset_matches(self, a: AnnotateJobSet) -> bool:
        js = self.jobsets.get(a.key)
        if js is None or js.uid != a.uid:
            return True
        return all(js.annotations.get(key) == v for key, v in a.annotations)

    def _pod_leaving(self, key: str, uid: str) -> bool:
        pod = self.pods.get(key)
        return pod is None or pod.uid != uid or pod.terminating

    def _pod_gone(self, key: str, uid: str) -> bool:
        pod = self.pods.get(key)
        return pod is None or pod.uid != uid
