"""Core actions -> API calls, each idempotent and as narrow as possible, and the Events that report them.

Node patches are JSON Patches guarded by the cached resourceVersion; JobSet records a merge patch
carrying the UID; evictions policy/v1 Evictions and force deletions DELETEs, both with a UID
precondition. A write that depends on one that failed is skipped, an Event is sent only when the
writes it reports were applied, and a failed write never stops the batch. Every write passes the
lease's write budget when it is checked and again when the client sends it; a batch has a time
budget, and node patches go out on a few writers at once. Design notes: docs/hotswap-adapter.md,
"applier".
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from enum import StrEnum

from tpu_platform.hotswap.adapter.client import (
    JOBSET_GROUP,
    JOBSET_VERSION,
    JSON,
    NODE_PATCH_BACKOFF_MAX_SECONDS,
    ApiError,
    ItemBackoff,
    KubeApi,
    OutOfBudget,
    WriteBudget,
    budgeted,
    micro_time,
)
from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.actions import (
    Action,
    AnnotateJobSet,
    EmitEvent,
    EvictionCause,
    EvictPod,
    ForceDeletePod,
    PatchNode,
)
from tpu_platform.hotswap.core.model import Node, Snapshot

NODE_PATCH_WORKERS = 4
"""Node patches written at once (each checked against the write budget on its own); 1 writes them one
at a time."""
log = logging.getLogger("hotswap.apply")
CONTROLLER_NAME = "tpu-platform.dev/hotswap"
"""``reportingController`` of every Event the controller writes."""
_API_VERSIONS = {"Node": "v1", "Pod": "v1", "JobSet": f"{JOBSET_GROUP}/{JOBSET_VERSION}"}
_EVENT_SEQUENCE = itertools.count()


class Outcome(StrEnum):
    APPLIED = "applied"
    GONE = "gone"
    """404: the object no longer exists; nothing left to do."""
    CONFLICT = "conflict"
    """409/422: the object changed (UID or resourceVersion); the next reconcile retries."""
    BLOCKED = "blocked"
    """429 on eviction: a PodDisruptionBudget refused it."""
    SKIPPED = "skipped"
    OUT_OF_BUDGET = "fenced"
    """Not issued: no write budget, the lease not held with margin (when checked, or when the client
    would have sent it), or the process is stopping. Logged and counted as ``fenced``, the value
    ``bench/chaos_causes.py`` reads."""
    BACKOFF = "backoff"
    """Not issued: this target failed recently and waits out its backoff."""
    DEFERRED = "deferred"
    """Not issued: the batch spent its time budget; the next reconcile decides it again."""
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class ApplyResult:
    action: Action
    outcome: Outcome
    detail: str = ""
    status: int | None = None
    """HTTP status of the write (0: transport error; None: not issued)."""
    retry_after: float | None = None


def _pointer(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def node_patch(node: Node, action: PatchNode) -> list[JSON]:
    """JSON Patch for one PatchNode against the node as cached."""
    ops: list[JSON] = []
    if node.resource_version:
        ops.append({"op": "test", "path": "/metadata/resourceVersion", "value": node.resource_version})
    removed = [i for i, t in enumerate(node.taints) if t.key in action.remove_taints]
    for i in reversed(removed):
        ops.append({"op": "test", "path": f"/spec/taints/{i}/key", "value": node.taints[i].key})
        ops.append({"op": "remove", "path": f"/spec/taints/{i}"})
    present = {(t.key, t.effect) for t in node.taints if t.key not in action.remove_taints}
    adds = []
    for t in action.add_taints:
        if (t.key, t.effect) in present:
            continue
        body: JSON = {"key": t.key, "effect": t.effect}
        if t.value:
            body["value"] = t.value
        adds.append(body)
    if adds:
        if node.taints:
            ops.extend({"op": "add", "path": "/spec/taints/-", "value": body} for body in adds)
        else:
            ops.append({"op": "add", "path": "/spec/taints", "value": adds})
    if action.set_annotations and not node.annotations:
        ops.append({"op": "add", "path": "/metadata/annotations", "value": dict(action.set_annotations)})
    else:
        for key, value in action.set_annotations:
            ops.append({"op": "add", "path": f"/metadata/annotations/{_pointer(key)}", "value": value})
    for key in action.remove_annotations:
        if key in node.annotations:
            ops.append({"op": "remove", "path": f"/metadata/annotations/{_pointer(key)}"})
    return ops


def jobset_patch(action: AnnotateJobSet) -> JSON:
    return {"metadata": {"uid": action.uid, "annotations": dict(action.annotations)}}


def eviction_body(action: EvictPod) -> JSON:
    return {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": action.name, "namespace": action.namespace},
        "deleteOptions": {"preconditions": {"uid": action.uid}},
    }


def event_name(regarding: str, now: float) -> str:
    """``<object>.<hex nanoseconds>``, as client-go's event recorder names Events
    (``tools/record/event.go``, ``makeEvent``). Not a ``generateName`` of ``<object>.``: the API
    server validates a generateName as a DNS subdomain prefix, where only a trailing ``-`` is
    allowed (apimachinery ``ValidateObjectMeta``, ``maskTrailingDash``), so it rejects that with 422.
    A process-wide sequence keeps two Events of one reconcile on one object apart."""
    return f"{regarding[:200]}.{int(now * 1e9) + next(_EVENT_SEQUENCE):x}"


def event_body(action: EmitEvent, *, identity: str, now: float, node_namespace: str) -> tuple[str, JSON]:
    """(namespace, events.k8s.io/v1 Event) for an EmitEvent."""
    namespace = action.namespace or node_namespace
    regarding: JSON = {
        "apiVersion": _API_VERSIONS.get(action.kind, "v1"),
        "kind": action.kind,
        "name": action.name,
    }
    if action.namespace:
        regarding["namespace"] = action.namespace
    if action.uid:
        regarding["uid"] = action.uid
    body: JSON = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": event_name(action.name, now), "namespace": namespace},
        "eventTime": micro_time(now),
        "reportingController": CONTROLLER_NAME,
        "reportingInstance": identity,
        "action": action.action or action.reason,
        "reason": action.reason,
        "note": action.message[:1024],
        "type": action.type,
        "regarding": regarding,
    }
    return namespace, body


def _outcome(err: ApiError, *, eviction: bool = False) -> Outcome:
    if err.status == 404:
        return Outcome.GONE
    if err.status in (409, 422):
        return Outcome.CONFLICT
    if eviction and err.status == 429:
        return Outcome.BLOCKED
    return Outcome.FAILED


def target(action: Action) -> str:
    """The object an action writes (the per-item backoff key)."""
    match action:
        case PatchNode():
            return f"node/{action.node}"
        case AnnotateJobSet():
            return f"jobset/{action.key}"
        case EvictPod() | ForceDeletePod():
            return f"pod/{action.key}"
        case EmitEvent():
            return f"event/{action.kind}/{action.namespace}/{action.name}/{action.reason}"
    return ""


def reported_by(event: EmitEvent, actions: Sequence[Action]) -> list[Action]:
    """The writes an Event reports (see the core's ``EmitEvent`` uses)."""
    key = f"{event.namespace}/{event.name}"
    if event.kind == "Node":
        return [a for a in actions if isinstance(a, PatchNode) and a.node == event.name]
    if event.action == "Evict":
        return [
            a
            for a in actions
            if isinstance(a, EvictPod) and a.cause is EvictionCause.FAIL_FAST and a.jobset == key
        ]
    if event.action == "ForceDelete":
        return [a for a in actions if isinstance(a, ForceDeletePod) and a.jobset == key]
    if event.action == "Preempt":
        victims = {
            a.key
            for a in actions
            if isinstance(a, AnnotateJobSet)
            and (a.key == key or dict(a.annotations).get(k.PREEMPTED_FOR_ANNOTATION) == key)
        }
        return [
            a
            for a in actions
            if (isinstance(a, AnnotateJobSet) and a.key in victims)
            or (isinstance(a, EvictPod) and a.cause is EvictionCause.PREEMPTION and a.jobset in victims)
        ]
    return []


def taints_first(actions: Sequence[Action]) -> tuple[Action, ...]:
    """The same actions, node patches that add a taint first (stable otherwise): a taint keeps
    new pods off a broken slice, an untaint or an annotation only returns capacity or records."""
    return tuple(sorted(actions, key=lambda a: 0 if isinstance(a, PatchNode) and a.add_taints else 1))


class Applier:
    def __init__(
        self,
        api: KubeApi,
        *,
        identity: str,
        node_event_namespace: str = "default",
        clock: Callable[[], float] = time.time,
        may_write: Callable[[], bool] = lambda: True,
        backoff: ItemBackoff | None = None,
        node_backoff: ItemBackoff | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        node_patch_workers: int = NODE_PATCH_WORKERS,
        write_budget: WriteBudget | None = None,
    ) -> None:
        if node_patch_workers < 1:
            raise ValueError(f"node_patch_workers must be >= 1, got {node_patch_workers}")
        self.node_patch_workers = node_patch_workers
        self.api = api
        self.identity = identity
        self.node_event_namespace = node_event_namespace
        self.clock = clock
        self.may_write = may_write
        self.write_budget = write_budget
        """Seconds a write sent now may take (None: none may start); None here: no lease budget."""
        self.backoff = backoff if backoff is not None else ItemBackoff()
        self.node_backoff = (
            node_backoff if node_backoff is not None else ItemBackoff(cap=NODE_PATCH_BACKOFF_MAX_SECONDS)
        )
        self.monotonic = monotonic

    def backoff_for(self, action: Action) -> ItemBackoff:
        """Node patches back off briefly (the taint must not wait); every other write longer."""
        return self.node_backoff if isinstance(action, PatchNode) else self.backoff

    def apply(
        self, actions: Sequence[Action], snapshot: Snapshot, *, deadline: float | None = None
    ) -> list[ApplyResult]:
        """Apply in order; every action gets an outcome, failures are retried by a later reconcile.
        No write is issued after ``deadline`` (monotonic): the rest are deferred."""
        nodes = {n.name: n for n in snapshot.nodes}
        untainted_pools: set[str] = set()
        unrecorded: set[str] = set()
        failed_evictions: set[str] = set()
        results: list[ApplyResult] = []
        outcomes: dict[int, Outcome] = {}
        runs = self._node_patch_runs(actions)
        early: dict[int, ApplyResult] = {}
        for action in actions:
            if id(action) in runs:
                early.update(self._write_run(runs[id(action)], nodes, deadline=deadline))
            if id(action) in early:
                result = early[id(action)]
            elif isinstance(action, EmitEvent):
                unissued = [
                    a
                    for a in reported_by(action, actions)
                    if outcomes.get(id(a)) not in (Outcome.APPLIED, None)
                ]
                if unissued:
                    result = ApplyResult(
                        action, Outcome.SKIPPED, f"{len(unissued)} reported write(s) not applied"
                    )
                else:
                    result = self._guarded(
                        action, nodes, untainted_pools, unrecorded, failed_evictions, deadline=deadline
                    )
            else:
                result = self._guarded(
                    action, nodes, untainted_pools, unrecorded, failed_evictions, deadline=deadline
                )
            outcomes[id(action)] = result.outcome
            results.append(result)
            ok = result.outcome in (Outcome.APPLIED, Outcome.GONE)
            if not ok:
                match action:
                    case PatchNode() if action.add_taints:
                        untainted_pools.add(action.pool)
                    case AnnotateJobSet():
                        unrecorded.add(action.key)
                    case EvictPod():
                        failed_evictions.add(action.key)
            level = logging.INFO if ok else logging.WARNING
            log.log(
                level,
                "action",
                extra={
                    "fields": {
                        "action": type(action).__name__,
                        **_describe(action),
                        "outcome": result.outcome,
                        "detail": result.detail,
                    }
                },
            )
        return results

    def _node_patch_runs(self, actions: Sequence[Action]) -> dict[int, list[PatchNode]]:
        """Runs of two or more consecutive node patches, by ``id`` of their first action (written
        when the loop reaches it, so the order against other writes holds). With one worker, none."""
        if self.node_patch_workers <= 1:
            return {}
        runs: dict[int, list[PatchNode]] = {}
        run: list[PatchNode] = []
        for action in (*actions, None):
            if isinstance(action, PatchNode):
                run.append(action)
                continue
            if len(run) > 1:
                runs[id(run[0])] = run
            run = []
        return runs

    def _write_run(
        self, run: Sequence[PatchNode], nodes: dict[str, Node], *, deadline: float | None
    ) -> dict[int, ApplyResult]:
        """One run of node patches: per node in order, nodes in parallel; returns when all returned."""
        by_node: dict[str, list[PatchNode]] = {}
        for a in run:
            by_node.setdefault(a.node, []).append(a)

        def write(patches: list[PatchNode]) -> list[tuple[int, ApplyResult]]:
            return [(id(a), self._guarded(a, nodes, set(), set(), set(), deadline=deadline)) for a in patches]

        workers = min(self.node_patch_workers, len(by_node))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="apply-node") as pool:
            futures = [pool.submit(write, patches) for patches in by_node.values()]
            return {key: result for f in futures for key, result in f.result()}

    def _guarded(
        self,
        action: Action,
        nodes: dict[str, Node],
        untainted_pools: set[str],
        unrecorded: set[str],
        failed_evictions: set[str],
        *,
        deadline: float | None = None,
    ) -> ApplyResult:
        """Deadline, backoff and write-budget checks around one write, and the backoff bookkeeping
        after it."""
        key = target(action)
        backoff = self.backoff_for(action)

        def gate() -> ApplyResult | None:
            if deadline is not None and self.monotonic() >= deadline:
                return ApplyResult(action, Outcome.DEFERRED, "batch time budget spent")
            wait = backoff.waiting(key)
            if wait > 0:
                return ApplyResult(action, Outcome.BACKOFF, f"retry in {wait:.1f}s")
            if not self.may_write() or (self.write_budget is not None and self.write_budget() is None):
                return ApplyResult(action, Outcome.OUT_OF_BUDGET, "lease not held with margin, or stopping")
            return None

        with budgeted(self.write_budget):
            result = self._apply_one(action, nodes, untainted_pools, unrecorded, failed_evictions, gate=gate)
        if result.outcome in (Outcome.APPLIED, Outcome.GONE, Outcome.CONFLICT):
            backoff.forget(key)
        elif result.outcome in (Outcome.FAILED, Outcome.BLOCKED):
            backoff.failed(key, result.retry_after, escalate=result.status != 0)
        return result

    def _apply_one(
        self,
        action: Action,
        nodes: dict[str, Node],
        untainted_pools: set[str],
        unrecorded: set[str],
        failed_evictions: set[str],
        *,
        gate: Callable[[], ApplyResult | None] = lambda: None,
    ) -> ApplyResult:
        try:
            match action:
                case PatchNode():
                    node = nodes.get(action.node)
                    if node is None:
                        return ApplyResult(action, Outcome.SKIPPED, "node not in snapshot")
                    ops = node_patch(node, action)
                    if len(ops) <= 1:
                        return ApplyResult(action, Outcome.SKIPPED, "nothing to change")
                    if (held := gate()) is not None:
                        return held
                    self.api.patch_node(action.node, ops)
                case AnnotateJobSet():
                    if (held := gate()) is not None:
                        return held
                    self.api.patch_jobset(action.namespace, action.name, jobset_patch(action))
                case EvictPod():
                    if action.cause is EvictionCause.FAIL_FAST and action.pool in untainted_pools:
                        return ApplyResult(
                            action, Outcome.SKIPPED, f"pool {action.pool} could not be tainted"
                        )
                    if action.cause is EvictionCause.PREEMPTION and action.jobset in unrecorded:
                        return ApplyResult(action, Outcome.SKIPPED, "preemption record not written")
                    if (held := gate()) is not None:
                        return held
                    self.api.evict_pod(action.namespace, action.name, eviction_body(action))
                case ForceDeletePod():
                    if action.key in failed_evictions:
                        return ApplyResult(action, Outcome.SKIPPED, "eviction of this pod failed")
                    if (held := gate()) is not None:
                        return held
                    self.api.delete_pod(action.namespace, action.name, grace_period_seconds=0, uid=action.uid)
                case EmitEvent():
                    namespace, body = event_body(
                        action,
                        identity=self.identity,
                        now=self.clock(),
                        node_namespace=self.node_event_namespace,
                    )
                    if (held := gate()) is not None:
                        return held
                    self.api.create_event(namespace, body)
        except OutOfBudget as err:
            return ApplyResult(action, Outcome.OUT_OF_BUDGET, str(err))
        except ApiError as err:
            return ApplyResult(
                action,
                _outcome(err, eviction=isinstance(action, EvictPod)),
                str(err),
                status=err.status,
                retry_after=err.retry_after,
            )
        except Exception as err:
            log.exception("action raised", extra={"fields": {"action": type(action).__name__}})
            return ApplyResult(action, Outcome.FAILED, f"{type(err).__name__}: {err}", status=0)
        return ApplyResult(action, Outcome.APPLIED, status=200)


def _describe(action: Action) -> dict[str, str]:
    match action:
        case PatchNode():
            return {"node": action.node, "pool": action.pool, "reason": action.reason}
        case AnnotateJobSet():
            return {"jobset": action.key, "reason": action.reason}
        case EvictPod():
            return {
                "pod": action.key,
                "cause": str(action.cause),
                "pool": action.pool or "",
                "reason": action.reason,
            }
        case ForceDeletePod():
            return {"pod": action.key, "node": action.node, "reason": action.reason}
        case EmitEvent():
            return {"object": f"{action.kind} {action.namespace}/{action.name}", "reason": action.reason}
    return {}
