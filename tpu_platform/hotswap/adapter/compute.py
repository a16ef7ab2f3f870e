"""Compute Engine evidence for suspect nodes: the I/O half of corroborated early force-deletion
(``tpu_platform.hotswap.core.corroboration`` decides).

The VM behind a node is named by the node's ``spec.providerID``, ``gce://PROJECT/ZONE/INSTANCE``
(the GCE cloud provider's format, kubernetes/cloud-provider-gcp ``providers/gce/gce_util.go``,
``splitProviderID``). Two reads, with Google's client library (``google-cloud-compute``):

- ``InstancesClient.get(project=, zone=, instance=)``: ``Instance.status``
  (https://cloud.google.com/compute/docs/reference/rest/v1/instances/get); 404 (``NotFound``) means
  the VM is gone;
- ``ZoneOperationsClient.list`` with ``filter='(targetId = ID)'``
  (https://cloud.google.com/compute/docs/reference/rest/v1/zoneOperations/list, the ``filter``
  parameter): the latest ``compute.instances.hostError``'s ``insertTime`` (host errors in "About host
  events", https://cloud.google.com/compute/docs/instances/host-maintenance-overview), and the latest
  ``reset`` (the Operation ``instances.reset`` returns, ``adapter/vm_reset.py``): its ``insertTime``
  once ``DONE`` without an error, else pending.

Permissions: ``compute.instances.get`` and ``compute.zoneOperations.list`` (IAM permissions reference,
https://cloud.google.com/compute/docs/access/iam-permissions). Every library error
(``google.api_core.exceptions.GoogleAPICallError``: ``Forbidden``, ``ServiceUnavailable``,
``DeadlineExceeded`` ...) and a timeout yield no evidence, never a confirmation; a failed host-error
listing keeps the status (it only ever adds a confirmation).

Every call passes ``retry=None`` with its ``timeout``: the library's default retry for both methods
re-sends on ``DeadlineExceeded``/``ServiceUnavailable`` for up to 600 s (``google/cloud/compute_v1/
services/instances/transports/base.py``, ``_prep_wrapped_messages``), and a float ``timeout`` is only a
per-attempt budget that starts over once spent (``google/api_core/timeout.py``,
``TimeToDeadlineTimeout``), so only ``retry=None`` bounds a call by its timeout
(``google/api_core/gapic_v1/method.py``: "If None, this callable will not retry"). The caller re-reads
on its next reconcile instead. The REST transport raises ``requests``' own exceptions for a timeout or
a refused connection, and ``google.auth`` its own when the metadata server cannot mint a token: both
are errors like the library's.

An answer is dated when its request was *sent*: the status describes the VM at some moment between
sending and arrival, and the core accepts evidence only if it was read after the suspicion began and
is young enough, so the earliest possible moment is the safe one.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from tpu_platform.hotswap.core import GONE, Instance

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
