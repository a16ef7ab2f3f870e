"""Wait for our own writes to show up in the caches before deciding again.

Right after applying, the watch may not have delivered the changes yet; deciding on that stale view
would repeat the same actions (or, for a preemption whose cost ranking moved, pick a second victim).
Like controller-runtime's expectations, the next decision waits until every applied write is visible,
or until a timeout (a lost event must not wedge the controller; the next list/watch catches up).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from tpu_platform.hotswap.adapter.applier import ApplyResult, Outcome
from tpu_platform.hotswap.adapter.cache import WatchCache
from tpu_platform.hotswap.adapter.convert import NodeRecord
from tpu_platform.hotswap.core.actions import AnnotateJobSet, EvictPod, ForceDeletePod, PatchNode
from tpu_platform.hotswap.core.model import JobSet, Pod


@dataclass(frozen=True, slots=True)
class _Expectation:
    describe: str
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
        self._deadline = 0.0

    def expect(self, results: list[ApplyResult], now: float) -> None:
        """Remember the writes that succeeded (monotonic ``now``)."""
        self._pending = [e for r in results if r.outcome is Outcome.APPLIED for e in self._for(r)]
        self._deadline = now + self.timeout_seconds

    def pending(self, now: float) -> list[str]:
        """Writes not yet visible; empty once all are (or the timeout passed)."""
        if not self._pending:
            return []
        if now >= self._deadline:
            self._pending = []
            return []
        self._pending = [e for e in self._pending if not e.met()]
        return [e.describe for e in self._pending]

    def _for(self, r: ApplyResult) -> list[_Expectation]:
        a = r.action
        match a:
            case PatchNode():
                return [_Expectation(f"node {a.node}", partial(self._node_matches, a))]
            case AnnotateJobSet():
                return [_Expectation(f"jobset {a.key}", partial(self._jobset_matches, a))]
            case EvictPod():
                return [_Expectation(f"pod {a.key} terminating", partial(self._pod_leaving, a.key, a.uid))]
            case ForceDeletePod():
                return [_Expectation(f"pod {a.key} gone", partial(self._pod_gone, a.key, a.uid))]
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
