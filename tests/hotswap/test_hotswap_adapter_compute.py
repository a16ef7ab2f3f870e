"""The Compute Engine reader against a strict fake of the client surface it uses
(``InstancesClient.get``, ``ZoneOperationsClient.list``; google-cloud-compute), raising the library's
real exception types. No error ever yields a confirmation."""

from __future__ import annotations

import inspect

import pytest
import requests
from google.api_core import exceptions as gexc
from google.auth import exceptions as gauth
from hypothesis import given
from hypothesis import strategies as st

from tests.hotswap.compute_fake import FakeInstances, FakeOperations, Op, Vm
from tpu_platform.hotswap.adapter.compute import (
    HOST_ERROR,
    MAX_PROVIDER_ID,
    RESET,
    InstanceReader,
    parse_provider_id,
)
from tpu_platform.hotswap.core import GONE, NOT_RUNNING

NOW = 1_800_000_000.0 + 4 * 3600.0
"""2027-01-15T12:00:00Z."""
PID = "gce://tpu-prod-1234/us-east5-b/gke-tpu-pool-a-1b2c3d4e-x7k2"


def reader(vm: Vm | None, ops: list[Op] | None = None, **faults: Exception) -> InstanceReader:
    inst = FakeInstances({("tpu-prod-1234", "us-east5-b", "gke-tpu-pool-a-1b2c3d4e-x7k2"): vm} if vm else {})
    inst.fault = faults.get("get")
    opsapi = FakeOperations(ops or [], faults.get("list"))
    return InstanceReader(inst, opsapi, clock=lambda: NOW)


def test_provider_id_is_parsed_strictly() -> None:
    ref = parse_provider_id(PID)
    assert ref is not None and (ref.project, ref.zone, ref.instance) == (
        "tpu-prod-1234",
        "us-east5-b",
        "gke-tpu-pool-a-1b2c3d4e-x7k2",
    )
    for bad in (
        "",
        None,
        7,
        "aws:///i-123",
        "gce://p/z/i",
        PID + "/x",
        PID.upper(),
        "gce://tpu-prod-1234//vm",
    ):
        assert parse_provider_id(bad) is None, bad


@pytest.mark.parametrize("status", ["RUNNING", *sorted(NOT_RUNNING - {GONE})])
def test_status_is_passed_through(status: str) -> None:
    ev = reader(Vm(status)).read(PID)
    assert ev is not None and ev.status == status and ev.host_error_at is None


def test_a_deleted_vm_reads_gone() -> None:
    ev = reader(None).read(PID)
    assert ev is not None and ev.status == GONE


@pytest.mark.parametrize(
    "fault",
    [
        gexc.Forbidden("Required 'compute.instances.get' permission"),
        gexc.ServiceUnavailable("backend unavailable"),
        gexc.DeadlineExceeded("deadline"),
        gexc.TooManyRequests("rate"),
        gexc.InternalServerError("boom"),
        TimeoutError("slow"),
    ],
)
def test_every_get_error_is_no_evidence(fault: Exception) -> None:
    r = reader(Vm("TERMINATED"), get=fault)
    assert r.read(PID) is None
    assert sum(r.errors.values()) == 1


def test_host_error_after_filter_and_recheck() -> None:
    ops = [
        Op(HOST_ERROR, 4242, "2027-01-15T08:00:00.000-08:00"),  # 16:00Z: after the read
        Op(HOST_ERROR, 4242, "2027-01-15T07:00:00Z"),
        Op(HOST_ERROR, 4242, "2027-01-15T09:00:05Z"),
        Op("compute.instances.repair.recreateInstance", 4242, "2027-01-15T09:00:00Z"),
        Op(HOST_ERROR, 999, "2027-01-15T09:30:00Z"),
        Op(HOST_ERROR, 4242, "not a time"),
        Op(HOST_ERROR, 4242, "2099-01-01T00:00:00Z"),
    ]
    r = reader(Vm("RUNNING"), ops)
    ev = r.read(PID)
    assert ev is not None and ev.status == "RUNNING"
    assert ev.host_error_at == _ts("2027-01-15T09:00:05Z"), "latest host error of this VM before the read"
    req = r.operations.requests[0]  # type: ignore[attr-defined]
    assert req["filter"] == "(targetId = 4242)"


def test_a_reset_confirms_only_once_done_without_an_error() -> None:
    done = Op(RESET, 4242, "2027-01-15T09:00:05Z")
    running = Op(RESET, 4242, "2027-01-15T09:00:20Z", status="RUNNING")
    failed = Op(RESET, 4242, "2027-01-15T09:00:30Z", error="RESOURCE_NOT_READY")
    other_vm = Op(RESET, 999, "2027-01-15T09:00:40Z")
    ev = reader(Vm("RUNNING"), [done, running, failed, other_vm]).read(PID)
    assert ev is not None and ev.reset_at == _ts("2027-01-15T09:00:05Z"), "the done one, not the failed one"
    assert ev.reset_pending, "one not DONE yet"
    ev = reader(Vm("RUNNING"), [failed, other_vm]).read(PID)
    assert ev is not None and ev.reset_at is None and not ev.reset_pending


def _ts(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_a_failed_operations_listing_keeps_the_status_and_adds_nothing() -> None:
    r = reader(Vm("RUNNING"), [Op(HOST_ERROR, 4242, "2027-01-15T08:00:05Z")], list=gexc.Forbidden("no list"))
    ev = r.read(PID)
    assert ev is not None and ev.status == "RUNNING" and ev.host_error_at is None
    assert r.errors == {"operations_Forbidden": 1}


def test_a_vm_without_status_or_a_bad_provider_id_is_no_evidence() -> None:
    assert reader(Vm("")).read(PID) is None
    assert reader(Vm("RUNNING")).read("gce://x") is None


@given(st.text(max_size=120))
def test_fuzz_provider_ids_never_crash(text: str) -> None:
    ref = parse_provider_id(text)
    if ref is not None:
        assert text == f"gce://{ref.project}/{ref.zone}/{ref.instance}"


def test_the_fake_takes_the_real_clients_keywords() -> None:
    """The fake's surface is the installed library's: the same keyword arguments exist on
    ``InstancesClient.get`` and ``ZoneOperationsClient.list`` (google-cloud-compute 1.48.0)."""
    from google.cloud import compute_v1

    get = inspect.signature(compute_v1.InstancesClient.get).parameters
    assert {"project", "zone", "instance", "timeout", "retry"} <= set(get)
    listing = inspect.signature(compute_v1.ZoneOperationsClient.list).parameters
    assert {"request", "timeout", "retry"} <= set(listing)
    fake_get = inspect.signature(FakeInstances.get).parameters
    assert set(fake_get) - {"self"} <= set(get)


@pytest.mark.parametrize(
    "fault",
    [
        requests.exceptions.ReadTimeout("read timed out"),
        requests.exceptions.ConnectionError("refused"),
        gauth.RefreshError("metadata server: no token"),
        gexc.RetryError("gave up", cause=None),
    ],
)
def test_transport_and_auth_errors_are_no_evidence(fault: Exception) -> None:
    r = reader(Vm("TERMINATED"), get=fault)
    assert r.read(PID) is None
    assert r.errors == {type(fault).__name__: 1}


def test_answers_are_dated_when_sent() -> None:
    """The status describes the VM somewhere between send and arrival: the earliest moment is used."""
    ticks = iter([100.0, 130.0, 160.0])
    inst = FakeInstances({("tpu-prod-1234", "us-east5-b", "gke-tpu-pool-a-1b2c3d4e-x7k2"): Vm("TERMINATED")})
    r = InstanceReader(inst, FakeOperations(), clock=lambda: next(ticks))
    ev = r.read(PID)
    assert ev is not None and ev.observed == 100.0


def test_observer_sees_each_call_with_its_outcome() -> None:
    seen: list[tuple[str, str]] = []
    r = reader(Vm("RUNNING"))
    r.observe = lambda call, outcome, seconds: seen.append((call, outcome))
    r.read(PID)
    assert seen == [("instances.get", "ok"), ("zoneOperations.list", "ok")]
    seen.clear()
    r.instances.fault = gexc.Forbidden("no")  # type: ignore[attr-defined]
    r.read(PID)
    assert seen == [("instances.get", "Forbidden")]


def test_overlong_provider_ids_are_refused_before_matching() -> None:
    long = "gce://tpu-prod-1234/us-east5-b/" + "a" * (MAX_PROVIDER_ID)
    assert parse_provider_id(long) is None
    assert parse_provider_id("gce://tpu-prod-1234/us-east5-b/vm\n") is None
    assert parse_provider_id(PID + "\n") is None, "fullmatch: a trailing newline is not accepted"
