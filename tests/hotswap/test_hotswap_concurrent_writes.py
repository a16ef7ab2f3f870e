"""Node patches written by several writers at once, at the protocol level: the real client against the
loopback API double, with slow writes (every node PATCH waits at the server before it is handled).

kube-controller-manager runs several workers per controller (``--concurrent-*-syncs``), each key in
one worker at a time (client-go ``util/workqueue``); the applier does the same for node patches.
What these tests pin, from what the double saw: how many patches were in flight at once (with one
writer one, with four up to four: the time to taint N pools falls by that factor); that no patch
reaches the server once the fence has closed, beyond the ones already sent; that one node's
patches stay in order; and that evictions wait for their pool's taint.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from tests.hotswap.double_world import kube
from tests.kubeapi import ApiDouble, Fault, Request, Seeder
from tests.kubeapi.objects import node_obj
from tpu_platform.hotswap.adapter.applier import Applier, Outcome
from tpu_platform.hotswap.adapter.convert import node_from_api
from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.actions import Action, EvictionCause, EvictPod, PatchNode
from tpu_platform.hotswap.core.health import OWN_TAINT
from tpu_platform.hotswap.core.model import Node, Snapshot

SLOW_WRITE = 0.4


class InFlight:
    """Counts node PATCHes between their arrival (the background fault hook, which also makes them
    slow) and their answer (``on_write``), and keeps the order they arrived in."""

    def __init__(self, double: ApiDouble) -> None:
        self.now = 0
        self.most = 0
        self.arrived: list[str] = []
        self.open = True
        """Set False by a test when its fence closes; arrivals after that are counted late."""
        self.late = 0
        self._lock = threading.Lock()
        double.faults.background = self.arrive
        double.on_write = lambda served: self.leave(served.request)

    @staticmethod
    def _is_patch(req: Request) -> bool:
        return req.verb == "patch" and req.resource == "nodes"

    def arrive(self, req: Request) -> Fault | None:
        if not self._is_patch(req):
            return None
        with self._lock:
            self.now += 1
            self.most = max(self.most, self.now)
            self.arrived.append(req.name)
            if not self.open:
                self.late += 1
        return Fault(delay=SLOW_WRITE, label="slow_write")

    def leave(self, req: Request) -> None:
        if self._is_patch(req):
            with self._lock:
                self.now -= 1


@pytest.fixture
def double() -> Iterator[ApiDouble]:
    with ApiDouble() as d:
        yield d


def seed(d: ApiDouble, pools: int, per_pool: int = 1) -> Snapshot:
    s = Seeder(d)
    nodes: list[Node] = []
    for p in range(pools):
        for i in range(per_pool):
            obj = s.node(node_obj(f"p{p}-{i}", f"p{p}"))
            rec = node_from_api(obj)
            assert rec is not None
            nodes.append(rec.node)
    return Snapshot(1000.0, (), tuple(nodes))


def taints(snap: Snapshot) -> list[Action]:
    return [PatchNode(n.name, n.pool, add_taints=(OWN_TAINT,), reason="unhealthy") for n in snap.nodes]


def tainted(d: ApiDouble) -> set[str]:
    items, _ = d.store.list_items(d.store_kind("nodes"), "")
    return {
        o["metadata"]["name"]
        for o in items
        if any(t.get("key") == OWN_TAINT.key for t in (o.get("spec") or {}).get("taints") or [])
    }


@pytest.mark.parametrize(("workers", "most"), [(1, 1), (4, 4)])
def test_node_patches_go_out_with_bounded_concurrency(double: ApiDouble, workers: int, most: int) -> None:
    snap = seed(double, pools=8)
    seen = InFlight(double)
    applier = Applier(kube(double, "hotswap-0"), identity="hotswap-0", node_patch_workers=workers)
    results = applier.apply(taints(snap), snap)
    assert [r.outcome for r in results] == [Outcome.APPLIED] * 8
    assert tainted(double) == {n.name for n in snap.nodes}
    assert seen.most == most
    assert seen.now == 0


def test_no_patch_reaches_the_server_after_the_fence_closes(double: ApiDouble) -> None:
    snap = seed(double, pools=12)
    seen = InFlight(double)
    answers: list[bool] = []
    lock = threading.Lock()

    def may_write() -> bool:
        """Open for the first five writes, closed from then on (a renewal lost mid-batch)."""
        with lock:
            ok = sum(answers) < 5
            answers.append(ok)
            if not ok:
                seen.open = False
            return ok

    applier = Applier(kube(double, "hotswap-0"), identity="hotswap-0", may_write=may_write)
    results = applier.apply(taints(snap), snap)
    applied = [r for r in results if r.outcome is Outcome.APPLIED]
    fenced = [r for r in results if r.outcome is Outcome.FENCED]
    assert len(applied) == 5 and len(fenced) == 7
    assert len(seen.arrived) == 5  # every write the server saw had passed the fence
    assert seen.late <= 4 - 1  # at most the other writers' writes already sent when it closed
    assert tainted(double) == {r.action.node for r in applied if isinstance(r.action, PatchNode)}


def test_a_spent_budget_defers_the_writes_of_every_writer(double: ApiDouble) -> None:
    snap = seed(double, pools=12)
    seen = InFlight(double)
    clock = {"now": 0.0}

    def monotonic() -> float:
        """Time moves only with the writes: the budget is spent after the first wave of four."""
        return clock["now"]

    def after_write(req: Request) -> None:
        seen.leave(req)
        clock["now"] = 10.0

    double.on_write = lambda served: after_write(served.request)
    applier = Applier(kube(double, "hotswap-0"), identity="hotswap-0", monotonic=monotonic)
    results = applier.apply(taints(snap), snap, deadline=5.0)
    outcomes = [r.outcome for r in results]
    assert 1 <= outcomes.count(Outcome.APPLIED) <= 4
    assert outcomes.count(Outcome.DEFERRED) == 12 - outcomes.count(Outcome.APPLIED)
    assert len(seen.arrived) == outcomes.count(Outcome.APPLIED)


def test_one_nodes_patches_stay_in_order_on_one_writer(double: ApiDouble) -> None:
    snap = seed(double, pools=1, per_pool=3)
    seen = InFlight(double)
    n0 = snap.nodes[0]
    actions: list[Action] = [
        PatchNode(n0.name, n0.pool, add_taints=(OWN_TAINT,), reason="unhealthy"),
        PatchNode(n0.name, n0.pool, set_annotations=((k.UNHEALTHY_SINCE_ANNOTATION, "t0"),)),
        *taints(Snapshot(snap.now, (), snap.nodes[1:])),
    ]
    results = Applier(kube(double, "hotswap-0"), identity="hotswap-0").apply(actions, snap)
    # Both patches of n0 carry the cached resourceVersion: the first lands, the second conflicts
    # (it is written after the first returned, never at the same time); the others land.
    assert [r.outcome for r in results] == [
        Outcome.APPLIED,
        Outcome.CONFLICT,
        Outcome.APPLIED,
        Outcome.APPLIED,
    ]
    assert seen.arrived.count(n0.name) == 2
    assert seen.most == 3


def test_fail_fast_evictions_wait_for_their_pools_taint(double: ApiDouble) -> None:
    snap = seed(double, pools=4)
    InFlight(double)
    double.faults.add(Fault(status=503, verbs=("patch",), resources=("nodes",), times=1))
    evictions = [
        EvictPod("default", f"w{p}", f"uid-w{p}", EvictionCause.FAIL_FAST, pool=f"p{p}", jobset="default/js")
        for p in range(4)
    ]
    results = Applier(kube(double, "hotswap-0"), identity="hotswap-0").apply(
        [*taints(snap), *evictions], snap
    )
    failed = {
        r.action.pool for r in results[:4] if isinstance(r.action, PatchNode) and r.outcome is Outcome.FAILED
    }
    assert len(failed) == 1
    by_pool = {r.action.pool: r for r in results[4:] if isinstance(r.action, EvictPod)}
    [skipped] = [p for p, r in by_pool.items() if r.outcome is Outcome.SKIPPED]
    assert {skipped} == failed
    # The pods do not exist in the double: the three tainted pools' evictions were issued (404).
    assert all(r.outcome is Outcome.GONE for p, r in by_pool.items() if p != skipped)
