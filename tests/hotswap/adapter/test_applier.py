"""Core actions to API calls (``tpu_platform.hotswap.adapter.applier``)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace

import pytest

from tests.hotswap.double_world import kube
from tests.hotswap.hotswap_fakes import FakeApi, json_patch
from tests.kubeapi import ApiDouble, Fault, Request, Seeder
from tests.kubeapi.objects import node_obj
from tpu_platform.hotswap.adapter.applier import Applier, Outcome, event_body, node_patch, taints_first
from tpu_platform.hotswap.adapter.client import ApiError
from tpu_platform.hotswap.adapter.convert import node_from_api
from tpu_platform.hotswap.core import (
    Action,
    AnnotateJobSet,
    EmitEvent,
    EvictionCause,
    EvictPod,
    ForceDeletePod,
    Node,
    PatchNode,
    Snapshot,
    Taint,
)
from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.pool_health import OWN_TAINT

# --- exact API calls, against the fake API --------------------------------------------------------
# Actions to exact API calls.
GKE_TAINT = {"key": k.TPU_RESOURCE, "value": "present", "effect": "NoSchedule"}
UNREACHABLE = {"key": k.UNREACHABLE_TAINT, "effect": "NoExecute", "timeAdded": "2030-01-01T00:00:00Z"}


def cached(obj: dict) -> Node:
    rec = node_from_api(obj)
    assert rec is not None
    return replace(rec.node, resource_version=obj["metadata"].get("resourceVersion", ""))


def setup(*objs: dict) -> tuple[FakeApi, Applier, Snapshot]:
    api = FakeApi()
    for o in objs:
        api.add("nodes", o)
    nodes = tuple(cached(o) for o in api.objects["nodes"].values())
    return api, Applier(api, identity="hotswap-0", clock=lambda: 1000.5), Snapshot(1000.5, (), nodes)


def test_adding_the_taint_appends_one_entry_guarded_by_resource_version() -> None:
    obj = node_obj("n1", "a", taints=[GKE_TAINT, UNREACHABLE], annotations={"keep": "me"})
    api, applier, snap = setup(obj)
    action = PatchNode(
        "n1", "a", add_taints=(OWN_TAINT,), set_annotations=((k.UNHEALTHY_SINCE_ANNOTATION, "t0"),)
    )
    [result] = applier.apply([action], snap)
    assert result.outcome is Outcome.APPLIED
    assert api.writes() == [
        (
            "patch_node",
            "n1",
            [
                {"op": "test", "path": "/metadata/resourceVersion", "value": "101"},
                {
                    "op": "add",
                    "path": "/spec/taints/-",
                    "value": {"key": k.UNHEALTHY_TAINT_KEY, "effect": "NoSchedule", "value": "true"},
                },
                {
                    "op": "add",
                    "path": "/metadata/annotations/tpu-platform.dev~1unhealthy-since",
                    "value": "t0",
                },
            ],
        )
    ]
    stored = api.objects["nodes"]["n1"]
    assert stored["spec"]["taints"][:2] == [GKE_TAINT, UNREACHABLE], "foreign taints untouched"
    assert stored["metadata"]["annotations"] == {"keep": "me", k.UNHEALTHY_SINCE_ANNOTATION: "t0"}


def test_removing_the_taint_removes_exactly_that_index() -> None:
    own = {"key": k.UNHEALTHY_TAINT_KEY, "value": "true", "effect": "NoSchedule"}
    obj = node_obj(
        "n1",
        "a",
        taints=[GKE_TAINT, own, UNREACHABLE],
        annotations={k.UNHEALTHY_SINCE_ANNOTATION: "t0", "x": "y"},
    )
    api, applier, snap = setup(obj)
    action = PatchNode(
        "n1",
        "a",
        remove_taints=(k.UNHEALTHY_TAINT_KEY,),
        remove_annotations=(k.UNHEALTHY_SINCE_ANNOTATION, "absent"),
    )
    applier.apply([action], snap)
    assert api.writes()[0][2] == [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "101"},
        {"op": "test", "path": "/spec/taints/1/key", "value": k.UNHEALTHY_TAINT_KEY},
        {"op": "remove", "path": "/spec/taints/1"},
        {"op": "remove", "path": "/metadata/annotations/tpu-platform.dev~1unhealthy-since"},
    ]
    stored = api.objects["nodes"]["n1"]
    assert stored["spec"]["taints"] == [GKE_TAINT, UNREACHABLE]
    assert stored["metadata"]["annotations"] == {"x": "y"}


def test_node_without_taints_or_annotations_gets_the_lists_created() -> None:
    obj = node_obj("n1", "a", taints=[])
    del obj["spec"]["taints"]
    api, _, snap = setup(obj)
    ops = node_patch(
        snap.nodes[0], PatchNode("n1", "a", add_taints=(OWN_TAINT,), set_annotations=(("a/b", "c"),))
    )
    assert ops[1:] == [
        {
            "op": "add",
            "path": "/spec/taints",
            "value": [{"key": k.UNHEALTHY_TAINT_KEY, "effect": "NoSchedule", "value": "true"}],
        },
        {"op": "add", "path": "/metadata/annotations", "value": {"a/b": "c"}},
    ]
    patched = json_patch(api.objects["nodes"]["n1"], ops)
    assert patched["metadata"]["annotations"] == {"a/b": "c"}


def test_stale_resource_version_is_a_conflict_and_blocks_that_pools_fail_fast() -> None:
    obj = node_obj("n1", "a")
    api, applier, snap = setup(obj)
    api.objects["nodes"]["n1"]["metadata"]["resourceVersion"] = "999"  # changed since we cached it
    evict = EvictPod(
        "default", "p", "uid-p", EvictionCause.FAIL_FAST, node="n1", pool="a", jobset="default/j"
    )
    other = EvictPod(
        "default", "q", "uid-q", EvictionCause.FAIL_FAST, node="n9", pool="b", jobset="default/j"
    )
    results = applier.apply([PatchNode("n1", "a", add_taints=(OWN_TAINT,)), evict, other], snap)
    assert [r.outcome for r in results] == [Outcome.CONFLICT, Outcome.SKIPPED, Outcome.GONE]
    assert [c[0] for c in api.writes()] == ["patch_node", "evict_pod"]
    assert api.writes()[1][2] == "q"


def test_eviction_body_and_force_delete_grace_period() -> None:
    api, applier, snap = setup()
    api.add("pods", {"metadata": {"name": "p", "namespace": "ml", "uid": "uid-p"}})
    evict = EvictPod("ml", "p", "uid-p", EvictionCause.PREEMPTION, node="n1", pool="a", jobset="ml/low")
    delete = ForceDeletePod("ml", "p", "uid-p", node="n1", jobset="ml/low")
    results = applier.apply([evict, delete], snap)
    assert [r.outcome for r in results] == [Outcome.APPLIED, Outcome.APPLIED]
    assert api.writes() == [
        (
            "evict_pod",
            "ml",
            "p",
            {
                "apiVersion": "policy/v1",
                "kind": "Eviction",
                "metadata": {"name": "p", "namespace": "ml"},
                "deleteOptions": {"preconditions": {"uid": "uid-p"}},
            },
        ),
        ("delete_pod", "ml", "p", 0, "uid-p"),
    ]


def test_pdb_refusal_is_blocked_and_skips_the_force_delete() -> None:
    api, applier, snap = setup()
    api.fail["evict_pod"] = [ApiError(429, "TooManyRequests")]
    evict = EvictPod("ml", "p", "uid-p", EvictionCause.FAIL_FAST, node="n1", pool="a", jobset="ml/j")
    results = applier.apply([evict, ForceDeletePod("ml", "p", "uid-p", node="n1")], snap)
    assert [r.outcome for r in results] == [Outcome.BLOCKED, Outcome.SKIPPED]
    assert [c[0] for c in api.writes()] == ["evict_pod"]


def test_unrecorded_preemption_evicts_nothing() -> None:
    api, applier, snap = setup()
    api.add("jobsets", {"metadata": {"name": "low", "namespace": "ml", "uid": "uid-new"}})
    note = AnnotateJobSet("ml", "low", "uid-old", ((k.PREEMPTED_FOR_ANNOTATION, "ml/high"),))
    evict = EvictPod("ml", "p", "uid-p", EvictionCause.PREEMPTION, node="n1", pool="a", jobset="ml/low")
    results = applier.apply([note, evict], snap)
    assert [r.outcome for r in results] == [Outcome.CONFLICT, Outcome.SKIPPED]
    assert api.writes() == [
        (
            "patch_jobset",
            "ml",
            "low",
            {"metadata": {"uid": "uid-old", "annotations": {k.PREEMPTED_FOR_ANNOTATION: "ml/high"}}},
        )
    ]


def test_events_are_events_k8s_io_v1_with_micro_time() -> None:
    action = EmitEvent("Node", "", "n1", "uid-n1", "Warning", "HotswapPoolUnhealthy", "pool a down", "Taint")
    ns, body = event_body(action, identity="hotswap-0", now=1000.0, node_namespace="default")
    assert ns == "default"
    name = body["metadata"]["name"]
    assert name.startswith("n1.") and int(name.removeprefix("n1."), 16) >= 1000 * 10**9
    assert body == {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "eventTime": "1970-01-01T00:16:40.000000Z",
        "reportingController": "tpu-platform.dev/hotswap",
        "reportingInstance": "hotswap-0",
        "action": "Taint",
        "reason": "HotswapPoolUnhealthy",
        "note": "pool a down",
        "type": "Warning",
        "regarding": {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "uid-n1"},
    }
    js = EmitEvent("JobSet", "ml", "low", "uid-js", "Warning", "HotswapPreempted", "m", "Preempt")
    ns, body = event_body(js, identity="x", now=0.0, node_namespace="default")
    assert ns == "ml"
    assert body["regarding"] == {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "name": "low",
        "namespace": "ml",
        "uid": "uid-js",
    }


def test_event_failures_do_not_stop_the_batch() -> None:
    api, applier, snap = setup()
    api.fail["create_event"] = [ApiError(500, "boom")]
    api.add("pods", {"metadata": {"name": "p", "namespace": "ml", "uid": "uid-p"}})
    ev = EmitEvent("Pod", "ml", "p", "uid-p", "Normal", "R", "m")
    results = applier.apply([ev, ForceDeletePod("ml", "p", "uid-p", node="n1")], snap)
    assert [r.outcome for r in results] == [Outcome.FAILED, Outcome.APPLIED]


def test_patch_for_node_missing_from_snapshot_is_skipped() -> None:
    api, applier, snap = setup()
    [r] = applier.apply([PatchNode("ghost", "a", add_taints=(Taint("x"),))], snap)
    assert r.outcome is Outcome.SKIPPED and api.writes() == []


def test_the_write_budget_is_checked_per_write_not_per_batch() -> None:
    """A lease lost halfway through a batch stops the rest of it at once."""
    api, applier, snap = setup()
    evictions = [
        EvictPod("ml", f"p{i}", f"uid-p{i}", EvictionCause.FAIL_FAST, node="n1", pool="a", jobset="ml/j")
        for i in range(4)
    ]
    for i in range(4):
        api.objects["pods"][f"ml/p{i}"] = {
            "metadata": {"name": f"p{i}", "namespace": "ml", "uid": f"uid-p{i}"}
        }
    allowed = iter([True, True, False, False])
    applier.may_write = lambda: next(allowed)
    results = applier.apply(evictions, snap)
    assert [r.outcome for r in results] == [
        Outcome.APPLIED,
        Outcome.APPLIED,
        Outcome.OUT_OF_BUDGET,
        Outcome.OUT_OF_BUDGET,
    ]
    assert len([w for w in api.writes() if w[0] == "evict_pod"]) == 2


def test_a_failed_target_backs_off_while_others_proceed_and_retry_after_is_honoured() -> None:
    api, applier, snap = setup()
    for name in ("p0", "p1"):
        api.objects["pods"][f"ml/{name}"] = {
            "metadata": {"name": name, "namespace": "ml", "uid": f"uid-{name}"}
        }
    api.fail["evict_pod"] = [ApiError(429, "TooManyRequests", retry_after=30.0)]
    p0 = EvictPod("ml", "p0", "uid-p0", EvictionCause.PREEMPTION, jobset="ml/j")
    p1 = EvictPod("ml", "p1", "uid-p1", EvictionCause.PREEMPTION, jobset="ml/j")
    assert [r.outcome for r in applier.apply([p0, p1], snap)] == [Outcome.BLOCKED, Outcome.APPLIED]
    assert applier.backoff.waiting("pod/ml/p0") >= 29.0
    [again] = applier.apply([p0], snap)
    assert again.outcome is Outcome.BACKOFF
    assert len([w for w in api.writes() if w[0] == "evict_pod"]) == 2, "no request while backing off"


def test_an_event_is_not_sent_for_writes_that_failed() -> None:
    api, applier, snap = setup()
    api.objects["pods"]["ml/p0"] = {"metadata": {"name": "p0", "namespace": "ml", "uid": "uid-p0"}}
    api.fail["evict_pod"] = [ApiError(0, "ProtocolError")]
    evict = EvictPod("ml", "p0", "uid-p0", EvictionCause.FAIL_FAST, node="n1", pool="a", jobset="ml/j")
    event = EmitEvent(
        "JobSet", "ml", "j", "uid-j", "Warning", "HotswapFailFast", "Evicting 1 pod(s)", "Evict"
    )
    results = applier.apply([evict, event], snap)
    assert [r.outcome for r in results] == [Outcome.FAILED, Outcome.SKIPPED]
    assert not [w for w in api.writes() if w[0] == "create_event"]


def test_a_failed_taint_is_retried_at_the_next_tick_however_often_it_failed() -> None:
    """Node patches back off at most 1.2 s (1 s + 20 % jitter): a pool's taint never waits out a
    backoff grown by earlier faults, while other writes keep their longer one."""
    now = [0.0]
    api, applier, snap = setup(node_obj("n1", "a"))
    applier.node_backoff.clock = applier.backoff.clock = lambda: now[0]
    taint = PatchNode("n1", "a", add_taints=(OWN_TAINT,), reason="unhealthy")
    api.fail["patch_node"] = [ApiError(503, "Unavailable")] * 20
    for _ in range(20):
        [r] = applier.apply([taint], snap)
        assert r.outcome in (Outcome.FAILED, Outcome.BACKOFF)
        assert applier.node_backoff.waiting("node/n1") <= 1.2
        now[0] += 2.0  # the default reconcile interval
    assert len([w for w in api.writes() if w[0] == "patch_node"]) == 20, "every tick retried it"
    for _ in range(10):
        applier.backoff.failed("pod/ml/p0")
    assert applier.backoff.waiting("pod/ml/p0") > 4.0, "evictions keep the longer backoff"


def test_a_batch_past_its_time_budget_defers_the_rest_and_reports_nothing_unissued() -> None:
    """A backlog behind the QPS limit must not keep a new failure from being decided: writes not
    issued by the deadline are deferred (no backoff, no Event for them), the next pass decides."""
    now = [0.0]
    api, applier, snap = setup(node_obj("n1", "a"), node_obj("n2", "b"))
    applier.monotonic = lambda: now[0]
    api.objects["pods"]["ml/p0"] = {"metadata": {"name": "p0", "namespace": "ml", "uid": "uid-p0"}}
    patch_node = api.patch_node

    def slow_patch(name: str, ops: list) -> object:
        now[0] += 0.6
        return patch_node(name, ops)

    api.patch_node = slow_patch  # type: ignore[method-assign,assignment]
    a = PatchNode("n1", "a", add_taints=(OWN_TAINT,), reason="unhealthy")
    b = PatchNode("n2", "b", add_taints=(OWN_TAINT,), reason="unhealthy")
    evict = EvictPod("ml", "p0", "uid-p0", EvictionCause.FAIL_FAST, node="n2", pool="b", jobset="ml/j")
    event = EmitEvent("Node", "", "n2", "", "Warning", "HotswapPoolUnhealthy", "tainted", "Taint")
    results = applier.apply([a, b, evict, event], snap, deadline=1.0)
    assert [r.outcome for r in results] == [
        Outcome.APPLIED,
        Outcome.APPLIED,
        Outcome.DEFERRED,
        Outcome.DEFERRED,
    ], "the second patch started before the deadline; nothing after it did"
    assert not [w for w in api.writes() if w[0] in ("evict_pod", "create_event")]
    assert applier.backoff.waiting("pod/ml/p0") == 0.0, "deferred is not failed"


def test_taints_go_before_every_other_node_patch() -> None:
    untaint = PatchNode("a-0", "a", remove_taints=(OWN_TAINT.key,), reason="recovered")
    annotate = PatchNode("b-0", "b", set_annotations=(("k", "v"),), reason="record")
    taint = PatchNode("c-0", "c", add_taints=(OWN_TAINT,), reason="unhealthy")
    evict = EvictPod("ml", "p0", "uid-p0", EvictionCause.FAIL_FAST, node="c-0", pool="c", jobset="ml/j")
    assert taints_first([untaint, annotate, taint, evict]) == (taint, untaint, annotate, evict)


# --- concurrent node patches, against the API double ----------------------------------------------
# Node patches written by several writers at once, at the protocol level: the real client against the
# loopback API double, with slow writes (every node PATCH waits at the server before it is handled).
#
# kube-controller-manager runs several workers per controller (``--concurrent-*-syncs``), each key in
# one worker at a time (client-go ``util/workqueue``); the applier does the same for node patches.
# What these tests pin, from what the double saw: how many patches were in flight at once (with one
# writer one, with four up to four: the time to taint N pools falls by that factor); that no patch
# reaches the server once the write budget is spent, beyond the ones already sent; that one node's
# patches stay in order; and that evictions wait for their pool's taint.
SLOW_WRITE = 0.4


class InFlight:
    """Counts node PATCHes between their arrival (the background fault hook, which also makes them
    slow) and their answer (``on_write``), and keeps the order they arrived in."""

    def __init__(self, double: ApiDouble) -> None:
        self.now = 0
        self.most = 0
        self.arrived: list[str] = []
        self.open = True
        """Set False by a test when its write budget is spent; arrivals after that are counted late."""
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


def test_no_patch_reaches_the_server_after_the_budget_is_spent(double: ApiDouble) -> None:
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
    refused = [r for r in results if r.outcome is Outcome.OUT_OF_BUDGET]
    assert len(applied) == 5 and len(refused) == 7
    assert len(seen.arrived) == 5  # every write the server saw had passed the budget check
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
