"""The adapter's conversion carries GKE's maintenance label and the protocol's JobSet annotations to
the core unchanged, and the core parses them within bounds (``core/maintenance.py``): API objects in,
a maintenance move out.

The label's value is Unix epoch seconds (a label value cannot hold RFC 3339's ``:``;
https://cloud.google.com/kubernetes-engine/docs/how-to/view-maintenance-events).
"""

from __future__ import annotations

import pytest

from tests.kubeapi.objects import jobset_obj, node_obj, pod_obj
from tpu_platform.hotswap.adapter.convert import (
    jobset_from_api,
    node_from_api,
    pod_from_api,
    pools_from_nodes,
    with_pods,
)
from tpu_platform.hotswap.core import AnnotateJobSet, EvictPod, Settings, Snapshot, decide
from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.maintenance import window_start
from tpu_platform.hotswap.core.timeutil import format_time

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
