"""The control loop: caches -> snapshot -> decide -> (leader, not dry-run) apply, and what holds an
action back until the caches show what it needs.

An action waits while a cache it reads is stale (:func:`needs`: a stale pod cache stops evictions but
not a taint; nothing is decided while the node caches are stale), and while our own earlier writes on
what it touches are not visible in the caches yet (:class:`Expectations`). Every write passes the
applier's write-budget check. Liveness covers the loop, the elector and every watch thread: a dead or
wedged thread gets the pod restarted. Design notes: docs/hotswap-adapter.md, "controller".
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from tpu_platform.hotswap.adapter.applier import Applier, ApplyResult, Outcome, reported_by, taints_first
from tpu_platform.hotswap.adapter.cache import WatchCache
from tpu_platform.hotswap.adapter.client import KubeApi, Resource
from tpu_platform.hotswap.adapter.compute_engine import SENT, Evidence, VmResetter
from tpu_platform.hotswap.adapter.config import Config
from tpu_platform.hotswap.adapter.convert import (
    LeaseObservations,
    NodeLease,
    NodeRecord,
    job_from_api,
    jobset_from_api,
    lease_from_api,
    node_from_api,
    pod_from_api,
    pools_from_nodes,
    with_leases,
    with_pods,
)
from tpu_platform.hotswap.adapter.elector import LeaderElector
from tpu_platform.hotswap.adapter.metrics import Metrics
from tpu_platform.hotswap.adapter.rejections import report_rejections
from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.actions import (
    Action,
    AnnotateJobSet,
    EmitEvent,
    EvictionCause,
    EvictPod,
    ForceDeletePod,
    PatchNode,
    ResetVm,
)
from tpu_platform.hotswap.core.model import ChildJob, JobSet, Pod, Snapshot
from tpu_platform.hotswap.core.ownership import owned_pods
from tpu_platform.hotswap.core.pool_health import PoolMemory
from tpu_platform.hotswap.core.reconcile import Decision, decide

log = logging.getLogger("hotswap.controller")


# --- which caches an action needs fresh -----------------------------------------------------------
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


# --- waiting for our own writes to show in the caches ---------------------------------------------
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
    """Our own successful writes not yet visible in the caches, and the actions they hold back."""

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


# --- the loop -------------------------------------------------------------------------------------
BATCH_BUDGET_MIN_SECONDS = 1.0
"""A batch writes for at most ``max(this, reconcile_interval_seconds)``, then the loop decides
again at once: a pool that fails during a long backlog is decided within that, not after it."""
STALE_NODE_RETRY_MAX_SECONDS = 1.0
"""A stale node cache (nodes, node Leases) lists again within ``min(this, reconcile interval)``,
jittered (``WatchCache.stale_retry_seconds``): every taint waits for it, and a LIST of TPU nodes is
cheap. The pod and JobSet caches keep the reflector's backoff alone."""


class Controller:
    """One replica's loop: every replica watches and decides; only the leader's decisions are applied."""

    def __init__(
        self,
        api: KubeApi,
        config: Config,
        *,
        identity: str,
        metrics: Metrics | None = None,
        leader: LeaderElector | None = None,
        clock: Callable[[], float] = time.time,
        evidence: Evidence | None = None,
        resetter: VmResetter | None = None,
    ) -> None:
        self.config = config
        self.metrics = metrics if metrics is not None else Metrics()
        self.leader = leader
        self.clock = clock
        self.wake = threading.Event()
        """Reconcile now: set by every cache change but the node Leases', and after a deferred batch."""
        self.stopping = threading.Event()
        self.threads: list[threading.Thread] = []
        self._build_caches(api)
        self._build_writers(api, identity)
        self._use_compute_engine(evidence, resetter)
        self.last_loop = time.monotonic()
        self._last_dry_run: tuple[Action, ...] = ()
        self._was_held = False
        self.memory: PoolMemory | None = None
        """The last applied decision's pool memory: keeps a recreated pool's state while this process
        leads. Not persisted: a restarted controller or a new leader rebuilds from node annotations."""
        self.metrics.dry_run.set(1 if config.runtime.dry_run else 0)

    def _build_caches(self, api: KubeApi) -> None:
        """The reflectors the snapshot is built from: nodes, pods, JobSets and their Jobs, and node
        Leases with ``lease_stale_seconds`` on. The node caches retry quickly once stale."""
        rt = self.config.runtime
        stale_retry = min(STALE_NODE_RETRY_MAX_SECONDS, rt.reconcile_interval_seconds)
        self.nodes: WatchCache[NodeRecord] = WatchCache(
            api,
            Resource("nodes", rt.node_label_selector),
            node_from_api,
            watch_timeout_seconds=rt.watch_timeout_seconds,
            on_change=self.wake.set,
            observer=self.metrics,
            stale_retry_seconds=stale_retry,
        )
        self.pods: WatchCache[Pod] = WatchCache(
            api,
            Resource("pods", rt.pod_label_selector),
            pod_from_api,
            watch_timeout_seconds=rt.watch_timeout_seconds,
            on_change=self.wake.set,
            observer=self.metrics,
            # A failed pod's termination message may carry a TPU error report.
            keep_deleted=lambda pod: pod.finished and bool(pod.terminations),
        )
        self.jobsets: WatchCache[JobSet] = WatchCache(
            api,
            Resource("jobsets"),
            jobset_from_api,
            watch_timeout_seconds=rt.watch_timeout_seconds,
            on_change=self.wake.set,
            observer=self.metrics,
        )
        self.jobs: WatchCache[ChildJob] = WatchCache(
            api,
            # Only the Jobs the JobSet controller labels; any other Job is no JobSet's child anyway.
            Resource("jobs", k.JOBSET_NAME_LABEL),
            job_from_api,
            watch_timeout_seconds=rt.watch_timeout_seconds,
            on_change=self.wake.set,
            observer=self.metrics,
        )
        self.leases: WatchCache[NodeLease] | None = None
        """Node heartbeats, only with ``lease_stale_seconds`` on. No wake-up on their events: every
        kubelet renews every 10 s, and a stale Lease is one that does not change, which the periodic
        reconcile finds."""
        if self.config.settings.lease_stale_seconds > 0:
            self.leases = WatchCache(
                api,
                Resource("leases", namespace=k.NODE_LEASE_NAMESPACE),
                lease_from_api,
                watch_timeout_seconds=rt.watch_timeout_seconds,
                observer=self.metrics,
                stale_retry_seconds=stale_retry,
            )
        self.lease_observations = LeaseObservations()

    def _build_writers(self, api: KubeApi, identity: str) -> None:
        """The applier, whose every write passes :meth:`may_write` and the elector's write budget,
        and the expectations its writes leave until the caches show them."""
        self.applier = Applier(
            api,
            identity=identity,
            node_event_namespace=self.config.runtime.node_event_namespace,
            clock=self.clock,
            may_write=self.may_write,
            write_budget=None if self.leader is None else self.leader.write_budget,
        )
        self.expectations = Expectations(self.nodes, self.pods, self.jobsets)

    def _use_compute_engine(self, evidence: Evidence | None, resetter: VmResetter | None) -> None:
        self.evidence = evidence
        """Compute Engine answers for suspect nodes (with ``compute_corroboration`` on)."""
        self.resetter = resetter
        """Compute Engine resets of silent VMs (with ``reset_silent_vms`` on as well)."""
        if evidence is not None and resetter is not None:
            evidence.pending_reset = resetter.pending

    @property
    def caches(self) -> tuple[WatchCache[Any], ...]:
        base: tuple[WatchCache[Any], ...] = (self.nodes, self.pods, self.jobsets, self.jobs)
        return base if self.leases is None else (*base, self.leases)

    @property
    def synced(self) -> bool:
        """Every cache is fresh: readiness, and the permission to decide."""
        return all(c.synced for c in self.caches)

    def may_write(self) -> bool:
        """The check before each write: not stopping, and (with election) the lease held with margin."""
        if self.stopping.is_set():
            return False
        return self.leader is None or self.leader.may_write()

    def alive(self) -> bool:
        """The loop came round recently, the elector too, and no worker thread has died."""
        rt = self.config.runtime
        limit = max(30.0, 5 * rt.reconcile_interval_seconds)
        now = time.monotonic()
        ok = now - self.last_loop < limit
        if self.leader is not None and self.leader.clock is time.monotonic:
            ok = ok and now - self.leader.last_beat < limit + rt.retry_period_seconds * 3
        for t in self.threads:
            running = t.is_alive()
            self.metrics.thread_alive.labels(thread=t.name).set(1 if running else 0)
            ok = ok and (running or self.stopping.is_set())
        return ok

    def watch_thread(self, thread: threading.Thread) -> None:
        """Count ``thread`` (e.g. the elector's) in liveness."""
        self.threads.append(thread)

    def snapshot(self, now: float) -> Snapshot:
        records = self.nodes.values()
        declared = self.jobsets.values()
        pods = owned_pods(self.pods.snapshot(), self.jobs.values(), declared)
        by_jobset: dict[str, list[Pod]] = {}
        for p in pods:
            if p.jobset is not None:
                by_jobset.setdefault(p.jobset, []).append(p)
        jobsets = tuple(with_pods(js, by_jobset.get(js.key, ())) for js in declared)
        nodes = (
            tuple(r.node for r in records)
            if self.leases is None
            else with_leases(records, self.lease_observations.observe(self.leases.values(), now))
        )
        if self.evidence is not None and self.is_leader():  # a standby's decision is never applied
            nodes = self.evidence.join(nodes, self.config.settings, now)
        return Snapshot(
            now=now,
            pools=pools_from_nodes(records),
            nodes=nodes,
            jobsets=jobsets,
            pods=tuple(pods),
        )

    def is_leader(self) -> bool:
        return self.leader is None or self.leader.is_leader()

    def reconcile_once(self) -> Decision | None:
        """One pass; None while a node cache is stale. Actions that read a stale cache wait until
        it is fresh, and actions on what our last writes touched wait until those writes are
        visible in the caches."""
        now_mono = time.monotonic()
        watched = [c.resource.name for c in self.caches]
        fresh = []
        for c in self.caches:
            age = c.age(now_mono)
            self.metrics.cache_age.labels(resource=c.resource.name).set(age if age != float("inf") else -1)
            is_fresh = c.fresh(now_mono)
            self.metrics.cache_fresh.labels(resource=c.resource.name).set(1 if is_fresh else 0)
            if is_fresh:
                fresh.append(c.resource.name)
        self.metrics.caches_synced.set(1 if len(fresh) == len(watched) else 0)
        if not can_decide(fresh, watched):
            return None
        self.metrics.pending_expectations.set(len(self.expectations.pending(now_mono)))
        started = time.perf_counter()
        snap = self.snapshot(self.clock())
        decision = report_rejections(
            decide(snap, self.config.settings, memory=self.memory), self.metrics.registry
        )
        self.metrics.reconcile_duration.observe(time.perf_counter() - started)
        self.metrics.unhealthy_pools.set(sum(1 for p in decision.pools if p.declared or p.declared_now))
        self.metrics.held.set(1 if decision.held else 0)
        if decision.held != self._was_held:
            self._was_held = decision.held
            log.warning(
                "mass-outage guard", extra={"fields": {"held": decision.held, "notes": list(decision.notes)}}
            )
        leading = self.is_leader()
        self.metrics.is_leader.set(1 if leading else 0)
        # Remember only what this process wrote: a dry run or a standby writes nothing.
        self.memory = decision.memory if leading and not self.config.runtime.dry_run else None
        if self.config.runtime.dry_run:
            self._log_dry_run(decision)
            self.metrics.reconciles.labels(result="dry-run").inc()
        elif not leading:
            for a in decision.actions:
                self.metrics.actions.labels(kind=type(a).__name__, outcome="not-leader").inc()
            self.metrics.reconciles.labels(result="standby").inc()
        else:
            resets = [a for a in decision.actions if isinstance(a, ResetVm)]
            ready, stale = runnable(
                [a for a in decision.actions if not isinstance(a, ResetVm)], fresh, watched
            )
            for a in stale:
                self.metrics.actions.labels(kind=type(a).__name__, outcome="stale-cache").inc()
            if stale:
                log.debug(
                    "withheld until the caches they read are fresh",
                    extra={"fields": {"withheld": len(stale), "fresh": fresh}},
                )
            go, held = self.expectations.hold(taints_first(ready), time.monotonic())
            if held:
                self.metrics.held_actions.inc(len(held))
                log.debug(
                    "held until own writes are observed",
                    extra={
                        "fields": {
                            "held": len(held),
                            "pending": self.expectations.pending(time.monotonic())[:5],
                        }
                    },
                )
            batch = time.perf_counter()
            budget = max(BATCH_BUDGET_MIN_SECONDS, self.config.runtime.reconcile_interval_seconds)
            results = self.applier.apply(go, snap, deadline=time.monotonic() + budget) if go else []
            self.metrics.batch_duration.observe(time.perf_counter() - batch)
            if any(r.outcome is Outcome.DEFERRED for r in results):
                self.wake.set()
            self.expectations.expect(results, time.monotonic())
            self._reset_vms(resets, fresh)
            self._record(decision, results)
            self.metrics.reconciles.labels(result="applied").inc()
        return decision

    def _reset_vms(self, resets: list[ResetVm], fresh: list[str]) -> None:
        """Send the decided resets, each only while this replica may still write, only from a fresh
        node cache (the suspicion they act on is the cache's)."""
        for a in resets:
            if self.resetter is None or "nodes" not in fresh or not self.may_write():
                outcome = "no-resetter" if self.resetter is None else "withheld"
            else:
                outcome = self.resetter.reset(a)
                if outcome == SENT and self.evidence is not None:
                    self.evidence.reset_sent(a.node)
            self.metrics.actions.labels(kind="ResetVm", outcome=outcome).inc()

    def _log_dry_run(self, decision: Decision) -> None:
        """Log what would be done, once per distinct plan (the same plan recurs every reconcile)."""
        for a in decision.actions:
            self.metrics.actions.labels(kind=type(a).__name__, outcome="dry-run").inc()
        if decision.actions == self._last_dry_run:
            return
        self._last_dry_run = decision.actions
        for a in decision.actions:
            log.info(
                "dry-run: would apply", extra={"fields": {"action": type(a).__name__, "detail": repr(a)}}
            )
        for note in decision.notes:
            log.info("dry-run: note", extra={"fields": {"note": note}})

    def _record(self, decision: Decision, results: list[ApplyResult]) -> None:
        for r in results:
            self.metrics.actions.labels(kind=type(r.action).__name__, outcome=str(r.outcome)).inc()
            if r.outcome is not Outcome.APPLIED:
                continue
            if isinstance(r.action, EvictPod) and r.action.cause is EvictionCause.FAIL_FAST:
                self.metrics.fail_fast_evictions.inc()
            elif isinstance(r.action, ForceDeletePod):
                self.metrics.force_deletions.inc()
        self.metrics.chip_signals(decision)
        for pool in decision.pools:
            if pool.declared_now:
                self.metrics.detections.inc()
            if pool.recovered_now:
                self.metrics.recoveries.inc()
                if pool.unhealthy_since is not None:
                    self.metrics.recovery_seconds.observe(decision.now - pool.unhealthy_since)
        for p in decision.preemptions:
            self.metrics.preemptions.inc()
            self.metrics.preempted_slices.inc(len(p.pools))
            log.info(
                "preemption",
                extra={
                    "fields": {
                        "beneficiary": p.beneficiary,
                        "victims": list(p.victims),
                        "pools": list(p.pools),
                        "work_lost_chip_seconds": p.work_lost,
                    }
                },
            )
        for note in decision.notes:
            log.debug("note", extra={"fields": {"note": note}})

    def start_caches(self, stop: threading.Event) -> list[threading.Thread]:
        threads = [
            threading.Thread(target=c.run, args=(stop,), name=f"watch-{c.resource.name}", daemon=True)
            for c in self.caches
        ]
        for t in threads:
            t.start()
        self.threads.extend(threads)
        return threads

    def run(self, stop: threading.Event) -> None:
        """Reconcile on watch events (debounced) and at least every reconcile interval.

        ``stop`` (SIGTERM) ends deciding: the write in flight returns, no further write passes
        :meth:`may_write`, and the loop returns so the caller can release the lease."""
        rt = self.config.runtime
        self.stopping = stop
        while not stop.is_set():
            self.last_loop = time.monotonic()
            self.wake.wait(rt.reconcile_interval_seconds)
            if stop.is_set():
                break
            stop.wait(rt.min_reconcile_gap_seconds)
            self.wake.clear()
            try:
                self.reconcile_once()
            except Exception:
                log.exception("reconcile failed")
                self.metrics.reconciles.labels(result="error").inc()
