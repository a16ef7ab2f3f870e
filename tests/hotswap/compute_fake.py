"""A strict fake of the google-cloud-compute calls the controller makes (``InstancesClient.get`` and
``reset``, ``ZoneOperationsClient.list``), raising google.api_core's real exception types.

Strict where the real client is: keyword arguments of the real signatures (pinned against the installed
library by ``tests/hotswap/adapter/test_compute_engine.py``), a name Compute Engine would refuse is a 400
(``BadRequest``; names are RFC 1035, https://cloud.google.com/compute/docs/naming-resources), an
unknown VM a 404 with the API's message, and every call must carry a timeout and ``retry=None`` (the
library's default retry re-sends for 600 s, see ``tpu_platform.hotswap.adapter.compute_engine``). Faults are
injectable per call: an exception, or a gate that holds the call until released (a slow API).
Answers are the library's own message types (``compute_v1.Instance``, ``compute_v1.Operation``).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from google.api_core import exceptions as gexc
from google.cloud import compute_v1

NAME = re.compile(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?")
PROJECT = re.compile(r"[a-z][-a-z0-9.:]{4,61}[a-z0-9]")


@dataclass
class Vm:
    status: str
    id: int = 4242


@dataclass
class Op:
    operation_type: str
    target_id: int
    insert_time: str
    status: str = "DONE"
    error: str = ""
    """A message for ``Operation.error.errors``; empty for none."""


@dataclass
class FakeInstances:
    vms: dict[tuple[str, str, str], Vm] = field(default_factory=dict)
    fault: BaseException | None = None
    gate: threading.Event | None = None
    """While set to an unset Event, each call waits for it (at most its timeout), then answers."""
    calls: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def get(
        self, *, project: str, zone: str, instance: str, timeout: float, retry: None
    ) -> compute_v1.Instance:
        assert timeout is not None and timeout > 0, "every call carries a timeout"
        assert retry is None, "the library's default retry would re-send for 600 s"
        with self._lock:
            self.calls.append({"project": project, "zone": zone, "instance": instance})
        if not (PROJECT.fullmatch(project) and NAME.fullmatch(zone) and NAME.fullmatch(instance)):
            raise gexc.BadRequest(f"Invalid value for field 'resource': '{project}/{zone}/{instance}'")
        gate = self.gate
        if gate is not None and not gate.wait(timeout):
            raise gexc.DeadlineExceeded("Deadline of the request exceeded")
        if self.fault is not None:
            raise self.fault
        vm = self.vms.get((project, zone, instance))
        if vm is None:
            raise gexc.NotFound(
                f"The resource 'projects/{project}/zones/{zone}/instances/{instance}' was not found"
            )
        return compute_v1.Instance(name=instance, status=vm.status, id=vm.id)


@dataclass
class FakeResets:
    """``InstancesClient.reset``: each new ``request_id`` adds a ``reset`` Operation (RUNNING) to
    ``operations`` for the VM, as Compute Engine records it; a repeated one is ignored, as the API
    documents for ``requestId``."""

    vms: dict[tuple[str, str, str], Vm]
    operations: FakeOperations
    fault: BaseException | None = None
    requests: list[dict[str, str]] = field(default_factory=list)

    def reset(self, *, request: dict[str, str], timeout: float, retry: None) -> compute_v1.Operation:
        assert timeout is not None and timeout > 0, "every call carries a timeout"
        assert retry is None, "the library's default retry would re-send for 600 s"
        assert set(request) == {"project", "zone", "instance", "request_id"}, request
        self.requests.append(request)
        if self.fault is not None:
            raise self.fault
        vm = self.vms.get((request["project"], request["zone"], request["instance"]))
        if vm is None:
            raise gexc.NotFound(f"The resource '{request['instance']}' was not found")
        if request["request_id"] not in {r["request_id"] for r in self.requests[:-1]}:
            stamp = datetime.now(UTC).isoformat(timespec="milliseconds")
            self.operations.ops.append(Op("reset", vm.id, stamp, status="RUNNING"))
        return compute_v1.Operation(operation_type="reset", target_id=vm.id, status="RUNNING")

    def finish(self) -> None:
        """Every reset Operation DONE."""
        for op in self.operations.ops:
            if op.operation_type == "reset":
                op.status = "DONE"


@dataclass
class FakeOperations:
    ops: list[Op] = field(default_factory=list)
    fault: BaseException | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)

    def list(self, *, request: dict[str, Any], timeout: float, retry: None) -> list[compute_v1.Operation]:
        assert timeout is not None and timeout > 0
        assert retry is None
        assert set(request) == {"project", "zone", "filter"}, request
        self.requests.append(request)
        if self.fault is not None:
            raise self.fault
        # The server's filter is not applied: the reader re-checks each operation.
        return [
            compute_v1.Operation(
                operation_type=o.operation_type,
                target_id=o.target_id,
                insert_time=o.insert_time,
                status=o.status,
                error=compute_v1.Error(errors=[compute_v1.Errors(message=o.error)]) if o.error else None,
            )
            for o in self.ops
        ]
