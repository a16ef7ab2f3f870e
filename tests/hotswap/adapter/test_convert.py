"""Raw API objects to the core's types (``tpu_platform.hotswap.adapter.convert``)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kubeapi.objects import jobset_obj, node_obj, pod_obj
from tpu_platform.hotswap.adapter.convert import (
    jobset_from_api,
    node_from_api,
    object_key,
    pod_from_api,
    pools_from_nodes,
    with_pods,
)
from tpu_platform.hotswap.core import (
    AnnotateJobSet,
    EvictPod,
    Settings,
    Snapshot,
    decide,
    is_managed,
    parse_time,
)
from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.maintenance import window_start
from tpu_platform.hotswap.core.times import format_time
from tpu_platform.hotswap.core.workload_signals import MAX_MESSAGE_CHARS, MAX_TERMINATIONS


# --- objects --------------------------------------------------------------------------------------
# Raw API objects to core types.
def test_node_conversion_keeps_taint_order_and_times() -> None:
    obj = node_obj(
        "n1",
        "pool-a",
        ready="Unknown",
        since=500,
        taints=[
            {"key": k.TPU_RESOURCE, "value": "present", "effect": "NoSchedule"},
            {"key": k.UNREACHABLE_TAINT, "effect": "NoExecute", "timeAdded": "1970-01-01T00:08:40Z"},
        ],
        annotations={"a": "b"},
    )
    rec = node_from_api(obj)
    assert rec is not None
    n = rec.node
    assert (n.name, n.pool, n.uid) == ("n1", "pool-a", "uid-n1")
    assert [t.key for t in n.taints] == [k.TPU_RESOURCE, k.UNREACHABLE_TAINT]
    assert n.taints[1].time_added == 520.0
    ready = n.condition("Ready")
    assert ready is not None and (ready.status, ready.last_transition) == ("Unknown", 500.0)
    assert n.annotations == {"a": "b"}
    assert n.resource_version == ""
    assert (rec.topology, rec.accelerator, rec.chips_per_node) == ("4x4", "tpu-v6e-slice", 4)


def test_non_tpu_nodes_are_skipped() -> None:
    obj = node_obj("cpu", "default-pool")
    del obj["metadata"]["labels"][k.TPU_ACCELERATOR_LABEL]
    assert node_from_api(obj) is None


def test_pools_are_sized_from_topology_and_chips_per_vm() -> None:
    recs = [node_from_api(node_obj(f"a{i}", "a")) for i in range(3)]
    big = node_obj("b0", "b", topology="8x16")
    small = node_obj("c0", "c", topology="2x4")
    small["status"]["capacity"][k.TPU_RESOURCE] = "8"
    recs += [node_from_api(big), node_from_api(small)]
    pools = {p.name: p for p in pools_from_nodes([r for r in recs if r is not None])}
    assert pools["a"].expected_nodes == 4, "3 of 4 present: the slice is incomplete"
    assert pools["b"].expected_nodes == 32
    assert pools["c"].expected_nodes == 1, "2x4 on ct6e-standard-8t is single-host"


def test_pod_conversion() -> None:
    pending = pod_from_api(
        pod_obj(
            "p0", "high", job="high-slice-0", node=None, priority=7, phase="Pending", unschedulable_since=900
        )
    )
    assert pending.jobset == "default/high" and pending.job == "high-slice-0"
    assert pending.node is None and pending.unschedulable_since == 900.0 and pending.priority == 7
    assert pending.uses_accelerator
    running = pod_from_api(
        pod_obj("p1", "high", job="high-slice-0", node="n1", priority=7, started=50, deletion=70)
    )
    assert running.node == "n1" and running.started == 50.0 and running.deletion_timestamp == 70.0
    assert (
        running.terminating and object_key(pod_obj("p1", "x", job="j", node=None, priority=0)) == "default/p1"
    )


def test_jobset_conversion_reads_the_opt_in_shape_and_failure_policy() -> None:
    obj = jobset_obj(
        "low",
        replicas=2,
        ignore_disruptions=True,
        annotations={
            k.LAST_CHECKPOINT_ANNOTATION: "1970-01-01T00:16:40Z",
            k.CHECKPOINT_INTERVAL_ANNOTATION: "3600",
        },
        status={"restarts": 4, "restartsCountTowardsMax": 1},
    )
    js = jobset_from_api(obj)
    assert is_managed(js)
    assert (js.key, js.topology, js.slices, js.accelerator) == ("default/low", "4x4", 2, "tpu-v6e-slice")
    assert (js.max_restarts, js.restarts, js.restart_strategy) == (10, 1, "BlockingRecreate")
    assert js.disruption_ignores_max_restarts
    assert js.last_checkpoint == 1000.0 and js.checkpoint_interval == 3600.0
    assert not jobset_from_api(jobset_obj("plain")).disruption_ignores_max_restarts
    assert not is_managed(jobset_from_api(jobset_obj("x", managed=False)))


def test_seed_style_label_on_pod_template_does_not_opt_in() -> None:
    obj = jobset_obj("seed", managed=False)
    obj["spec"]["replicatedJobs"][0]["template"]["spec"]["template"].setdefault("metadata", {})["labels"] = {
        k.OPT_IN_LABEL: k.OPT_IN_VALUE
    }
    assert not is_managed(jobset_from_api(obj)), "opt-in is a label on the JobSet object itself"


def test_priority_and_run_start_come_from_the_pods() -> None:
    js = jobset_from_api(jobset_obj("high"))
    pods = [
        pod_from_api(pod_obj("a", "high", job="j", node="n1", priority=2_000_000, started=300)),
        pod_from_api(pod_obj("b", "high", job="j", node="n2", priority=2_000_000, started=200)),
        pod_from_api(pod_obj("c", "high", job="j", node="n3", priority=2_000_000, started=100, deletion=400)),
    ]
    full = with_pods(js, pods)
    assert full.priority == 2_000_000
    assert full.running_since == 200.0, "terminating pods of the old run do not count"
    assert with_pods(js, []) == js
    assert parse_time("1970-01-01T00:00:01Z") == 1.0


# --- chip and ICI failure signals -----------------------------------------------------------------
# Chip/ICI failure signals as the adapter reads them: container terminations and TPU allocatable.
#
# Fields as Kubernetes v1 defines them (kubernetes client 37.0.2 ``V1ContainerStateTerminated``:
# ``exitCode``, ``reason``, ``message``, ``finishedAt``; ``V1NodeStatus``: ``capacity``,
# ``allocatable``). A termination message is written by the workload, so every value is bounded.
CHIP = "Detected failure SLICE_FAILURE_CHIP_DRIVER_ERROR in session"


def failed_pod(statuses: list[Any]) -> dict[str, Any]:
    obj = pod_obj("w-0", "train", job="train-slice-0", node="p-n0", priority=100, phase="Failed")
    obj["spec"]["containers"] = [{"name": "trainer", "resources": {"limits": {k.TPU_RESOURCE: "4"}}}]
    obj["status"]["containerStatuses"] = statuses
    return obj


def terminated(code: Any, message: Any = CHIP, *, last: bool = False) -> dict[str, Any]:
    state = {
        "terminated": {
            "exitCode": code,
            "reason": "Error",
            "message": message,
            "finishedAt": "2030-01-01T00:00:05Z",
        }
    }
    return {"name": "trainer", "lastState" if last else "state": state}


def test_a_failed_container_becomes_a_termination_and_a_clean_exit_does_not() -> None:
    pod = pod_from_api(failed_pod([terminated(1), {**terminated(0), "name": "sidecar"}]))
    assert len(pod.terminations) == 1
    t = pod.terminations[0]
    assert (t.container, t.exit_code, t.reason, t.message) == ("trainer", 1, "Error", CHIP)
    assert t.finished is not None and pod.uses_accelerator


def test_a_restarted_container_reports_through_last_state() -> None:
    pod = pod_from_api(failed_pod([terminated(134, last=True)]))
    assert [t.exit_code for t in pod.terminations] == [134]


def test_tpu_capacity_and_allocatable_are_read_bounded() -> None:
    obj = node_obj("p-n0", "p")
    obj["status"]["allocatable"] = {k.TPU_RESOURCE: "2"}
    rec = node_from_api(obj)
    assert rec is not None and (rec.node.tpu_capacity, rec.node.tpu_allocatable) == (4, 2)
    obj["status"]["allocatable"] = {k.TPU_RESOURCE: "1e9"}
    rec = node_from_api(obj)
    assert rec is not None and rec.node.tpu_allocatable is None


junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=50),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(
    statuses=st.lists(
        st.one_of(
            junk,
            st.builds(
                terminated, st.one_of(st.integers(), st.text(max_size=12), junk), st.one_of(st.text(), junk)
            ),
        ),
        max_size=20,
    ),
    huge=st.booleans(),
)
def test_hostile_statuses_never_raise_and_stay_bounded(statuses: list[Any], huge: bool) -> None:
    if huge:
        statuses.append(terminated(1, "x" * 100_000 + CHIP))
    pod = pod_from_api(failed_pod(statuses))
    assert len(pod.terminations) <= MAX_TERMINATIONS
    for t in pod.terminations:
        assert t.exit_code != 0 and -(2**31) <= t.exit_code < 2**31
        assert len(t.message) <= MAX_MESSAGE_CHARS and isinstance(t.reason, str)


# --- GKE maintenance ------------------------------------------------------------------------------
# The adapter's conversion carries GKE's maintenance label and the protocol's JobSet annotations to
# the core unchanged, and the core parses them within bounds (``core/maintenance.py``): API objects in,
# a maintenance move out.
#
# The label's value is Unix epoch seconds (a label value cannot hold RFC 3339's ``:``;
# https://cloud.google.com/kubernetes-engine/docs/how-to/view-maintenance-events).
W = 1_900_000_000
S = Settings()
REQUEST = W - S.maintenance_move_lead_seconds - S.maintenance_checkpoint_seconds


def snapshot(now: float, label: str, annotations: dict[str, str] | None = None) -> Snapshot:
    nodes = []
    for i in range(4):
        obj = node_obj(f"a-{i}", "a", since=0)
        obj["metadata"]["labels"][k.SCHEDULED_MAINTENANCE_LABEL] = label
        nodes.append(obj)
    nodes += [node_obj(f"b-{i}", "b", since=0) for i in range(4)]
    records = [r for r in (node_from_api(n) for n in nodes) if r is not None]
    pods = [
        pod_from_api(pod_obj(f"high-{i}", "high", job="high-slice-0", node=f"a-{i}", priority=2000))
        for i in range(4)
    ]
    js = with_pods(jobset_from_api(jobset_obj("high", annotations=annotations)), pods)
    return Snapshot(
        now=now,
        pools=pools_from_nodes(records),
        nodes=tuple(r.node for r in records),
        jobsets=(js,),
        pods=tuple(pods),
    )


def test_the_label_reaches_the_core_as_epoch_seconds() -> None:
    snap = snapshot(REQUEST + 1, str(W))
    assert {window_start(n) for n in snap.nodes if n.pool == "a"} == {float(W)}
    d = decide(snap)
    (request,) = [a for a in d.actions if isinstance(a, AnnotateJobSet)]
    assert dict(request.annotations)[k.CHECKPOINT_REQUESTED_AT_ANNOTATION] == format_time(REQUEST + 1)


def test_the_workloads_answer_moves_it() -> None:
    asked = {
        k.CHECKPOINT_REQUESTED_AT_ANNOTATION: format_time(REQUEST + 1),
        k.CHECKPOINT_REQUEST_POOLS_ANNOTATION: "a",
    }
    done = {**asked, k.CHECKPOINT_COMPLETED_AT_ANNOTATION: format_time(REQUEST + 30)}
    assert not any(isinstance(a, EvictPod) for a in decide(snapshot(REQUEST + 31, str(W), asked)).actions)
    moved = decide(snapshot(REQUEST + 31, str(W), done))
    assert {a.name for a in moved.actions if isinstance(a, EvictPod)} == {f"high-{i}" for i in range(4)}


@pytest.mark.parametrize("label", ["", "soon", "1e400", "-5", "9" * 70, "2030-03-17T17-46-40Z"])
def test_a_label_that_is_not_a_time_is_no_window(label: str) -> None:
    snap = snapshot(REQUEST + 1, label)
    assert all(window_start(n) is None for n in snap.nodes)
    assert decide(snap).actions == ()


@pytest.mark.parametrize("answer", ["", "x" * 300, "NaN", "2100-01-01T00:00:00Z", format_time(REQUEST - 60)])
def test_a_refused_answer_is_ignored_not_a_rejection(answer: str) -> None:
    """The answer is the workload's to write; a bad one leaves the JobSet managed, waiting for the
    deadline, rather than unmanaged."""
    ann = {
        k.CHECKPOINT_REQUESTED_AT_ANNOTATION: format_time(REQUEST + 1),
        k.CHECKPOINT_REQUEST_POOLS_ANNOTATION: "a",
        k.CHECKPOINT_COMPLETED_AT_ANNOTATION: answer,
    }
    d = decide(snapshot(REQUEST + 31, str(W), ann))
    assert [r for r in d.rejected if not r.value_only] == [], "the JobSet is not left alone"
    # A time beyond now + skew is reported as the one value refused; the others are only notes.
    late = answer == "2100-01-01T00:00:00Z"
    assert [r.reason for r in d.rejected] == (["checkpoint-completed-at"] if late else [])
    assert not any(isinstance(a, EvictPod) for a in d.actions)
