"""Compute Engine reads and VM resets (``tpu_platform.hotswap.adapter.compute_engine``)."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from google.api_core import exceptions as gexc
from google.auth import exceptions as gauth
from google.auth.credentials import AnonymousCredentials
from google.cloud import compute_v1
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from tests.hotswap.compute_fake import FakeInstances, FakeOperations, FakeResets, Op, Vm
from tests.hotswap.double_world import FAST, kube, seed_cluster
from tests.kubeapi import ApiDouble, Seeder
from tests.kubeapi.objects import node_obj
from tests.live.cluster.compute_double import ComputeDouble
from tpu_platform.hotswap import deploy
from tpu_platform.hotswap.adapter.compute_engine import (
    HOST_ERROR,
    MAX_PROVIDER_ID,
    RESET,
    ComputeMetrics,
    Evidence,
    InstanceReader,
    VmResetter,
    parse_provider_id,
    request_id,
)
from tpu_platform.hotswap.adapter.config import Config, RuntimeConfig, config_from_mapping, load_config
from tpu_platform.hotswap.adapter.controller import Controller
from tpu_platform.hotswap.adapter.convert import node_from_api
from tpu_platform.hotswap.adapter.metrics import Metrics
from tpu_platform.hotswap.core import (
    GONE,
    NOT_RUNNING,
    Instance,
    Settings,
    SettingsError,
    confirmed_down,
    suspect_since,
)
from tpu_platform.hotswap.core.model import Node
from tpu_platform.testing.hotswap_builders import fail_node, make_nodes, make_pool

# --- reading one VM -------------------------------------------------------------------------------
# The Compute Engine reader against a strict fake of the client surface it uses
# (``InstancesClient.get``, ``ZoneOperationsClient.list``; google-cloud-compute), raising the library's
# real exception types. No error ever yields a confirmation.
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


# --- the evidence cache ---------------------------------------------------------------------------
# The evidence cache between the Compute Engine reader and the snapshot: only suspect nodes are read,
# reads are bounded in number and in time, answers are cached and re-read on schedule, failures keep
# the previous answer and never confirm, and confirmations and vetoes are counted once per suspicion.
PROJECT, ZONE = "tpu-prod-1234", "us-east5-b"
T0 = 100_000.0
ON = Settings(compute_corroboration=True)


def pid(name: str) -> str:
    return f"gce://{PROJECT}/{ZONE}/{name}"


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


class World:
    """Pool ``p`` of four nodes, each with a VM of its name; ``fail`` makes one NotReady."""

    def __init__(self, *, max_concurrent: int = 4, deadline_s: float = 5.0, per_minute: int = 120) -> None:
        self.clock = Clock(T0)
        self.nodes = {
            n.name: replace(n, provider_id=pid(n.name)) for n in make_nodes(make_pool("p"), ready_since=0)
        }
        self.instances = FakeInstances({(PROJECT, ZONE, name): Vm("RUNNING") for name in self.nodes})
        self.registry = CollectorRegistry()
        self.metrics = ComputeMetrics(self.registry)
        reader = InstanceReader(self.instances, FakeOperations(), self.clock, observe=self.metrics.call)
        self.evidence = Evidence(
            reader.read,
            self.metrics,
            max_concurrent=max_concurrent,
            deadline_s=deadline_s,
            reread_s=5.0,
            retry_s=2.0,
            max_reads_per_minute=per_minute,
        )

    def fail(self, name: str, ago: float = 5.0) -> None:
        self.nodes[name] = fail_node(self.nodes[name], self.clock.t - ago)

    def vm(self, name: str, status: str) -> None:
        self.instances.vms[(PROJECT, ZONE, name)] = Vm(status)

    def join(self, settings: Settings = ON, dt: float = 0.0) -> dict[str, Node]:
        self.clock.t += dt
        return {n.name: n for n in self.evidence.join(self.nodes.values(), settings, self.clock.t)}

    def reads(self) -> list[str]:
        return [c["instance"] for c in self.instances.calls]

    def value(self, name: str, **labels: str) -> float:
        v = self.registry.get_sample_value(name, labels)
        return 0.0 if v is None else v


@pytest.fixture
def world() -> Iterator[World]:
    w = World()
    yield w
    w.evidence.close()


def test_only_suspect_nodes_are_read_and_get_evidence(world: World) -> None:
    world.fail("p-n1")
    world.vm("p-n1", "TERMINATED")
    nodes = world.join()
    assert world.reads() == ["p-n1"]
    ev = nodes["p-n1"].instance
    assert ev is not None and ev.status == "TERMINATED" and ev.observed == T0
    assert all(nodes[n].instance is None for n in nodes if n != "p-n1")
    assert world.value("hotswap_compute_reads_total", call="instances.get", outcome="ok") == 1
    assert world.value("hotswap_compute_suspects") == 1


def test_nothing_is_read_with_corroboration_off(world: World) -> None:
    world.fail("p-n1")
    nodes = world.join(Settings())
    assert world.reads() == [] and nodes["p-n1"].instance is None


def test_a_node_without_a_valid_provider_id_is_never_read(world: World) -> None:
    world.fail("p-n1")
    world.nodes["p-n1"] = replace(world.nodes["p-n1"], provider_id="")
    assert world.join()["p-n1"].instance is None
    assert world.reads() == []
    assert world.value("hotswap_compute_skipped_reads_total", reason="no_provider_id") == 1


def test_answers_are_cached_and_re_read_on_schedule(world: World) -> None:
    world.fail("p-n1")
    world.join()
    world.join(dt=2.0)
    assert world.reads() == ["p-n1"], "a usable answer is not re-read before reread_s"
    world.vm("p-n1", "TERMINATED")
    nodes = world.join(dt=3.0)
    assert world.reads() == ["p-n1", "p-n1"]
    ev = nodes["p-n1"].instance
    assert ev is not None and ev.status == "TERMINATED" and ev.observed == T0 + 5.0


def test_a_new_suspicion_is_read_at_once(world: World) -> None:
    """An answer from before the suspicion never counts (core rule), so it does not wait for reread_s."""
    world.fail("p-n1", ago=1.0)
    world.join()
    world.nodes["p-n1"] = make_nodes(make_pool("p"), ready_since=0)[1]  # healthy again
    world.nodes["p-n1"] = replace(world.nodes["p-n1"], provider_id=pid("p-n1"))
    world.join(dt=1.0)
    world.fail("p-n1", ago=0.0)
    ev = world.join(dt=0.0)["p-n1"].instance
    assert world.reads() == ["p-n1", "p-n1"], "the healthy spell dropped the old answer: read at once"
    assert ev is not None and ev.observed == T0 + 1.0


def test_an_answer_read_within_the_skew_of_the_suspicion_is_retried_not_kept(world: World) -> None:
    """The core refuses an answer dated less than the clock skew after the suspicion began (it may have
    been read before it): the cache retries it after retry_s, as an answer from before the suspicion,
    rather than keeping it for reread_s."""
    world.fail("p-n1", ago=1.0)
    world.vm("p-n1", "TERMINATED")
    early = world.join()["p-n1"]
    assert early.instance is not None and confirmed_down(early, ON, world.clock.t) is None
    later = world.join(dt=2.0)["p-n1"]
    assert world.reads() == ["p-n1", "p-n1"]
    assert confirmed_down(later, ON, world.clock.t) is not None


def test_a_failed_read_keeps_the_previous_answer_and_is_counted(world: World) -> None:
    world.fail("p-n1")
    world.join()
    world.instances.fault = gexc.ServiceUnavailable("backend unavailable")
    nodes = world.join(dt=5.0)
    ev = nodes["p-n1"].instance
    assert ev is not None and ev.status == "RUNNING" and ev.observed == T0, "the previous answer"
    assert world.value("hotswap_compute_reads_total", call="instances.get", outcome="ServiceUnavailable") == 1
    world.join(dt=1.0)
    assert len(world.reads()) == 2, "after a failed read, retried after retry_s (not before)"
    world.join(dt=1.0)
    assert len(world.reads()) == 3, "... and not only after reread_s: the answer kept is ageing"


def test_errors_alone_never_give_evidence(world: World) -> None:
    world.fail("p-n1")
    world.vm("p-n1", "TERMINATED")
    for fault in (gexc.Forbidden("compute.instances.get denied"), gexc.ServiceUnavailable("503")):
        world.instances.fault = fault
        assert world.join(dt=2.0)["p-n1"].instance is None


def test_concurrency_and_deadline_bound_a_slow_api() -> None:
    w = World(max_concurrent=2, deadline_s=0.05)
    try:
        gate = threading.Event()
        w.instances.gate = gate
        for name in ("p-n0", "p-n1", "p-n2"):
            w.fail(name)
        nodes = w.join()  # returns after the deadline although every call hangs
        assert all(n.instance is None for n in nodes.values())
        assert w.value("hotswap_compute_late_reads_total") == 2
        assert w.value("hotswap_compute_skipped_reads_total", reason="busy") == 1
        w.join(dt=2.0)
        assert len(w.instances.calls) == 2, "a node with a read in flight gets no second one"
        gate.set()
        w.instances.gate = None
        assert _eventually(lambda: w.evidence._inflight == 0)
        nodes = w.join(dt=0.0)
        assert all(nodes[n].instance is not None for n in ("p-n0", "p-n1", "p-n2")), (
            "the two late answers serve the next reconcile, which also reads the third node"
        )
        assert len(w.instances.calls) == 3
    finally:
        w.evidence.close()


def test_reads_per_minute_are_bounded_and_unanswered_nodes_go_first() -> None:
    """A mass event must not spend the project's Compute Engine quota (shared with GKE itself)."""
    w = World(per_minute=3)
    try:
        for name in ("p-n0", "p-n1", "p-n2", "p-n3"):
            w.fail(name)
        w.join()
        assert len(w.instances.calls) == 3
        assert w.value("hotswap_compute_skipped_reads_total", reason="rate") == 1
        w.join(dt=10.0)
        assert len(w.instances.calls) == 3, "the budget refills only after 60 s"
        w.join(dt=50.0)
        assert w.instances.calls[3]["instance"] == "p-n3", "the node never answered goes first"
    finally:
        w.evidence.close()


def test_a_reader_defect_is_counted_and_gives_nothing() -> None:
    registry = CollectorRegistry()
    metrics = ComputeMetrics(registry)

    def broken(provider_id: str) -> Instance | None:
        raise AttributeError("defect")

    ev = Evidence(broken, metrics, deadline_s=5.0)
    try:
        node = fail_node(replace(make_nodes(make_pool("p"))[0], provider_id=pid("p-n0")), T0 - 5)
        assert ev.join([node], ON, T0)[0].instance is None
        labels = {"call": "read", "outcome": "crash"}
        crashes = registry.get_sample_value("hotswap_compute_reads_total", labels)
        assert crashes == 1
    finally:
        ev.close()


def test_confirmations_and_vetoes_are_counted_once_per_suspicion(world: World) -> None:
    world.fail("p-n1")
    world.vm("p-n1", "TERMINATED")
    world.fail("p-n2", ago=ON.dead_node_confirm_seconds + 1.0)
    for dt in (0.0, 1.0, 5.0, 5.0):
        world.join(dt=dt)
    assert world.value("hotswap_compute_confirmations_total", status="TERMINATED") == 1
    assert world.value("hotswap_compute_vetoes_total") == 1


def test_an_answer_is_about_one_vm(world: World) -> None:
    """A node whose providerID changes (a VM of the same node name) never gets the old VM's answer."""
    world.fail("p-n1")
    world.vm("p-n1", "TERMINATED")
    world.join()
    world.nodes["p-n1"] = replace(world.nodes["p-n1"], provider_id=pid("p-n1-new"))
    world.instances.fault = gexc.ServiceUnavailable("503")
    assert world.join(dt=1.0)["p-n1"].instance is None
    assert world.instances.calls[-1]["instance"] == "p-n1-new", "the new VM is read at once"


def test_nodes_no_longer_suspect_leave_the_cache(world: World) -> None:
    world.fail("p-n1")
    world.join()
    world.nodes["p-n1"] = replace(make_nodes(make_pool("p"))[1], provider_id=pid("p-n1"))
    nodes = world.join(dt=1.0)
    assert nodes["p-n1"].instance is None and world.evidence._entries == {}


def _eventually(check: object, tries: int = 400) -> bool:
    import time

    for _ in range(tries):
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.01)
    return False


_STEP = st.tuples(
    st.floats(0.0, 12.0, allow_nan=False),
    st.sampled_from(["RUNNING", "TERMINATED", "STOPPING", "REPAIRING", "503", "403", "gone"]),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_STEP, min_size=1, max_size=25))
def test_fuzz_a_confirmation_always_rests_on_a_fresh_not_running_answer(
    steps: list[tuple[float, str]],
) -> None:
    """Whatever the API does between reconciles, a node counts as confirmed down only if the answer
    joined in is a not-running one the fake really gave, sent after the suspicion and young enough."""
    w = World()
    try:
        w.fail("p-n1", ago=1.0)
        since = w.clock.t - 1.0
        given_answers: list[tuple[float, str]] = []
        for dt, what in steps:
            w.clock.t += dt
            w.instances.fault = None
            if what == "503":
                w.instances.fault = gexc.ServiceUnavailable("503")
            elif what == "403":
                w.instances.fault = gexc.Forbidden("403")
            elif what == "gone":
                w.instances.vms.pop((PROJECT, ZONE, "p-n1"), None)
            else:
                w.vm("p-n1", what)
            before = len(w.instances.calls)
            node = w.join()["p-n1"]
            if len(w.instances.calls) > before and w.instances.fault is None:
                vm = w.instances.vms.get((PROJECT, ZONE, "p-n1"))
                given_answers.append((w.clock.t, vm.status if vm else GONE))
            if confirmed_down(node, ON, w.clock.t) is not None:
                ev = node.instance
                assert ev is not None and ev.status in NOT_RUNNING
                assert (ev.observed, ev.status) in given_answers, "an answer the API really gave"
                assert since <= ev.observed <= w.clock.t
                assert w.clock.t - ev.observed <= ON.instance_evidence_max_age_seconds
    finally:
        w.evidence.close()


# --- corroboration end to end ---------------------------------------------------------------------
# Corroboration end to end: nodes with a ``spec.providerID`` in the loopback API double, the controller
# with the evidence cache over the strict Compute Engine fake, one reconcile through the real client.
#
# Pool ``a``'s node ``a-1`` goes NotReady. Its VM TERMINATED: the managed pods on it are force-deleted in
# the same reconcile that fails the JobSet fast, long before ``dead_node_confirm_seconds``. RUNNING: they
# are not, not even once that timer has run out (the veto). Forbidden, 503 or a hung API: no evidence, the
# conservative path (nothing before the timer, the timer after it). The providerID is parsed strictly
# (hypothesis over arbitrary strings).
DEFAULT = Settings(compute_corroboration=True)
"""What a stack ships: corroboration on, no force deletion without a not-running answer."""
WITH_TIMER = Settings(compute_corroboration=True, force_delete_unconfirmed=True)
"""Opted in to the NotReady timer as well: what a RUNNING answer must veto and a missing answer not."""
BEFORE_TIMER = 15.0
"""NotReady this long: past unhealthy_after_seconds (10), before dead_node_confirm_seconds (30)."""
AFTER_TIMER = WITH_TIMER.dead_node_confirm_seconds + 15.0


def node_pid(node: str) -> str:
    return f"gce://{PROJECT}/{ZONE}/gke-{node}"


class CorroborationCluster:
    def __init__(self, d: ApiDouble, settings: Settings = WITH_TIMER) -> None:
        self.d = d
        self.seed: Seeder = seed_cluster(d)
        for node in self.seed.list("nodes"):
            node["spec"]["providerID"] = node_pid(node["metadata"]["name"])
            self.seed.update("nodes", node)
        self.instances = FakeInstances(
            {(PROJECT, ZONE, f"gke-{p}-{i}"): Vm("RUNNING") for p in "ab" for i in range(4)}
        )
        self.metrics = Metrics()
        compute = ComputeMetrics(self.metrics.registry)
        reader = InstanceReader(self.instances, FakeOperations(), time.time, observe=compute.call)
        self.evidence = Evidence(reader.read, compute, deadline_s=0.5)
        self.controller = Controller(
            kube(d, "hotswap-0", self.metrics),
            Config(settings, FAST),
            identity="hotswap-0",
            metrics=self.metrics,
            evidence=self.evidence,
        )

    def fail(self, node: str, ago: float) -> None:
        self.seed.set_node_ready(node, "Unknown", time.time() - ago)

    def reconcile(self) -> None:
        for cache in self.controller.caches:
            cache.relist()
        assert self.controller.reconcile_once() is not None

    def pod(self, name: str) -> dict[str, Any] | None:
        return next((p for p in self.seed.list("pods", "default") if p["metadata"]["name"] == name), None)

    def terminating(self, name: str) -> bool:
        pod = self.pod(name)
        return pod is not None and bool(pod["metadata"].get("deletionTimestamp"))

    def value(self, name: str, **labels: str) -> float:
        return self.metrics.value(name, labels)


@contextmanager
def _corroboration_cluster(settings: Settings) -> Iterator[CorroborationCluster]:
    with ApiDouble(bookmark_interval=0.5) as d:
        c = CorroborationCluster(d, settings)
        yield c
        if c.instances.gate is not None:
            c.instances.gate.set()
        c.evidence.close()


@pytest.fixture
def cluster() -> Iterator[CorroborationCluster]:
    with _corroboration_cluster(WITH_TIMER) as c:
        yield c


@pytest.fixture
def shipped() -> Iterator[CorroborationCluster]:
    with _corroboration_cluster(DEFAULT) as c:
        yield c


def test_a_terminated_vm_has_its_managed_pods_force_deleted_at_once(cluster: CorroborationCluster) -> None:
    cluster.instances.vms[(PROJECT, ZONE, "gke-a-1")] = Vm("TERMINATED")
    cluster.fail("a-1", BEFORE_TIMER)
    cluster.reconcile()
    assert cluster.instances.calls == [{"project": PROJECT, "zone": ZONE, "instance": "gke-a-1"}]
    assert cluster.pod("high-1") is None, "force-deleted, not left Terminating on a dead node"
    assert cluster.value("hotswap_force_deletions_total") == 1
    assert cluster.value("hotswap_compute_confirmations_total", status="TERMINATED") == 1
    assert all(cluster.terminating(f"high-{i}") for i in (0, 2, 3)), (
        "the rest of the slice is evicted gracefully (fail fast); only the dead VM's pod is forced"
    )


def test_a_running_vm_vetoes_even_after_the_timer(cluster: CorroborationCluster) -> None:
    cluster.fail("a-1", AFTER_TIMER)
    cluster.reconcile()
    assert cluster.terminating("high-1"), "evicted, not force-deleted"
    assert cluster.value("hotswap_force_deletions_total") == 0
    assert cluster.value("hotswap_compute_vetoes_total") == 1


@pytest.mark.parametrize("ago", [BEFORE_TIMER, AFTER_TIMER])
@pytest.mark.parametrize(
    "fault",
    [gexc.Forbidden("Required 'compute.instances.get' permission"), gexc.ServiceUnavailable("503"), "slow"],
)
def test_no_evidence_falls_back_to_the_conservative_path(
    cluster: CorroborationCluster, fault: object, ago: float
) -> None:
    """Without an answer the NotReady timer decides, as without corroboration: nothing before it runs
    out, the force-delete after it (``ago`` is fixed per run: the node lifecycle controller keeps
    ``lastTransitionTime`` while the status stays Unknown)."""
    cluster.instances.vms[(PROJECT, ZONE, "gke-a-1")] = Vm("TERMINATED")
    if fault == "slow":
        cluster.instances.gate = threading.Event()
    else:
        assert isinstance(fault, Exception)
        cluster.instances.fault = fault
    cluster.fail("a-1", ago)
    cluster.reconcile()
    timer_ran_out = ago >= WITH_TIMER.dead_node_confirm_seconds
    assert (cluster.pod("high-1") is None) is timer_ran_out
    assert cluster.value("hotswap_force_deletions_total") == (1 if timer_ran_out else 0)
    assert cluster.value("hotswap_compute_confirmations_total", status="TERMINATED") == 0
    if fault == "slow":
        assert cluster.value("hotswap_compute_late_reads_total") == 1
    else:
        outcome = type(fault).__name__
        assert cluster.value("hotswap_compute_reads_total", call="instances.get", outcome=outcome) == 1


@pytest.mark.parametrize("fault", [gexc.Forbidden("Required 'compute.instances.get' permission"), "slow"])
def test_by_default_no_answer_never_force_deletes(shipped: CorroborationCluster, fault: object) -> None:
    """The shipped settings: a pod on a node NotReady well past the timer stays Terminating while
    Compute Engine cannot say the VM is down (the kubelet may be restarting, the guest hung)."""
    shipped.instances.vms[(PROJECT, ZONE, "gke-a-1")] = Vm("TERMINATED")
    if fault == "slow":
        shipped.instances.gate = threading.Event()
    else:
        assert isinstance(fault, Exception)
        shipped.instances.fault = fault
    shipped.fail("a-1", AFTER_TIMER + 600)
    shipped.reconcile()
    assert shipped.terminating("high-1"), "evicted, not force-deleted"
    assert shipped.value("hotswap_force_deletions_total") == 0


def test_by_default_a_terminated_vm_is_force_deleted(shipped: CorroborationCluster) -> None:
    shipped.instances.vms[(PROJECT, ZONE, "gke-a-1")] = Vm("TERMINATED")
    shipped.fail("a-1", BEFORE_TIMER)
    shipped.reconcile()
    assert shipped.pod("high-1") is None
    assert shipped.value("hotswap_force_deletions_total") == 1


# --- spec.providerID -----------------------------------------------------------------------------
def _node(provider_id: object) -> dict[str, object]:
    obj = node_obj("a-0", "a")
    obj["spec"]["providerID"] = provider_id
    return obj


def test_the_node_carries_its_validated_provider_id() -> None:
    rec = node_from_api(_node(node_pid("a-0")))
    assert rec is not None and rec.node.provider_id == node_pid("a-0")
    for bad in (
        "",
        None,
        7,
        ["gce://x"],
        "aws:///us-east-1a/i-0abc",
        node_pid("a-0").upper(),
        node_pid("a-0") + "\n",
    ):
        rec = node_from_api(_node(bad))
        assert rec is not None and rec.node.provider_id == "", bad
    no_spec = node_obj("a-0", "a")
    del no_spec["spec"]
    rec = node_from_api(no_spec)
    assert rec is not None and rec.node.provider_id == ""


_label = st.from_regex(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?", fullmatch=True)
_project = st.from_regex(r"[a-z][-a-z0-9]{4,28}[a-z0-9]", fullmatch=True)
_zone = st.from_regex(r"[a-z]{2,12}-[a-z]{2,12}[0-9]{1,2}-[a-z]", fullmatch=True)


@given(st.one_of(st.text(max_size=300), st.binary(max_size=64), st.integers(), st.none()))
def test_fuzz_any_provider_id_is_refused_or_round_trips(value: object) -> None:
    rec = node_from_api(_node(value))
    assert rec is not None
    got = rec.node.provider_id
    assert got == "" or (got == value and parse_provider_id(got) is not None)


@given(_project, _zone, _label)
def test_fuzz_well_formed_provider_ids_are_kept(project: str, zone: str, instance: str) -> None:
    value = f"gce://{project}/{zone}/{instance}"
    rec = node_from_api(_node(value))
    assert rec is not None
    assert rec.node.provider_id == (value if len(value) <= MAX_PROVIDER_ID else "")


@given(_project, _zone, _label, st.text(min_size=1, max_size=8))
def test_fuzz_anything_appended_or_prepended_is_refused(project: str, zone: str, vm: str, junk: str) -> None:
    value = f"gce://{project}/{zone}/{vm}"
    for hostile in (value + "/" + junk, junk + value, f"gce://{project}/{zone}/{vm}{junk}\x00"):
        got = parse_provider_id(hostile)
        assert got is None or f"gce://{got.project}/{got.zone}/{got.instance}" == hostile


def test_a_standby_reads_nothing(cluster: CorroborationCluster) -> None:
    """Only the leader's decision is applied, so only the leader spends Compute Engine reads."""
    from tests.hotswap.double_world import elector

    c = cluster.controller
    c.leader = elector(kube(cluster.d, "hotswap-1"), "hotswap-1")
    assert not c.is_leader()
    cluster.fail("a-1", BEFORE_TIMER)
    cluster.reconcile()
    assert cluster.instances.calls == []
    assert cluster.pod("high-1") is not None and not cluster.terminating("high-1"), "a standby writes nothing"


# --- the Google client --------------------------------------------------------------------------
def test_without_credentials_the_controller_runs_the_conservative_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``google.auth.default`` finding nothing: no evidence cache, an error logged, no crash (and no
    network: the metadata-server probe is what this stands in for)."""
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError

    from tpu_platform.hotswap.adapter.compute_engine import google_evidence

    def no_credentials(*args: object, **kwargs: object) -> object:
        raise DefaultCredentialsError("Your default credentials were not found")

    monkeypatch.setattr(google.auth, "default", no_credentials)
    metrics = Metrics()
    assert (
        google_evidence(
            metrics.registry,
            time.time,
            max_concurrent=2,
            deadline_s=1.0,
            reread_s=5.0,
            max_reads_per_minute=60,
        )
        is None
    )
    assert metrics.value("hotswap_compute_reader_up") == 0


def test_with_credentials_the_reader_is_built_over_the_real_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    import google.auth
    from google.auth.credentials import AnonymousCredentials

    from tpu_platform.hotswap.adapter.compute_engine import google_evidence

    monkeypatch.setattr(google.auth, "default", lambda *a, **k: (AnonymousCredentials(), PROJECT))
    metrics = Metrics()
    ev = google_evidence(
        metrics.registry, time.time, max_concurrent=2, deadline_s=1.0, reread_s=5.0, max_reads_per_minute=60
    )
    try:
        assert ev is not None and ev.max_concurrent == 2
        assert metrics.value("hotswap_compute_reader_up") == 1
        reader = ev.read.__self__  # type: ignore[attr-defined]
        from google.cloud import compute_v1

        assert isinstance(reader.instances, compute_v1.InstancesClient)
        assert isinstance(reader.operations, compute_v1.ZoneOperationsClient)
    finally:
        if ev is not None:
            ev.close()


# --- the reset fence end to end -------------------------------------------------------------------
# The fence end to end: the controller over the loopback API double with the evidence cache and the
# resetter over the strict Compute Engine fake, one reconcile at a time through the real client.
#
# Node ``a-1`` goes NotReady with its VM still RUNNING (a hung guest, or a kubelet that will not come
# back soon). The shipped settings never force-delete on that answer; once the pool is declared the VM
# is reset (one request per suspicion, the same ``requestId`` from any replica), and the node's managed
# pods are force-deleted only after Compute Engine reports the reset ``DONE``. A failing reset call
# leaves the pods Terminating and is sent again later; a dry run sends nothing.
SHIPPED = Settings(compute_corroboration=True)
SILENT_S = 15.0
"""NotReady this long: past unhealthy_after_seconds (10), so the pool is declared."""


class ResetCluster:
    def __init__(self, d: ApiDouble, settings: Settings, *, dry_run: bool = False) -> None:
        self.seed: Seeder = seed_cluster(d)
        for node in self.seed.list("nodes"):
            node["spec"]["providerID"] = node_pid(node["metadata"]["name"])
            self.seed.update("nodes", node)
        vms = {
            (PROJECT, ZONE, f"gke-{p}-{i}"): Vm("RUNNING", id=1000 + 10 * ord(p) + i)
            for p in "ab"
            for i in range(4)
        }
        self.instances = FakeInstances(vms)
        self.operations = FakeOperations()
        self.resets = FakeResets(vms, self.operations)
        self.metrics = Metrics()
        compute = ComputeMetrics(self.metrics.registry)
        reader = InstanceReader(self.instances, self.operations, time.time, observe=compute.call)
        self.evidence = Evidence(reader.read, compute, deadline_s=0.5, reread_s=0.0)
        self.resetter = VmResetter(self.resets, time.time, self.metrics.registry)
        self.controller = Controller(
            kube(d, "hotswap-0", self.metrics),
            Config(settings, replace(FAST, dry_run=dry_run)),
            identity="hotswap-0",
            metrics=self.metrics,
            evidence=self.evidence,
            resetter=self.resetter,
        )

    def reconcile(self) -> None:
        for cache in self.controller.caches:
            cache.relist()
        assert self.controller.reconcile_once() is not None

    def pod(self, name: str) -> dict[str, Any] | None:
        return next((p for p in self.seed.list("pods", "default") if p["metadata"]["name"] == name), None)

    def value(self, name: str, **labels: str) -> float:
        return self.metrics.value(name, labels)


@pytest.fixture
def reset_cluster() -> Iterator[ResetCluster]:
    with ApiDouble(bookmark_interval=0.5) as d:
        c = ResetCluster(d, SHIPPED)
        c.seed.set_node_ready("a-1", "Unknown", time.time() - SILENT_S)
        yield c
        c.evidence.close()


def test_a_silent_node_on_a_running_vm_is_reset_then_cleared(reset_cluster: ResetCluster) -> None:
    reset_cluster.reconcile()
    assert [r["instance"] for r in reset_cluster.resets.requests] == ["gke-a-1"], "one reset, the silent VM"
    pod = reset_cluster.pod("high-1")
    assert pod is not None and pod["metadata"].get("deletionTimestamp"), "evicted, not force-deleted yet"
    reset_cluster.reconcile()
    assert len(reset_cluster.resets.requests) == 1, "pending: not sent again"
    assert reset_cluster.pod("high-1") is not None, "a reset not DONE fences nothing"
    reset_cluster.resets.finish()
    reset_cluster.reconcile()
    assert reset_cluster.pod("high-1") is None, "force-deleted once the reset is done"
    assert reset_cluster.value("hotswap_compute_confirmations_total", status="RESET") == 1
    assert reset_cluster.value("hotswap_vm_resets_total", outcome="sent") == 1


def test_the_request_id_names_the_suspicion_so_a_second_replica_resets_nothing_twice(
    reset_cluster: ResetCluster,
) -> None:
    reset_cluster.reconcile()
    (sent,) = reset_cluster.resets.requests
    other = VmResetter(reset_cluster.resets, time.time)
    now = time.time()
    node = next(n for n in reset_cluster.controller.snapshot(now).nodes if n.name == "a-1")
    suspicion = suspect_since(node, SHIPPED, now)
    assert suspicion is not None
    assert sent["request_id"] == request_id(node_pid("a-1"), suspicion)
    assert request_id(node_pid("a-1"), suspicion) != request_id(node_pid("a-1"), suspicion + 60.0)
    assert other.pending(node_pid("a-1"), time.time()) is None, "another process knows of no reset"
    ops = [o for o in reset_cluster.operations.ops if o.operation_type == "reset"]
    assert len(ops) == 1


def test_a_failed_reset_leaves_the_pods_and_is_sent_again_later(reset_cluster: ResetCluster) -> None:
    reset_cluster.resets.fault = gexc.Forbidden("Required 'compute.instances.reset' permission")
    reset_cluster.reconcile()
    assert reset_cluster.value("hotswap_vm_resets_total", outcome="Forbidden") == 1
    pod = reset_cluster.pod("high-1")
    assert pod is not None, "no reset, no force deletion"
    reset_cluster.resets.fault = None
    reset_cluster.reconcile()
    assert reset_cluster.value("hotswap_vm_resets_total", outcome="sent") == 1


def test_a_dry_run_sends_no_reset() -> None:
    with ApiDouble(bookmark_interval=0.5) as d:
        c = ResetCluster(d, SHIPPED, dry_run=True)
        c.seed.set_node_ready("a-1", "Unknown", time.time() - SILENT_S)
        c.reconcile()
        c.evidence.close()
        assert c.resets.requests == []
        assert c.value("hotswap_actions_total", kind="ResetVm", outcome="dry-run") == 1


# --- the endpoint ---------------------------------------------------------------------------------
# ``runtime.compute_endpoint``: validated naming the field, read from the ConfigMap's ``runtime``
# section, rendered only when set, and honoured by Google's real clients (both of them), with
# Application Default Credentials from a metadata server, here the live tier's loopback compute_double.
ROOT = Path(__file__).resolve().parents[3]
VM = "gce://my-tpu-project-dev/us-east5-b/gke-dev-4x4-0-{:02d}"


@pytest.fixture
def compute_double() -> Iterator[ComputeDouble]:
    d = ComputeDouble().start()
    yield d
    d.stop()


@pytest.mark.parametrize(
    "endpoint",
    [
        "",
        "compute.googleapis.com",
        "https://compute-psc1.p.googleapis.com",
        "https://10.1.2.3:443",
        "http://127.0.0.1:8089",
        "http://127.8.9.1:5",
        "http://localhost:1",
        "http://[::1]:8080",
    ],
)
def test_endpoints_the_client_library_takes_as_they_are(endpoint: str) -> None:
    assert RuntimeConfig(compute_endpoint=endpoint).compute_endpoint == endpoint


@pytest.mark.parametrize(
    "endpoint",
    [
        "ftp://compute.example.com",
        "HTTPS://compute.example.com",
        "https://compute.example.com/compute/v1",
        "https://compute.example.com/",
        "https://compute.example.com?alt=json",
        "https://user@compute.example.com",
        " https://compute.example.com",
        "https://",
        "https://compute.example.com:0",
        "https://compute.example.com:70000",
        "http://compute.example.com",
        "http://10.0.0.1:80",
        7,
    ],
)
def test_bad_endpoints_are_refused_naming_the_field(endpoint: Any) -> None:
    with pytest.raises(SettingsError) as err:
        config_from_mapping({"runtime": {"compute_endpoint": endpoint}})
    assert err.value.field == "runtime.compute_endpoint"


def test_the_config_file_carries_it_and_the_stack_renders_it_only_when_set(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "compute_corroboration: true\nruntime:\n  compute_endpoint: https://compute-psc1.p.googleapis.com\n"
    )
    cfg = load_config(path, required=True)
    assert cfg.runtime.compute_endpoint == "https://compute-psc1.p.googleapis.com"
    assert cfg.runtime.to_dict()["compute_endpoint"] == "https://compute-psc1.p.googleapis.com"
    assert "compute_endpoint" not in yaml.safe_load(deploy.config_yaml())["runtime"]
    assert set(yaml.safe_load(deploy.config_yaml())["runtime"]) == set(RuntimeConfig().to_dict()) - {
        "compute_endpoint"
    }
    rendered = yaml.safe_load(deploy.config_yaml(None, RuntimeConfig(compute_endpoint="http://127.0.0.1:9")))
    assert rendered["runtime"]["compute_endpoint"] == "http://127.0.0.1:9"
    assert config_from_mapping(rendered).runtime.compute_endpoint == "http://127.0.0.1:9"


READ = """
import json, sys, time
from tpu_platform.hotswap.adapter.compute_engine import google_reader
reader = google_reader(time.time, endpoint=sys.argv[1])
answers = [reader.read(pid) for pid in sys.argv[2:]]
print(json.dumps({
    "answers": [None if a is None else [a.status, a.host_error_at] for a in answers],
    "errors": reader.errors,
}))
"""


def test_googles_clients_read_through_the_endpoint_with_metadata_server_credentials(
    compute_double: ComputeDouble, tmp_path: Path
) -> None:
    """In a process of its own, as the controller runs: google.auth reads ``GCE_METADATA_HOST`` when
    it is imported, and the machine's own gcloud credentials (``CLOUDSDK_CONFIG``) must not count."""
    compute_double.set_status(VM.format(1), "TERMINATED")
    failed_at = time.time() - 5
    compute_double.host_error(VM.format(2), failed_at)
    env = {"PATH": "/usr/bin:/bin", "CLOUDSDK_CONFIG": str(tmp_path), **compute_double.env()}
    pids = [VM.format(i) for i in range(3)]
    out = subprocess.run(
        [sys.executable, "-c", READ, compute_double.url, *pids],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["errors"] == {}, out.stderr
    (running, _), (terminated, _), (host_errored, error_at) = result["answers"]
    assert (running, terminated, host_errored) == ("RUNNING", "TERMINATED", "RUNNING")
    assert error_at == pytest.approx(failed_at, abs=0.001), "insertTime in milliseconds"
    kinds = [c.kind for c in compute_double.calls]
    assert {"ping", "project-id", "service-account", "token"} <= set(kinds), "ADC from the metadata server"
    for pid in pids:
        assert len(compute_double.reads_of(pid)) == 1, "InstancesClient went to the endpoint"
        assert len(compute_double.reads_of(pid, "zoneOperations.list")) == 1, "ZoneOperationsClient too"
    assert all(c.status == 200 for c in compute_double.calls), compute_double.calls


def test_an_unauthenticated_read_is_no_evidence(compute_double: ComputeDouble) -> None:
    """The compute_double checks the metadata server's token as Compute Engine checks a bearer token. A 401
    makes google-auth's ``AuthorizedSession.request`` refresh the credentials and resend
    (``google/auth/transport/requests.py``), which anonymous ones cannot (``InvalidOperation``, a
    ``GoogleAuthError``): the reader reports nothing, never a status."""
    options = {"api_endpoint": compute_double.url}
    reader = InstanceReader(
        compute_v1.InstancesClient(credentials=AnonymousCredentials(), client_options=options),
        compute_v1.ZoneOperationsClient(credentials=AnonymousCredentials(), client_options=options),
        time.time,
    )
    compute_double.set_status(VM.format(0), "TERMINATED")
    assert reader.read(VM.format(0)) is None
    assert reader.errors == {"InvalidOperation": 1}
    assert [(c.kind, c.status) for c in compute_double.calls] == [("instances.get", 401)]
