"""Compute Engine evidence joined into each snapshot: for every suspect node
(:func:`tpu_platform.hotswap.core.corroboration.suspects`), the VM behind it is read with
:class:`~tpu_platform.hotswap.adapter.compute.InstanceReader` and the answer put into ``Node.instance``
before ``decide``.

Bounded so a slow or failing Compute API never stalls a reconcile or piles up work:

- concurrency: at most ``max_concurrent`` reads in flight (a pool of that many threads), one per node;
  a suspect beyond that waits for a later reconcile (counted as skipped, ``busy``);
- time: a reconcile waits at most ``deadline_s`` for the reads it started; a read still running then is
  counted late, lands in the cache when it completes and serves a later reconcile (each call also has
  the reader's own timeout);
- rate: a node's answer is re-read once it is ``reread_s`` old; a node without a usable answer (none,
  or not read after its current suspicion began by the core's skew rule, ``read_after_suspicion``) or
  whose last read failed is retried at most every ``retry_s``; and at most ``max_reads_per_minute`` VM
  reads start in any 60 s (each is one ``instances.get`` and one ``zoneOperations.list``). Compute
  Engine's rate quotas are per project and per minute, shared with everything else in the project
  (GKE's own components included), and exceeding one answers 403 ``rateLimitExceeded``
  (https://cloud.google.com/compute/api-quota); the default of 120 is under a tenth of the documented
  default read and list quotas (1,500 per minute per project each). A suspect beyond the budget waits
  (counted as skipped, ``rate``), nodes without a usable answer first.

A failed read keeps the previous answer: the core's max age and its read-after-the-suspicion rule bound
its use, and an error itself never confirms anything. Nodes that stop being suspect leave the cache.
Confirmations and vetoes are counted once per node and suspicion.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from tpu_platform.hotswap.core.corroboration import (
    confirmed_by,
    known_running,
    read_after_suspicion,
    suspect_since,
    suspects,
)
from tpu_platform.hotswap.core.health import node_dead_since
from tpu_platform.hotswap.core.model import Instance, Node
from tpu_platform.hotswap.core.settings import Settings

log = logging.getLogger("hotswap.evidence")

Read = Callable[[str], Instance | None]
"""Reads the VM named by a validated ``gce://`` provider ID; None when nothing usable came back."""


class ComputeMetrics:
    """The Compute Engine side of the controller's metrics, on the controller's registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        r = registry
        self.calls = Counter(
            "hotswap_compute_reads",
            "Compute Engine calls by call (instances.get, zoneOperations.list) and outcome (ok, "
            "not_found, or the client library's exception class).",
            ["call", "outcome"],
            registry=r,
        )
        self.latency = Histogram(
            "hotswap_compute_read_duration_seconds",
            "Compute Engine call latency by call.",
            ["call"],
            buckets=(0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
            registry=r,
        )
        self.late = Counter(
            "hotswap_compute_late_reads",
            "VM reads not answered within the reconcile's deadline (used by a later reconcile).",
            registry=r,
        )
        self.skipped = Counter(
            "hotswap_compute_skipped_reads",
            "Suspect nodes not read: no_provider_id (none, or refused), busy (concurrency bound), rate "
            "(reads per minute).",
            ["reason"],
            registry=r,
        )
        self.confirmations = Counter(
            "hotswap_compute_confirmations",
            "Suspect nodes whose VM Compute Engine confirmed not running, by status (HOST_ERROR: a "
            "host error after the kubelet's last renewal; RESET: the controller's reset done since "
            "then); once per suspicion.",
            ["status"],
            registry=r,
        )
        self.vetoes = Counter(
            "hotswap_compute_vetoes",
            "Suspect nodes NotReady past dead_node_confirm_seconds whose VM read running, so their pods "
            "were not force-deleted; once per suspicion.",
            registry=r,
        )
        self.suspects = Gauge("hotswap_compute_suspects", "Suspect nodes at the last reconcile.", registry=r)
        self.reader_up = Gauge(
            "hotswap_compute_reader_up", "1 once the Compute Engine client was created.", registry=r
        )

    def call(self, call: str, outcome: str, seconds: float) -> None:
        """The reader's observer (``compute.ReadObserver``)."""
        self.calls.labels(call=call, outcome=outcome).inc()
        self.latency.labels(call=call).observe(seconds)


@dataclass(slots=True)
class _Entry:
    provider_id: str = ""
    """The VM the answer is about: a node whose providerID changes starts over."""
    evidence: Instance | None = None
    attempted: float = float("-inf")
    inflight: bool = False
    failed: bool = False
    """The last read gave nothing: retry after ``retry_s``, not ``reread_s``."""


def _as_of(answer: Instance, now: float) -> Instance:
    """An answer sent after the snapshot's ``now`` (a read this reconcile started) dated ``now``: the
    core refuses evidence from its future. Dating it earlier than it was read only makes it look older:
    it can fail the core's read-after-the-suspicion rule, never pass it for an earlier read, and can
    only drop a host error from the interval that confirms, never add one."""
    return answer if answer.observed <= now else replace(answer, observed=now)


class Evidence:
    """The per-node cache of Compute Engine answers and the bounded pool that refreshes it."""

    def __init__(
        self,
        read: Read,
        metrics: ComputeMetrics,
        *,
        max_concurrent: int = 4,
        deadline_s: float = 1.0,
        reread_s: float = 5.0,
        retry_s: float = 2.0,
        max_reads_per_minute: int = 120,
    ) -> None:
        if max_concurrent < 1 or max_reads_per_minute < 1:
            raise ValueError(
                f"max_concurrent and max_reads_per_minute must be >= 1, got {max_concurrent}, "
                f"{max_reads_per_minute}"
            )
        self.read = read
        self.metrics = metrics
        self.max_concurrent = max_concurrent
        self.deadline_s = deadline_s
        self.reread_s = reread_s
        self.retry_s = retry_s
        self.max_reads_per_minute = max_reads_per_minute
        self._started: deque[float] = deque()
        """Start times of the reads of the last 60 s (the snapshot clock)."""
        self._pool = ThreadPoolExecutor(max_workers=max_concurrent, thread_name_prefix="compute")
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        self._inflight = 0
        self._counted: set[tuple[str, str, float]] = set()
        self.pending_reset: Callable[[str, float], float | None] | None = None
        """When this process sent a VM (by provider ID) a reset still in flight (``VmResetter.pending``)."""

    def join(self, nodes: Iterable[Node], settings: Settings, now: float) -> tuple[Node, ...]:
        """``nodes`` with the cached answer of each suspect node's VM, after refreshing what is due
        (waiting at most ``deadline_s``)."""
        nodes = tuple(nodes)
        suspect = {n.name: n for n in suspects(nodes, settings, now)}
        self.metrics.suspects.set(len(suspect))
        started = self._refresh(suspect, settings, now)
        if started:
            _, late = wait(started, timeout=self.deadline_s)
            if late:
                self.metrics.late.inc(len(late))
        with self._lock:
            answers = {
                (name, e.provider_id): _as_of(e.evidence, now)
                for name, e in self._entries.items()
                if e.evidence is not None
            }
        joined = tuple(
            replace(n, instance=self._with_reset(n, answers[(n.name, n.provider_id)], settings, now))
            if n.name in suspect and (n.name, n.provider_id) in answers
            else n
            for n in nodes
        )
        self._count(joined, suspect, settings, now)
        return joined

    def reset_sent(self, name: str) -> None:
        """A reset of ``name``'s VM was sent: read it again at the next reconcile."""
        with self._lock:
            entry = self._entries.get(name)
            if entry is not None:
                entry.attempted = float("-inf")

    def _with_reset(self, node: Node, answer: Instance, settings: Settings, now: float) -> Instance:
        """The answer, marked pending while this process's reset is in flight and not yet on record."""
        sent = self.pending_reset(node.provider_id, now) if self.pending_reset is not None else None
        since = suspect_since(node, settings, now)
        if sent is None or answer.reset_pending:
            return answer
        if answer.reset_at is not None and since is not None and answer.reset_at >= since:
            return answer
        return replace(answer, reset_pending=True)

    def close(self) -> None:
        """Stop the pool; reads in flight finish within the reader's call timeout."""
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _refresh(self, suspect: dict[str, Node], settings: Settings, now: float) -> list[Future[None]]:
        started: list[Future[None]] = []
        with self._lock:
            for name in [n for n in self._entries if n not in suspect]:
                del self._entries[name]  # a read in flight lands in the dropped entry, unused
            # Nodes without a usable answer first, then the oldest answers.
            order = sorted(
                suspect.values(),
                key=lambda n: (self._usable(n, settings, now), self._entries.get(n.name, _Entry()).attempted),
            )
            for node in order:
                if not node.provider_id:
                    self.metrics.skipped.labels(reason="no_provider_id").inc()
                    continue
                entry = self._entries.get(node.name)
                if entry is None or entry.provider_id != node.provider_id:
                    entry = self._entries[node.name] = _Entry(provider_id=node.provider_id)
                if entry.inflight or not self._due(entry, node, settings, now):
                    continue
                if self._inflight >= self.max_concurrent:
                    self.metrics.skipped.labels(reason="busy").inc()
                    continue
                while self._started and now - self._started[0] >= 60.0:
                    self._started.popleft()
                if len(self._started) >= self.max_reads_per_minute:
                    self.metrics.skipped.labels(reason="rate").inc()
                    continue
                self._started.append(now)
                entry.attempted = now
                entry.inflight = True
                self._inflight += 1
                started.append(self._pool.submit(self._read_into, entry, node.provider_id))
        return started

    def _usable(self, node: Node, settings: Settings, now: float) -> bool:
        entry = self._entries.get(node.name)
        since = suspect_since(node, settings, now)
        return (
            entry is not None and entry.provider_id == node.provider_id and entry.evidence is not None
            and since is not None and read_after_suspicion(entry.evidence.observed, since)
        )  # fmt: skip

    def _due(self, entry: _Entry, node: Node, settings: Settings, now: float) -> bool:
        wait_s = self.reread_s if self._usable(node, settings, now) and not entry.failed else self.retry_s
        return now - entry.attempted >= wait_s

    def _read_into(self, entry: _Entry, provider_id: str) -> None:
        answer: Instance | None = None
        try:
            answer = self.read(provider_id)
        except Exception:  # a defect in the reader: logged and counted, never evidence
            log.exception("compute read failed", extra={"fields": {"provider_id": provider_id}})
            self.metrics.calls.labels(call="read", outcome="crash").inc()
        finally:
            with self._lock:
                entry.inflight = False
                entry.failed = answer is None
                self._inflight -= 1
                if answer is not None:
                    entry.evidence = answer

    def _count(
        self, nodes: tuple[Node, ...], suspect: dict[str, Node], settings: Settings, now: float
    ) -> None:
        """Confirmations and vetoes, once per (node, suspicion)."""
        seen: set[tuple[str, str, float]] = set()
        for node in nodes:
            if node.name not in suspect:
                continue
            since = suspect_since(node, settings, now)
            assert since is not None
            by = confirmed_by(node, settings, now)
            if by is not None:
                key = ("confirmed", node.name, since)
                if key not in self._counted:
                    self.metrics.confirmations.labels(status=by).inc()
                seen.add(key)
                continue
            dead = node_dead_since(node)
            if (
                dead is not None
                and now - dead >= settings.dead_node_confirm_seconds
                and known_running(node, settings, now)
            ):
                key = ("veto", node.name, since)
                if key not in self._counted:
                    self.metrics.vetoes.inc()
                seen.add(key)
        self._counted = {key for key in self._counted | seen if key[1] in suspect}


def google_evidence(
    registry: CollectorRegistry,
    clock: Callable[[], float],
    *,
    max_concurrent: int,
    deadline_s: float,
    reread_s: float,
    max_reads_per_minute: int,
    endpoint: str = "",
) -> Evidence | None:
    """The evidence cache over Google's client library (Workload Identity credentials in the cluster);
    None, logged, when the client cannot be created (no credentials): the controller then runs the
    conservative path, as with every failed read."""
    from google.auth.exceptions import DefaultCredentialsError

    from tpu_platform.hotswap.adapter.compute import google_reader

    metrics = ComputeMetrics(registry)
    try:
        reader = google_reader(clock, observe=metrics.call, endpoint=endpoint)
    except DefaultCredentialsError as err:
        log.error(
            "compute_corroboration is on but no Compute Engine client could be created; suspect nodes "
            "are handled without corroboration",
            extra={
                "fields": {
                    "error": repr(err),
                    "fix": "annotate the controller's service account with iam.gke.io/gcp-service-account "
                    "(hotswap.computeCorroboration in the stack does) and run it on a GKE_METADATA pool",
                }
            },
        )
        return None
    metrics.reader_up.set(1)
    return Evidence(
        reader.read,
        metrics,
        max_concurrent=max_concurrent,
        deadline_s=deadline_s,
        reread_s=reread_s,
        max_reads_per_minute=max_reads_per_minute,
    )
