"""The pure status model under hostile input: hand-edited annotations, odd conditions, stale Leases."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kubeapi.objects import lease_obj, node_obj, ts
from tpu_platform.hotswap.core import constants as k
from tpu_platform.status.model import ClusterObjects, build_status, controller_view, pool_view
from tpu_platform.status.render import render_json, render_text

TAINT = {"key": k.UNHEALTHY_TAINT_KEY, "value": "true", "effect": "NoSchedule"}
texts = st.one_of(st.text(max_size=30), st.just("2026-01-01T00:00:00Z"), st.just("1700000000"))
state_notes = st.dictionaries(st.sampled_from(k.NODE_STATE_ANNOTATIONS), texts, max_size=5)


@settings(max_examples=150, deadline=None)
@given(
    notes=st.lists(state_notes, min_size=1, max_size=4),
    tainted=st.lists(st.booleans(), min_size=1, max_size=4),
    ready=st.lists(st.sampled_from(["True", "False", "Unknown"]), min_size=1, max_size=4),
    topology=st.sampled_from(["4x4", "2x4", "1x1", "9x9", ""]),
)
def test_any_node_state_gives_one_of_four_states(
    notes: list[dict[str, str]], tainted: list[bool], ready: list[str], topology: str
) -> None:
    n = min(len(notes), len(tainted), len(ready))
    nodes = [
        node_obj(
            f"n{i}",
            "p",
            ready=ready[i],
            topology=topology,
            taints=[TAINT] if tainted[i] else [],
            annotations=notes[i],
        )
        for i in range(n)
    ]
    view = pool_view("p", nodes)
    assert view.state in {"healthy", "suspect", "unhealthy", "recovering"}
    if any(tainted[:n]):
        assert view.state in {"unhealthy", "recovering"}
    elif view.state == "healthy":
        assert all(r == "True" for r in ready[:n])
    status = build_status(ClusterObjects(nodes=nodes), 1e9)
    assert render_text(status) and render_json(status)


def test_clean_since_on_a_declared_pool_is_recovering_and_without_the_taint_it_is_not() -> None:
    notes = {k.UNHEALTHY_SINCE_ANNOTATION: ts(100), k.CLEAN_SINCE_ANNOTATION: ts(200)}
    declared = [node_obj("a", "p", topology="1x1", taints=[TAINT], annotations=notes)]
    assert (pool_view("p", declared).state, pool_view("p", declared).since) == ("recovering", 200)
    released = [node_obj("a", "p", topology="1x1", taints=[], annotations=notes)]
    assert pool_view("p", released).state == "healthy"


def test_a_missing_node_makes_a_pool_suspect() -> None:
    view = pool_view("p", [node_obj(f"n{i}", "p") for i in range(3)])
    assert view.state == "suspect" and "3 of 4 nodes present" in view.reason


@given(renew=texts, duration=st.one_of(st.none(), st.integers(-5, 100)))
def test_a_lease_that_cannot_be_read_has_no_leader(renew: str, duration: int | None) -> None:
    lease: dict[str, Any] = lease_obj("l", "ns", "me", 0)
    lease["spec"]["renewTime"] = renew
    lease["spec"]["leaseDurationSeconds"] = duration
    view = controller_view(lease, "ns/l", [], now=4e9)
    assert view.leader == ""


def test_no_lease_no_leader() -> None:
    assert controller_view(None, "ns/l", [], now=1.0).leader == ""


def test_visibility_answer_wins_over_workload_objects() -> None:
    cq = {"metadata": {"name": "cq"}, "spec": {}, "status": {}}
    lq = {"metadata": {"name": "lq", "namespace": "t"}, "spec": {"clusterQueue": "cq"}}
    wl = {
        "metadata": {"name": "from-objects", "namespace": "t", "creationTimestamp": ts(0)},
        "spec": {"queueName": "lq"},
    }
    item = {"metadata": {"name": "from-api", "namespace": "t"}, "priority": 5, "positionInClusterQueue": 0}
    shown = build_status(ClusterObjects(cluster_queues=[cq], local_queues=[lq], workloads=[wl]), 100.0)
    assert [w.name for w in shown.queues[0].pending_workloads] == ["from-objects"]
    assert shown.queues[0].pending_workloads[0].waiting_seconds == 100.0
    shown = build_status(
        ClusterObjects(
            cluster_queues=[cq], local_queues=[lq], workloads=[wl], visible_pending={"cq": [item]}
        ),
        100.0,
    )
    assert [(w.name, w.position) for w in shown.queues[0].pending_workloads] == [("from-api", 0)]
