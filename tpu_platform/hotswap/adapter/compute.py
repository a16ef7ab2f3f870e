"""Compute Engine evidence for suspect nodes: the I/O half of corroborated early force-deletion
(``tpu_platform.hotswap.core.corroboration`` decides).

The VM behind a node is named by the node's ``spec.providerID``, ``gce://PROJECT/ZONE/INSTANCE``
(the GCE cloud provider's format, kubernetes/cloud-provider-gcp ``providers/gce/gce_util.go``,
``splitProviderID``). Two reads, with Google's client library (``google-cloud-compute``):

- ``InstancesClient.get(project=, zone=, instance=)``: ``Instance.status``
  (https://cloud.google.com/compute/docs/reference/rest/v1/instances/get); 404 (``NotFound``) means
  the VM is gone;
- ``ZoneOperationsClient.list`` with ``filter='operationType="compute.instances.hostError" AND
  targetId=ID'`` (https://cloud.google.com/compute/docs/reference/rest/v1/zoneOperations/list, the
  ``filter`` parameter; host errors in "About host events",
  https://cloud.google.com/compute/docs/instances/host-maintenance-overview): the latest host error's
  ``insertTime``.

Permissions: ``compute.instances.get`` and ``compute.zoneOperations.list`` (IAM permissions reference,
https://cloud.google.com/compute/docs/access/iam-permissions). Every library error
(``google.api_core.exceptions.GoogleAPICallError``: ``Forbidden``, ``ServiceUnavailable``,
``DeadlineExceeded`` ...) and a timeout yield no evidence, never a confirmation; a failed host-error
listing keeps the status (it only ever adds a confirmation).
"""

from __future__ import annotations

import re
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
HOST_ERROR = "compute.instances.hostError"
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
    if not isinstance(value, str):
        return None
    m = PROVIDER_ID.match(value)
    return VmRef(m.group(1), m.group(2), m.group(3)) if m else None


class InstancesApi(Protocol):
    def get(self, *, project: str, zone: str, instance: str, timeout: float) -> Any: ...


class ZoneOperationsApi(Protocol):
    def list(self, *, request: dict[str, Any], timeout: float) -> Iterable[Any]: ...


def _rfc3339(text: str) -> float | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() if text else None
    except ValueError:
        return None


@dataclass(slots=True)
class InstanceReader:
    """Reads one VM's evidence; counts reads and errors for ``hotswap_compute_reads_total``."""

    instances: InstancesApi
    operations: ZoneOperationsApi
    clock: Callable[[], float]
    timeout_s: float = DEFAULT_TIMEOUT_S
    errors: dict[str, int] = field(default_factory=dict)
    reads: int = 0

    def read(self, provider_id: object) -> Instance | None:
        from google.api_core.exceptions import GoogleAPICallError, NotFound, RetryError

        ref = parse_provider_id(provider_id)
        if ref is None:
            self._error("bad_provider_id")
            return None
        self.reads += 1
        try:
            vm = self.instances.get(
                project=ref.project, zone=ref.zone, instance=ref.instance, timeout=self.timeout_s
            )
        except NotFound:
            return Instance(status=GONE, observed=self.clock())
        except (GoogleAPICallError, RetryError, TimeoutError) as err:
            self._error(type(err).__name__)
            return None
        status = getattr(vm, "status", None)
        if not isinstance(status, str) or not status:
            self._error("no_status")
            return None
        observed = self.clock()
        host_error = None
        vm_id = getattr(vm, "id", None)
        if isinstance(vm_id, int) and not isinstance(vm_id, bool) and vm_id > 0:
            request = {
                "project": ref.project,
                "zone": ref.zone,
                "filter": f'(operationType = "{HOST_ERROR}") AND (targetId = {vm_id})',
            }
            try:
                for op in self.operations.list(request=request, timeout=self.timeout_s):
                    if (
                        getattr(op, "operation_type", "") != HOST_ERROR
                        or getattr(op, "target_id", 0) != vm_id
                    ):
                        continue  # the filter is the server's; the check is ours
                    at = _rfc3339(getattr(op, "insert_time", "") or "")
                    if at is not None and at <= observed and (host_error is None or at > host_error):
                        host_error = at
            except (GoogleAPICallError, RetryError, TimeoutError) as err:
                self._error(f"operations_{type(err).__name__}")
        return Instance(status=status, observed=observed, host_error_at=host_error)

    def _error(self, kind: str) -> None:
        self.errors[kind] = self.errors.get(kind, 0) + 1


def google_reader(clock: Callable[[], float]) -> InstanceReader:
    """The reader over Google's clients, with Application Default Credentials (Workload Identity in
    the cluster: the KSA annotated with ``iam.gke.io/gcp-service-account``)."""
    from google.cloud import compute_v1

    return InstanceReader(compute_v1.InstancesClient(), compute_v1.ZoneOperationsClient(), clock)
