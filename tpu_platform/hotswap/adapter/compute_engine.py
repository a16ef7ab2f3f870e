"""Compute Engine: what the VM behind a suspect node says, and resets of silent VMs.

The I/O half of corroboration and of the VM reset (``tpu_platform.hotswap.core.vm_evidence``
decides). :class:`InstanceReader` reads one VM (``instances.get``, and
``zoneOperations.list`` for its host errors and resets); :class:`Evidence` joins the answers for
suspect nodes into each snapshot, bounded in concurrency, time and rate; :class:`VmResetter` sends
``instances.reset`` once per suspicion. Every call is bounded by its timeout (``retry=None``), and
an error is never evidence. Design notes: docs/hotswap-adapter.md, "compute_engine".
"""

from __future__ import annotations

import logging
import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from tpu_platform.hotswap.core import GONE
from tpu_platform.hotswap.core.actions import ResetVm
from tpu_platform.hotswap.core.model import Instance, Node
from tpu_platform.hotswap.core.pool_health import node_dead_since
from tpu_platform.hotswap.core.settings import Settings
from tpu_platform.hotswap.core.vm_evidence import (
    confirmed_by,
    known_running,
    read_after_suspicion,
    suspect_since,
    suspects,
)

log = logging.getLogger("hotswap.evidence")
reset_log = logging.getLogger("hotswap.vm_reset")


# --- reading one VM -------------------------------------------------------------------------------
PROVIDER_ID = re.compile(
    r"^gce://([a-z][-a-z0-9.:]{4,61}[a-z0-9])/([a-z]+-[a-z]+[0-9]+-[a-z])/([a-z]([-a-z0-9]{0,61}[a-z0-9])?)$"
)
"""``gce://PROJECT/ZONE/INSTANCE`` with Compute Engine's naming rules for each part (RFC 1035 names,
project ids possibly domain-scoped)."""
MAX_PROVIDER_ID = 200
"""Longest accepted ``spec.providerID``: ``gce://`` + project (<= 63, or domain-scoped) + zone +
instance (<= 63) with room to spare; anything longer is refused before the pattern runs."""
HOST_ERROR = "compute.instances.hostError"
RESET = "reset"
"""``operationType`` of the Operation an ``instances.reset`` call creates."""
GET = "instances.get"
LIST = "zoneOperations.list"
DEFAULT_TIMEOUT_S = 5.0
"""Per call: a suspect node is re-read on the next reconcile, so a slow answer is dropped, not waited
for."""


@dataclass(frozen=True, slots=True)
class VmRef:
    project: str
    zone: str
    instance: str


def parse_provider_id(value: object) -> VmRef | None:
    """The VM named by a node's ``spec.providerID``; None for anything else (no guessing)."""
    if not isinstance(value, str) or len(value) > MAX_PROVIDER_ID:
        return None
    m = PROVIDER_ID.fullmatch(value)
    return VmRef(m.group(1), m.group(2), m.group(3)) if m else None


class InstancesApi(Protocol):
    def get(self, *, project: str, zone: str, instance: str, timeout: float, retry: None) -> Any: ...


class ZoneOperationsApi(Protocol):
    def list(self, *, request: dict[str, Any], timeout: float, retry: None) -> Iterable[Any]: ...


def call_errors() -> tuple[type[BaseException], ...]:
    """What a failed call raises: the library's errors, ``requests``' transport errors (REST), the
    auth library's (no token), and a plain timeout."""
    from google.api_core.exceptions import GoogleAPICallError, RetryError
    from google.auth.exceptions import GoogleAuthError
    from requests.exceptions import RequestException

    return (GoogleAPICallError, RetryError, GoogleAuthError, RequestException, TimeoutError)


def _rfc3339(text: str) -> float | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() if text else None
    except ValueError:
        return None


@dataclass(slots=True)
class _Operations:
    """The latest host error and reset among one VM's operations, each begun no later than the read."""

    host_error: float | None = None
    reset: float | None = None
    reset_pending: bool = False

    def add(self, op: Any, observed: float) -> None:
        kind = getattr(op, "operation_type", "")
        at = _rfc3339(getattr(op, "insert_time", "") or "")
        if at is None or at > observed:
            return
        if kind == HOST_ERROR and (self.host_error is None or at > self.host_error):
            self.host_error = at
        elif kind == RESET:
            status = getattr(getattr(op, "status", None), "name", getattr(op, "status", None))
            if status != "DONE":
                self.reset_pending = True
            elif not getattr(getattr(op, "error", None), "errors", None) and (
                self.reset is None or at > self.reset
            ):
                self.reset = at


ReadObserver = Callable[[str, str, float], None]
"""``(call, outcome, seconds)`` for each Compute Engine call: ``call`` is ``GET`` or ``LIST``, ``outcome``
``ok``, ``not_found`` or the library's exception class name (a bounded set)."""


@dataclass(slots=True)
class InstanceReader:
    """Reads one VM's evidence; counts reads and errors. Safe to call from several threads."""

    instances: InstancesApi
    operations: ZoneOperationsApi
    clock: Callable[[], float]
    timeout_s: float = DEFAULT_TIMEOUT_S
    observe: ReadObserver | None = None
    errors: dict[str, int] = field(default_factory=dict)
    reads: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def read(self, provider_id: object) -> Instance | None:
        from google.api_core.exceptions import NotFound

        errors = call_errors()
        ref = parse_provider_id(provider_id)
        if ref is None:
            self._error("bad_provider_id")
            return None
        with self._lock:
            self.reads += 1
        sent = self.clock()
        started = time.monotonic()
        try:
            vm = self.instances.get(
                project=ref.project, zone=ref.zone, instance=ref.instance, timeout=self.timeout_s, retry=None
            )
        except NotFound:
            self._observed(GET, "not_found", started)
            return Instance(status=GONE, observed=sent)
        except errors as err:
            self._observed(GET, type(err).__name__, started)
            self._error(type(err).__name__)
            return None
        status = getattr(vm, "status", None)
        if not isinstance(status, str) or not status:
            self._observed(GET, "no_status", started)
            self._error("no_status")
            return None
        self._observed(GET, "ok", started)
        observed = sent
        ops = _Operations()
        vm_id = getattr(vm, "id", None)
        if isinstance(vm_id, int) and not isinstance(vm_id, bool) and vm_id > 0:
            request = {"project": ref.project, "zone": ref.zone, "filter": f"(targetId = {vm_id})"}
            started = time.monotonic()
            try:
                for op in self.operations.list(request=request, timeout=self.timeout_s, retry=None):
                    if getattr(op, "target_id", 0) == vm_id:  # the filter is the server's; the check ours
                        ops.add(op, observed)
            except errors as err:
                self._observed(LIST, type(err).__name__, started)
                self._error(f"operations_{type(err).__name__}")
            else:
                self._observed(LIST, "ok", started)
        return Instance(
            status=status,
            observed=observed,
            host_error_at=ops.host_error,
            reset_at=ops.reset,
            reset_pending=ops.reset_pending,
        )

    def _observed(self, call: str, outcome: str, started: float) -> None:
        if self.observe is not None:
            self.observe(call, outcome, time.monotonic() - started)

    def _error(self, kind: str) -> None:
        with self._lock:
            self.errors[kind] = self.errors.get(kind, 0) + 1


def google_reader(
    clock: Callable[[], float], observe: ReadObserver | None = None, *, endpoint: str = ""
) -> InstanceReader:
    """The reader over Google's clients, with Application Default Credentials (Workload Identity in
    the cluster: the KSA annotated with ``iam.gke.io/gcp-service-account``).

    ``endpoint`` (``runtime.compute_endpoint``, validated there) replaces Google's default for both
    clients: a set ``client_options.api_endpoint`` is used as is (``compute_v1/services/instances/
    client.py``, ``_get_api_endpoint``: ``if api_override is not None: api_endpoint = api_override``),
    its ``http://`` or ``https://`` prefix the REST transport's scheme (``transports/rest_base.py``)."""
    from google.cloud import compute_v1

    options = {"api_endpoint": endpoint} if endpoint else None
    return InstanceReader(
        compute_v1.InstancesClient(client_options=options),
        compute_v1.ZoneOperationsClient(client_options=options),
        clock,
        observe=observe,
    )


# --- the evidence joined into each snapshot -------------------------------------------------------
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
        """The reader's observer (:data:`ReadObserver`)."""
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


# --- resets of silent VMs -------------------------------------------------------------------------
REQUEST_NAMESPACE = uuid.UUID("0e6c3f8a-54c1-4b8e-9d5e-6f1f3b2a7c10")
"""Namespace of the deterministic request ids (UUID v5 of provider ID and suspicion start)."""
SENT = "sent"


class ResetApi(Protocol):
    def reset(self, *, request: dict[str, str], timeout: float, retry: None) -> Any: ...


def request_id(provider_id: str, since: float) -> str:
    """The same id for the same VM and suspicion, from any replica; never the zero UUID."""
    return str(uuid.uuid5(REQUEST_NAMESPACE, f"{provider_id}@{since:.3f}"))


@dataclass(slots=True)
class VmResetter:
    """Sends resets; safe to call from several threads."""

    instances: ResetApi
    clock: Callable[[], float]
    registry: CollectorRegistry | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_per_minute: int = 10
    pending_s: float = 120.0
    sent: dict[str, float] = field(default_factory=dict)
    """provider ID -> when its reset was sent (this process)."""
    _recent: deque[float] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _calls: Counter | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.registry is not None:
            self._calls = Counter(
                "hotswap_vm_resets",
                "Compute Engine instances.reset calls by outcome (sent, skipped_pending, skipped_rate, "
                "bad_provider_id, or the library's exception class name)",
                ["outcome"],
                registry=self.registry,
            )

    def reset(self, action: ResetVm) -> str:
        """Send one reset (unless one is pending or the rate is spent); returns the outcome."""
        ref = parse_provider_id(action.provider_id)
        if ref is None:
            return self._count("bad_provider_id")
        now = self.clock()
        with self._lock:
            at = self.sent.get(action.provider_id)
            if at is not None and now - at < self.pending_s:
                return self._count("skipped_pending")
            while self._recent and now - self._recent[0] >= 60.0:
                self._recent.popleft()
            if len(self._recent) >= self.max_per_minute:
                return self._count("skipped_rate")
            self._recent.append(now)
            self.sent[action.provider_id] = now
        request = {
            "project": ref.project,
            "zone": ref.zone,
            "instance": ref.instance,
            "request_id": request_id(action.provider_id, action.since),
        }
        started = time.monotonic()
        try:
            self.instances.reset(request=request, timeout=self.timeout_s, retry=None)
        except call_errors() as err:
            with self._lock:
                self.sent.pop(action.provider_id, None)
            reset_log.warning(
                "VM reset failed",
                extra={
                    "fields": {"node": action.node, "error": repr(err), "seconds": time.monotonic() - started}
                },
            )
            return self._count(type(err).__name__)
        reset_log.warning("VM reset sent", extra={"fields": {"node": action.node, "reason": action.reason}})
        return self._count(SENT)

    def pending(self, provider_id: str, now: float) -> float | None:
        """When this process sent ``provider_id`` a reset that may still be in flight, else None."""
        with self._lock:
            at = self.sent.get(provider_id)
        return at if at is not None and now - at < self.pending_s else None

    def _count(self, outcome: str) -> str:
        if self._calls is not None:
            self._calls.labels(outcome=outcome).inc()
        return outcome


def google_resetter(
    clock: Callable[[], float], registry: CollectorRegistry, *, endpoint: str = ""
) -> VmResetter:
    """The resetter over Google's client (the same endpoint and credentials as the reads)."""
    from google.cloud import compute_v1

    options = {"api_endpoint": endpoint} if endpoint else None
    return VmResetter(compute_v1.InstancesClient(client_options=options), clock, registry)
