"""Chip/ICI failure signals end to end through the adapter: failed pods with the TPU runtime's slice
failure in their termination message (``status.containerStatuses[].state.terminated``, as the kubelet
writes it) against the API double, read by the real controller."""

from __future__ import annotations

from typing import Any

from tests.hotswap.hotswap_fakes import FakeApi, jobset_obj, node_obj, pod_obj, ts
from tpu_platform.hotswap.adapter.config import Config, RuntimeConfig
from tpu_platform.hotswap.adapter.controller import Controller
from tpu_platform.hotswap.adapter.metrics import Metrics
from tpu_platform.hotswap.core import Settings
from tpu_platform.hotswap.core import constants as k

NOW = 1_000_000.0
HIGH = 2_000_000
CHIP = "E1201 session_master.cc] Detected failure SLICE_FAILURE_CHIP_DRIVER_ERROR in session 6c"


def failed(obj: dict[str, Any], at: float) -> dict[str, Any]:
    obj["status"]["phase"] = "Failed"
    obj["status"]["containerStatuses"] = [
        {
            "name": "jax",
            "state": {
                "terminated": {"exitCode": 1, "reason": "Error", "message": CHIP, "finishedAt": ts(at)}
            },
        }
    ]
    return obj


def cluster(failing: int) -> FakeApi:
    api = FakeApi()
    for pool in ("a", "b"):
        for i in range(4):
            api.add("nodes", node_obj(f"{pool}-{i}", pool, since=NOW - 9000))
    api.add("jobsets", jobset_obj("high"))
    for i in range(4):
        pod = pod_obj(
            f"high-{i}", "high", job="high-slice-0", node=f"a-{i}", priority=HIGH, started=NOW - 3000
        )
        api.add("pods", failed(pod, NOW - 1) if i < failing else pod)
    return api


def run_once(api: FakeApi) -> Controller:
    c = Controller(
        api, Config(Settings(), RuntimeConfig()), identity="hotswap-0", metrics=Metrics(), clock=lambda: NOW
    )
    for cache in c.caches:
        cache.relist()
    c.reconcile_once()
    return c


def test_two_reports_on_one_tenants_slice_declare_it_and_fail_fast_without_force_deletes() -> None:
    api = cluster(failing=2)
    c = run_once(api)
    writes = api.writes()
    patched = {w[1] for w in writes if w[0] == "patch_node"}
    assert patched == {"a-0", "a-1", "a-2", "a-3"}
    assert sorted(w[2] for w in writes if w[0] == "evict_pod") == ["high-2", "high-3"]
    assert not any(w[0] == "delete_pod" for w in writes), "a live kubelet stops its pods"
    node = api.objects["nodes"]["a-0"]
    assert any(t["key"] == k.UNHEALTHY_TAINT_KEY for t in node["spec"]["taints"])
    assert node["metadata"]["annotations"][k.TPU_ERRORS_ANNOTATION].count("/default/") == 2
    assert c.metrics.value("hotswap_chip_signal_detections_total", {"signal": "workload_reports"}) == 1


def test_one_report_is_kept_but_moves_nothing() -> None:
    api = cluster(failing=1)
    c = run_once(api)
    writes = api.writes()
    assert not any(w[0] in ("evict_pod", "delete_pod") for w in writes)
    node = api.objects["nodes"]["a-2"]
    assert not any(t["key"] == k.UNHEALTHY_TAINT_KEY for t in node["spec"]["taints"])
    assert node["metadata"]["annotations"][k.TPU_ERRORS_ANNOTATION].endswith("/default/uid-high-0")
    assert c.metrics.value("hotswap_suspect_pools") == 1
