"""``tpu-platform status`` against the loopback API double with a seeded cluster.

The real ``kubernetes`` client talks HTTP to :class:`tests.kubeapi.ApiDouble`; the seeded objects
follow the upstream shapes the model cites (Kueue v0.19.2 v1beta2 ClusterQueue status and the
visibility API's ``PendingWorkloadsSummary``, JobSet v0.12.0 ``status.restarts``, the hotswap
controller's taint and annotations, ``events.k8s.io/v1`` Events).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.kubeapi import ApiDouble, Fault, Seeder
from tests.kubeapi.objects import (
    cluster_queue_obj,
    event_obj,
    jobset_obj,
    lease_obj,
    local_queue_obj,
    node_obj,
    pod_obj,
    ts,
    workload_obj,
)
from tpu_platform import cli
from tpu_platform.hotswap.core import constants as k

NOW = time.time()
TAINT = {"key": k.UNHEALTHY_TAINT_KEY, "value": k.UNHEALTHY_TAINT_VALUE, "effect": k.UNHEALTHY_TAINT_EFFECT}


def _pool(seed: Seeder, pool: str, *, n: int = 4, **kw: Any) -> None:
    ready = kw.pop("ready", ["True"] * n)
    for i in range(n):
        seed.node(node_obj(f"{pool}-{i}", pool, ready=ready[i], since=NOW - 30, **kw))


def _workload(
    name: str, queue: str, *, priority: int, age: float, admitted: bool = False, ns: str = "research"
) -> dict[str, Any]:
    wl = workload_obj(name, queue, namespace=ns, admitted=admitted)
    wl["metadata"]["creationTimestamp"] = ts(round(NOW - age))
    wl["spec"]["priority"] = priority
    if admitted:
        wl["status"]["conditions"].append(
            {
                "type": "QuotaReserved",
                "status": "True",
                "reason": "QuotaReserved",
                "message": "",
                "lastTransitionTime": ts(0),
            }
        )
        wl["status"]["admission"] = {"clusterQueue": "research-cq", "podSetAssignments": []}
    return wl


def seed_cluster(api: ApiDouble) -> None:
    """Seed relative to the wall clock now: the command reads ``time.time()`` as real kubectl would."""
    global NOW  # noqa: PLW0603 - every helper and assertion reads the seeding time
    NOW = time.time()
    seed = Seeder(api)
    _pool(seed, "healthy-pool")
    bad = {
        k.UNHEALTHY_SINCE_ANNOTATION: ts(round(NOW - 300)),
        k.UNHEALTHY_REASON_ANNOTATION: "node bad-pool-2 NotReady",
    }
    _pool(seed, "bad-pool", taints=[TAINT], annotations=bad, ready=["True", "True", "False", "True"])
    healing = {
        **bad,
        k.UNHEALTHY_REASON_ANNOTATION: "maintenance",
        k.CLEAN_SINCE_ANNOTATION: ts(round(NOW - 60)),
    }
    _pool(seed, "healing-pool", taints=[TAINT], annotations=healing)
    _pool(seed, "shaky-pool", ready=["True", "False", "True", "True"])
    cq = cluster_queue_obj("research-cq", "tpu-v6e-4x4", 32, cohort="dev")
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] = 16
    cq["status"] = {
        "admittedWorkloads": 1,
        "pendingWorkloads": 2,
        "reservingWorkloads": 1,
        "flavorsUsage": [
            {"name": "tpu-v6e-4x4", "resources": [{"name": k.TPU_RESOURCE, "total": "48", "borrowed": "16"}]}
        ],
        "flavorsReservation": [
            {"name": "tpu-v6e-4x4", "resources": [{"name": k.TPU_RESOURCE, "total": "48", "borrowed": "16"}]}
        ],
    }
    seed.kueue("clusterqueues", cq)
    seed.kueue("localqueues", local_queue_obj("research", "research-cq", namespace="research"))
    seed.kueue("workloads", _workload("train-big", "research", priority=1000000, age=3600, admitted=True))
    seed.kueue("workloads", _workload("eval-low", "research", priority=1000000, age=900))
    seed.kueue("workloads", _workload("urgent-high", "research", priority=2000000, age=120))
    preempted = {
        k.PREEMPTED_AT_ANNOTATION: ts(round(NOW - 200)),
        k.PREEMPTED_FOR_ANNOTATION: "research/urgent-high",
        k.PREEMPTION_REASON_ANNOTATION: "slice freed for higher priority",
    }
    seed.jobset(jobset_obj("train-big", namespace="research", annotations=preempted, status={"restarts": 3}))
    seed.jobset(jobset_obj("not-managed", namespace="research", managed=False))
    for i in range(4):
        seed.pod(
            pod_obj(
                f"train-big-{i}",
                "train-big",
                job="train-big-slice-0",
                node=f"healthy-pool-{i}",
                priority=1000000,
                namespace="research",
            )
        )
    seed.lease(lease_obj("tpu-hotswap", "tpu-hotswap", "hotswap-abc", NOW - 2, duration=15))
    regarding = {"apiVersion": "v1", "kind": "Node", "name": "bad-pool-0", "uid": "uid-bad-pool-0"}
    ev = event_obj(
        regarding,
        "PoolUnhealthy",
        "pool bad-pool declared unhealthy",
        namespace="tpu-hotswap",
        type_="Warning",
    )
    ev["reportingController"] = "tpu-platform.dev/hotswap"
    ev["eventTime"] = ts(round(NOW - 300))
    seed.event(ev)
    old = dict(ev, eventTime=ts(round(NOW - 7200)), reason="PoolRecovered")
    seed.event(old)
    other = dict(ev, reportingController="someone-else", reason="Other")
    seed.event(other)


@pytest.fixture
def cluster(tmp_path: Path):
    with ApiDouble() as api:
        seed_cluster(api)
        yield api, api.kubeconfig(str(tmp_path / "kubeconfig"))


def _status(kubeconfig: str, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    code = cli.main(["status", "--kubeconfig", kubeconfig, "--format", "json", *extra])
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out)


def test_pools_show_the_controllers_state(cluster, capsys) -> None:
    _, kubeconfig = cluster
    pools = {p["name"]: p for p in _status(kubeconfig, capsys)["pools"]}
    assert set(pools) == {"healthy-pool", "bad-pool", "healing-pool", "shaky-pool"}
    assert pools["healthy-pool"]["state"] == "healthy" and pools["healthy-pool"]["ready"] == 4
    assert pools["healthy-pool"]["expected"] == 4 and pools["healthy-pool"]["topology"] == "4x4"
    assert pools["bad-pool"]["state"] == "unhealthy"
    assert pools["bad-pool"]["reason"] == "node bad-pool-2 NotReady"
    assert pools["bad-pool"]["since"] == pytest.approx(round(NOW - 300))
    assert pools["bad-pool"]["ready"] == 3
    assert pools["healing-pool"]["state"] == "recovering"
    assert pools["healing-pool"]["since"] == pytest.approx(round(NOW - 60))
    assert (
        pools["shaky-pool"]["state"] == "suspect" and "1 node(s) not Ready" in pools["shaky-pool"]["reason"]
    )


def test_queues_from_clusterqueue_status_and_the_visibility_api(cluster, capsys) -> None:
    api, kubeconfig = cluster
    (q,) = _status(kubeconfig, capsys)["queues"]
    assert q["name"] == "research-cq" and q["cohort"] == "dev"
    (f,) = q["flavors"]
    assert (f["nominal"], f["used"], f["borrowed"], f["borrowing_limit"]) == (32, 48, 16, 16)
    assert (q["admitted"], q["pending"], q["pending_source"]) == (1, 2, "visibility")
    # Kueue's queue order: higher priority first, then older first.
    assert [w["name"] for w in q["pending_workloads"]] == ["urgent-high", "eval-low"]
    assert [w["position"] for w in q["pending_workloads"]] == [0, 1]
    assert q["pending_workloads"][0]["priority"] == 2000000
    assert q["pending_workloads"][1]["waiting_seconds"] == pytest.approx(900, abs=30)
    assert [w["name"] for w in q["admitted_workloads"]] == ["train-big"]
    served = [s.request for s in api.served if s.request.group == "visibility.kueue.x-k8s.io"]
    assert served and all(r.verb == "get" for r in served)


def test_pending_falls_back_to_workloads_when_the_visibility_api_fails(cluster, capsys) -> None:
    api, kubeconfig = cluster
    api.faults.add(Fault(status=503, resources=("clusterqueues",), verbs=("get",), times=None))
    doc = _status(kubeconfig, capsys)
    (q,) = doc["queues"]
    assert q["pending_source"] == "workloads"
    assert [w["name"] for w in q["pending_workloads"]] == ["urgent-high", "eval-low"]
    assert any("visibility API unavailable" in n for n in doc["notes"])


def test_managed_jobsets_where_they_run_and_their_last_preemption(cluster, capsys) -> None:
    _, kubeconfig = cluster
    (js,) = _status(kubeconfig, capsys)["jobsets"]
    assert (js["namespace"], js["name"], js["pools"], js["restarts"]) == (
        "research",
        "train-big",
        ["healthy-pool"],
        3,
    )
    assert js["preempted_for"] == "research/urgent-high"
    assert js["last_preemption"] == pytest.approx(round(NOW - 200))
    assert js["preemption_reason"] == "slice freed for higher priority"


def test_controller_leader_and_its_decisions_of_the_last_hour(cluster, capsys) -> None:
    _, kubeconfig = cluster
    c = _status(kubeconfig, capsys)["controller"]
    assert c["leader"] == "hotswap-abc" and c["lease"] == "tpu-hotswap/tpu-hotswap"
    assert c["decisions_last_hour"] == 1 and c["decisions_by_reason"] == {"PoolUnhealthy": 1}
    assert c["recent"][0]["object"] == "bad-pool-0"
    assert c["last_decision"] == pytest.approx(round(NOW - 300))


def test_an_expired_lease_means_no_leader(tmp_path: Path, capsys) -> None:
    with ApiDouble() as api:
        Seeder(api).lease(lease_obj("tpu-hotswap", "tpu-hotswap", "hotswap-old", NOW - 60, duration=15))
        c = _status(api.kubeconfig(str(tmp_path / "kc")), capsys)["controller"]
    assert c["leader"] == "" and c["lease_renewed"] == pytest.approx(NOW - 60, abs=1)


def test_text_output_is_a_table_of_everything(cluster, capsys) -> None:
    _, kubeconfig = cluster
    assert cli.main(["status", "--kubeconfig", kubeconfig]) == 0
    out = capsys.readouterr().out
    for text in (
        "bad-pool",
        "unhealthy",
        "recovering",
        "research-cq",
        "48 / 32",
        "urgent-high",
        "train-big",
        "hotswap-abc",
        "PoolUnhealthy",
    ):
        assert text in out
    assert "someone-else" not in out


def test_only_reads(cluster, capsys) -> None:
    api, kubeconfig = cluster
    _status(kubeconfig, capsys)
    assert api.writes() == []


def test_a_failed_read_exits_1_with_the_reason(cluster, capsys) -> None:
    api, kubeconfig = cluster
    api.faults.add(Fault(status=500, resources=("nodes",), verbs=("list",), times=None))
    assert cli.main(["status", "--kubeconfig", kubeconfig]) == 1
    assert "500" in capsys.readouterr().err


def test_missing_crds_become_notes(tmp_path: Path, capsys) -> None:
    with ApiDouble() as api:
        api.faults.add(
            Fault(
                status=404,
                resources=("clusterqueues", "localqueues", "workloads", "jobsets"),
                verbs=("list",),
                times=None,
            )
        )
        doc = _status(api.kubeconfig(str(tmp_path / "kc")), capsys)
    assert doc["queues"] == [] and any("clusterqueues: not served" in n for n in doc["notes"])


def test_unknown_context_is_a_usage_error(cluster, capsys) -> None:
    _, kubeconfig = cluster
    assert cli.main(["status", "--kubeconfig", kubeconfig, "--context", "nope"]) == 2
    assert "no cluster to read" in capsys.readouterr().err


def test_without_the_client_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    import sys

    for name in [m for m in sys.modules if m == "kubernetes" or m.startswith("kubernetes.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "kubernetes", None)
    assert cli.main(["status"]) == 2
    assert "pip install 'tpu-platform[status]'" in capsys.readouterr().err


def test_each_namespace_shows_the_priorities_it_may_use(cluster, capsys) -> None:
    """From the dev plan's own entitlement policy, as the cluster serves it."""
    import yaml

    from tpu_platform.kueue.entitlements import POLICY_NAME

    api, kubeconfig = cluster
    assert _status(kubeconfig, capsys)["entitlements"] is None
    plan = yaml.safe_load((Path(__file__).resolve().parents[2] / "plans" / "dev.yaml").read_text())
    (policy,) = [
        r["inputs"]
        for r in plan["resources"]
        if r["type"].endswith(":ValidatingAdmissionPolicy") and r["inputs"]["metadata"]["name"] == POLICY_NAME
    ]
    Seeder(api).create("validatingadmissionpolicies", policy)
    assert _status(kubeconfig, capsys)["entitlements"] == [
        {"namespace": "applied", "team": "applied", "priorities": ["low-priority-job"]},
        {
            "namespace": "research",
            "team": "research",
            "priorities": ["low-priority-job", "high-priority-job"],
        },
        {"namespace": "*", "team": None, "priorities": ["low-priority-job"]},
    ]
    assert cli.main(["status", "--kubeconfig", kubeconfig]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.split("priorities each namespace may use")[1].splitlines()[2:]]
    assert rows == [
        ["applied", "applied", "low-priority-job"],
        ["research", "research", "low-priority-job,", "high-priority-job"],
        ["every", "other", "namespace", "-", "low-priority-job"],
    ]
