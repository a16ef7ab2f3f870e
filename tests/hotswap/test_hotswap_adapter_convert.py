"""Raw API objects to core types."""

from __future__ import annotations

from tests.hotswap.hotswap_fakes import jobset_obj, node_obj, pod_obj
from tpu_platform.hotswap.adapter.convert import (
    jobset_from_api,
    node_from_api,
    object_key,
    pod_from_api,
    pools_from_nodes,
    with_pods,
)
from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core import is_managed, parse_time


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
