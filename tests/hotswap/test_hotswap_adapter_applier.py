"""Actions to exact API calls."""

from __future__ import annotations

from dataclasses import replace

from tests.hotswap.hotswap_fakes import FakeApi, json_patch, node_obj
from tpu_platform.hotswap.adapter.api import ApiError
from tpu_platform.hotswap.adapter.applier import Applier, Outcome, event_body, node_patch, taints_first
from tpu_platform.hotswap.adapter.convert import node_from_api
from tpu_platform.hotswap.core import (
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
from tpu_platform.hotswap.core.health import OWN_TAINT

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


def test_the_fence_is_checked_per_write_not_per_batch() -> None:
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
    assert [r.outcome for r in results] == [Outcome.APPLIED, Outcome.APPLIED, Outcome.FENCED, Outcome.FENCED]
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
