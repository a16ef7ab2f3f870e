"""``tpu-platform status`` on a fleet's manager: each MultiKueueCluster's connection and the
workloads dispatched to it, against the loopback API double.

Shapes from kueue v0.19.2: MultiKueueCluster ``status.conditions`` of type ``Active`` (reasons such
as ``Active``/``BadKubeConfig`` from ``pkg/controller/admissionchecks/multikueue/multikueuecluster.go``)
and Workload ``status.clusterName`` (``apis/kueue/v1beta2/workload_types.go``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kubeapi import ApiDouble, Fault, Seeder
from tests.kubeapi.objects import ts, workload_obj
from tpu_platform import cli
from tpu_platform.status.fleet import worker_views


def _worker(name: str, active: str, reason: str, message: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "MultiKueueCluster",
        "metadata": {"name": name},
        "spec": {
            "clusterSource": {"kubeConfig": {"locationType": "Secret", "location": f"multikueue-{name}"}}
        },
        "status": {
            "conditions": [
                {
                    "type": "Active",
                    "status": active,
                    "reason": reason,
                    "message": message,
                    "lastTransitionTime": ts(1_700_000_000),
                }
            ]
        },
    }


def _dispatched(name: str, worker: str | None) -> dict[str, Any]:
    wl = workload_obj(name, "training-queue", namespace="training")
    if worker is not None:
        wl["status"]["clusterName"] = worker
    return wl


@pytest.fixture
def manager(tmp_path: Path):
    with ApiDouble() as api:
        seed = Seeder(api)
        seed.kueue("multikueueclusters", _worker("east", "True", "Active", "Connected"))
        seed.kueue(
            "multikueueclusters", _worker("central", "False", "BadKubeConfig", 'key "kubeconfig" not found')
        )
        seed.kueue("workloads", _dispatched("a", "east"))
        seed.kueue("workloads", _dispatched("b", "east"))
        seed.kueue("workloads", _dispatched("c", None))
        yield api, api.kubeconfig(str(tmp_path / "kubeconfig"))


def _json(kubeconfig: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert cli.main(["status", "--kubeconfig", kubeconfig, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_fleet_shows_each_worker_connection_and_its_workloads(manager, capsys) -> None:
    _, kubeconfig = manager
    doc = _json(kubeconfig, capsys)
    assert [(w["name"], w["active"], w["reason"], w["workloads"], w["secret"]) for w in doc["fleet"]] == [
        ("central", False, "BadKubeConfig", 0, "multikueue-central"),
        ("east", True, "Active", 2, "multikueue-east"),
    ]


def test_text_lists_the_workers(manager, capsys) -> None:
    api, kubeconfig = manager
    assert cli.main(["status", "--kubeconfig", kubeconfig]) == 0
    out = capsys.readouterr().out
    assert "fleet workers (MultiKueueClusters on this manager)" in out
    central = next(line for line in out.splitlines() if line.strip().startswith("central"))
    assert "NO" in central and "BadKubeConfig" in central
    assert api.writes() == []


def test_a_single_cluster_has_no_fleet_section(tmp_path: Path, capsys) -> None:
    with ApiDouble() as api:
        doc = _json(api.kubeconfig(str(tmp_path / "kc")), capsys)
    assert doc["fleet"] == [] and not [n for n in doc["notes"] if "multikueue" in n]


def test_no_multikueue_crd_is_no_news(tmp_path: Path, capsys) -> None:
    with ApiDouble() as api:
        api.faults.add(Fault(status=404, resources=("multikueueclusters",), verbs=("list",), times=None))
        doc = _json(api.kubeconfig(str(tmp_path / "kc")), capsys)
    assert doc["fleet"] == [] and not [n for n in doc["notes"] if "multikueue" in n]


def test_a_failing_multikueue_read_fails_the_command(manager, capsys) -> None:
    api, kubeconfig = manager
    api.faults.add(Fault(status=500, resources=("multikueueclusters",), verbs=("list",), times=None))
    assert cli.main(["status", "--kubeconfig", kubeconfig]) == 1
    assert "500" in capsys.readouterr().err


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(
    clusters=st.lists(
        st.fixed_dictionaries(
            {}, optional={"metadata": _json_values, "spec": _json_values, "status": _json_values}
        ),
        max_size=4,
    ),
    workloads=st.lists(st.fixed_dictionaries({}, optional={"status": _json_values}), max_size=4),
)
def test_hostile_objects_still_give_a_picture(
    clusters: list[dict[str, Any]], workloads: list[dict[str, Any]]
) -> None:
    views = worker_views(clusters, workloads)
    assert len(views) == len(clusters)
    for view in views:
        assert view.active in (True, False, None)
        assert view.workloads >= 0
