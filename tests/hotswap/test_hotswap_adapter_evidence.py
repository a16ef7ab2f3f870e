"""The evidence cache between the Compute Engine reader and the snapshot: only suspect nodes are read,
reads are bounded in number and in time, answers are cached and re-read on schedule, failures keep
the previous answer and never confirm, and confirmations and vetoes are counted once per suspicion."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace

import pytest
from google.api_core import exceptions as gexc
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from tests.hotswap.compute_fake import FakeInstances, FakeOperations, Vm
from tpu_platform.hotswap.adapter.compute import InstanceReader
from tpu_platform.hotswap.adapter.evidence import ComputeMetrics, Evidence
from tpu_platform.hotswap.core import GONE, NOT_RUNNING, Instance, Settings, confirmed_down
from tpu_platform.hotswap.core.model import Node
from tpu_platform.testing.hotswap_builders import fail_node, make_nodes, make_pool

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
