"""Prometheus metrics (prometheus_client), on a registry of their own so tests can inspect them."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

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
        self.is_leader = Gauge(f"{PREFIX}_is_leader", "1 if this replica holds the lease.", registry=r)
        self.caches_synced = Gauge(f"{PREFIX}_caches_synced", "1 once every cache has listed.", registry=r)
        self.held = Gauge(
            f"{PREFIX}_mass_outage_hold", "1 while the mass-outage guard holds actions.", registry=r
        )
        self.dry_run = Gauge(f"{PREFIX}_dry_run", "1 if running in dry-run mode.", registry=r)
        self.api_requests = Counter(
            f"{PREFIX}_api_requests",
            "Kubernetes API requests by verb, resource and HTTP status (0: no usable reply).",
            ["verb", "resource", "code"],
            registry=r,
        )

    def observe_request(self, verb: str, resource: str, status: int, seconds: float) -> None:
        """A :data:`~tpu_platform.hotswap.adapter.kube.RequestObserver`: count every API request."""
        self.api_requests.labels(verb=verb, resource=resource, code=str(status)).inc()

    def value(self, name: str, labels: dict[str, str] | None = None) -> float:
        """Current sample value (0 if absent): for tests and debugging."""
        v = self.registry.get_sample_value(name, labels or {})
        return 0.0 if v is None else v
