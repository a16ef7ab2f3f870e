"""The control loop: caches -> snapshot -> decide -> (leader, not dry-run) apply. Handlers stay thin.

A stale cache (not listed, watch failing, or silent too long) blocks only the actions that read
it (``adapter/needs.py``): a stale pod cache stops evictions but not the taint of a pool whose
nodes' cache is fresh; nothing is decided while the node caches are stale, so those retry their
list within a second once stale (:data:`STALE_NODE_RETRY_MAX_SECONDS`). A stale view could
undo or repeat work. Every write passes the applier's fence (the lease held with margin, and the
process not stopping). Liveness covers the loop, the elector and every watch
thread: a dead or wedged thread gets the pod restarted.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from tpu_platform.hotswap.adapter.api import KubeApi, Resource
from tpu_platform.hotswap.adapter.applier import Applier, ApplyResult, Outcome, taints_first
from tpu_platform.hotswap.adapter.cache import WatchCache
from tpu_platform.hotswap.adapter.config import Config
from tpu_platform.hotswap.adapter.convert import (
    LeaseObservations,
    NodeLease,
    NodeRecord,
    jobset_from_api,
    lease_from_api,
    node_from_api,
    pod_from_api,
    pools_from_nodes,
    with_leases,
    with_pods,
)
from tpu_platform.hotswap.adapter.evidence import Evidence
from tpu_platform.hotswap.adapter.expectations import Expectations
from tpu_platform.hotswap.adapter.leader import LeaderElector
from tpu_platform.hotswap.adapter.metrics import Metrics
from tpu_platform.hotswap.adapter.needs import can_decide, runnable
from tpu_platform.hotswap.adapter.owners import job_from_api
from tpu_platform.hotswap.adapter.rejections import report_rejections
from tpu_platform.hotswap.adapter.vm_reset import SENT, VmResetter
from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.actions import Action, EvictionCause, EvictPod, ForceDeletePod, ResetVm
from tpu_platform.hotswap.core.health import PoolMemory
from tpu_platform.hotswap.core.model import ChildJob, JobSet, Pod, Snapshot
from tpu_platform.hotswap.core.ownership import owned_pods
from tpu_platform.hotswap.core.reconcile import Decision, decide

log = logging.getLogger("hotswap.controller")
BATCH_BUDGET_MIN_SECONDS = 1.0
"""A batch writes for at most ``max(this, reconcile_interval_seconds)``, then the loop decides
again at once: a pool that fails during a long backlog is decided within that, not after it."""
STALE_NODE_RETRY_MAX_SECONDS = 1.0
"""A stale node cache (nodes, node Leases) lists again within ``min(this, reconcile interval)``,
jittered (``WatchCache.stale_retry_seconds``): every taint waits for it, and a LIST of TPU nodes is
cheap. The pod and JobSet caches keep the reflector's backoff alone."""


class Controller:
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
        rt = config.runtime
        self.evidence = evidence
        """Compute Engine answers for suspect nodes (with ``compute_corroboration`` on)."""
        self.resetter = resetter
        """Compute Engine resets of silent VMs (with ``reset_silent_vms`` on as well)."""
        if evidence is not None and resetter is not None:
            evidence.pending_reset = resetter.pending
        self.config = config
        self.metrics = metrics if metrics is not None else Metrics()
        self.leader = leader
        self.clock = clock
        self.wake = threading.Event()
        self.stopping = threading.Event()
        self.threads: list[threading.Thread] = []
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
        if config.settings.lease_stale_seconds > 0:
            self.leases = WatchCache(
                api,
                Resource("leases", namespace=k.NODE_LEASE_NAMESPACE),
                lease_from_api,
                watch_timeout_seconds=rt.watch_timeout_seconds,
                observer=self.metrics,
                stale_retry_seconds=stale_retry,
            )
        self.lease_observations = LeaseObservations()
        self.applier = Applier(
            api,
            identity=identity,
            node_event_namespace=rt.node_event_namespace,
            clock=clock,
            may_write=self.may_write,
            write_budget=None if leader is None else leader.write_budget,
        )
        self.expectations = Expectations(self.nodes, self.pods, self.jobsets)
        self.last_loop = time.monotonic()
        self._last_dry_run: tuple[Action, ...] = ()
        self._was_held = False
        self.memory: PoolMemory | None = None
        """The last applied decision's pool memory: keeps a recreated pool's state while this process
        leads. Not persisted: a restarted controller or a new leader rebuilds from node annotations."""
        self.metrics.dry_run.set(1 if rt.dry_run else 0)

    @property
    def caches(self) -> tuple[WatchCache[Any], ...]:
        base: tuple[WatchCache[Any], ...] = (self.nodes, self.pods, self.jobsets, self.jobs)
        return base if self.leases is None else (*base, self.leases)

    @property
    def synced(self) -> bool:
        """Every cache is fresh: readiness, and the permission to decide."""
        return all(c.synced for c in self.caches)

    def may_write(self) -> bool:
        """The fence for each write: not stopping, and (with election) the lease held with margin."""
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

        ``stop`` (SIGTERM) ends deciding: the write in flight returns, no further write passes the
        fence, and the loop returns so the caller can release the lease."""
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
