"""Prometheus metrics (prometheus_client), on a registry of their own so tests can inspect them."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from tpu_platform.hotswap.core.reconcile import Decision
from tpu_platform.hotswap.core.workload_signals import REPORTED_REASON, WITHDRAWN_NOTE

PREFIX = "hotswap"


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.reconcile_duration = Histogram(
            f"{PREFIX}_reconcile_duration_seconds",
            "Time to build the snapshot and decide.",
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
            registry=r,
        )
        self.reconciles = Counter(f"{PREFIX}_reconciles", "Reconciles run.", ["result"], registry=r)
        self.actions = Counter(
            f"{PREFIX}_actions",
            "Actions by kind and outcome (dry-run and not-leader included).",
            ["kind", "outcome"],
            registry=r,
        )
        self.detections = Counter(
            f"{PREFIX}_unhealthy_pool_detections", "Pools declared unhealthy.", registry=r
        )
        self.recoveries = Counter(
            f"{PREFIX}_pool_recoveries", "Unhealthy pools declared healthy again.", registry=r
        )
        self.recovery_seconds = Histogram(
            f"{PREFIX}_pool_recovery_seconds",
            "Time from a pool's unhealthy declaration to its recovery.",
            buckets=(30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400),
            registry=r,
        )
        self.preemptions = Counter(f"{PREFIX}_preemptions", "Preemptions decided and applied.", registry=r)
        self.preempted_slices = Counter(
            f"{PREFIX}_preempted_slices", "Slices freed by preemption.", registry=r
        )
        self.fail_fast_evictions = Counter(
            f"{PREFIX}_fail_fast_evictions", "Pods evicted from unhealthy pools.", registry=r
        )
        self.force_deletions = Counter(
            f"{PREFIX}_force_deletions", "Pods stuck Terminating on dead nodes force-deleted.", registry=r
        )
        self.unhealthy_pools = Gauge(
            f"{PREFIX}_unhealthy_pools", "Pools currently declared unhealthy.", registry=r
        )
        self.chip_signal_detections = Counter(
            f"{PREFIX}_chip_signal_detections",
            "Pools declared unhealthy on workload TPU-error reports (signal=workload_reports), "
            "confirmed by withdrawn chips (signal=chips_withdrawn, counted in both).",
            ["signal"],
            registry=r,
        )
        self.suspect_pools = Gauge(
            f"{PREFIX}_suspect_pools",
            "Pools with unconfirmed TPU-error reports or withdrawn chips (nothing done for them).",
            registry=r,
        )
        self.is_leader = Gauge(f"{PREFIX}_is_leader", "1 if this replica holds the lease.", registry=r)
        self.caches_synced = Gauge(f"{PREFIX}_caches_synced", "1 once every cache has listed.", registry=r)
        self.held = Gauge(
            f"{PREFIX}_mass_outage_hold", "1 while the mass-outage guard holds actions.", registry=r
        )
        self.dry_run = Gauge(f"{PREFIX}_dry_run", "1 if running in dry-run mode.", registry=r)
        # --- API transport -----------------------------------------------------------------------
        self.api_requests = Counter(
            f"{PREFIX}_api_requests",
            "API requests by verb, resource and HTTP code (0: transport error, no reply).",
            ["verb", "resource", "code"],
            registry=r,
        )
        self.api_latency = Histogram(
            f"{PREFIX}_api_request_duration_seconds",
            "API request latency by verb (a watch: until its stream opened or failed).",
            ["verb"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 15.0),
            registry=r,
        )
        # --- caches ------------------------------------------------------------------------------
        self.watch_restarts = Counter(
            f"{PREFIX}_watch_restarts", "Watch requests opened, by resource.", ["resource"], registry=r
        )
        self.relists = Counter(
            f"{PREFIX}_relists",
            "Full lists after the first, by resource and reason (expired: 410 or too large RV).",
            ["resource", "reason"],
            registry=r,
        )
        self.watch_failures = Counter(
            f"{PREFIX}_watch_failures",
            "Failed list/watch attempts by resource and status (0: transport).",
            ["resource", "code"],
            registry=r,
        )
        self.cache_age = Gauge(
            f"{PREFIX}_cache_age_seconds",
            "Seconds since the API server was last heard from, per cache.",
            ["resource"],
            registry=r,
        )
        self.cache_fresh = Gauge(
            f"{PREFIX}_cache_fresh",
            "1 while a cache is listed, watched and not failing.",
            ["resource"],
            registry=r,
        )
        # --- leadership and the loop -------------------------------------------------------------
        self.leader_transitions = Counter(
            f"{PREFIX}_leader_transitions",
            "Times this process started or stopped leading.",
            ["to"],
            registry=r,
        )
        self.pending_expectations = Gauge(
            f"{PREFIX}_pending_expectations", "Own writes not yet seen in the caches.", registry=r
        )
        self.held_actions = Counter(
            f"{PREFIX}_held_actions",
            "Actions held back until earlier writes on what they touch are observed.",
            registry=r,
        )
        self.batch_duration = Histogram(
            f"{PREFIX}_batch_duration_seconds",
            "Time to apply one reconcile's actions.",
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
            registry=r,
        )
        self.thread_alive = Gauge(
            f"{PREFIX}_thread_alive",
            "1 while a worker thread (elector, watch, loop) runs.",
            ["thread"],
            registry=r,
        )
        # hotswap_rejected_inputs_total{kind,reason} is registered by adapter/rejections.py

    # --- observers (RequestObserver, CacheObserver) ------------------------------------------------
    def chip_signals(self, decision: Decision) -> None:
        """Count declarations caused by chip/ICI signals and the pools still only suspect."""
        self.suspect_pools.set(len(decision.suspects))
        for pool in decision.pools:
            if not pool.declared_now:
                continue
            reported = [p.reason for p in pool.problems if p.reason.startswith(REPORTED_REASON)]
            if reported:
                self.chip_signal_detections.labels(signal="workload_reports").inc()
            if any(WITHDRAWN_NOTE in r for r in reported):
                self.chip_signal_detections.labels(signal="chips_withdrawn").inc()

    def api_request(self, verb: str, resource: str, code: int, seconds: float) -> None:
        self.api_requests.labels(verb=verb, resource=resource, code=str(code)).inc()
        self.api_latency.labels(verb=verb).observe(seconds)

    def watch_started(self, resource: str) -> None:
        self.watch_restarts.labels(resource=resource).inc()

    def relisted(self, resource: str, reason: str) -> None:
        self.relists.labels(resource=resource, reason=reason).inc()

    def watch_failed(self, resource: str, status: int) -> None:
        self.watch_failures.labels(resource=resource, code=str(status)).inc()

    def leadership(self, leading: bool) -> None:
        self.is_leader.set(1 if leading else 0)
        self.leader_transitions.labels(to="leader" if leading else "follower").inc()

    def value(self, name: str, labels: dict[str, str] | None = None) -> float:
        """Current sample value (0 if absent): for tests and debugging."""
        v = self.registry.get_sample_value(name, labels or {})
        return 0.0 if v is None else v
