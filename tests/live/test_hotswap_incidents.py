"""Incidents on the real components with the real hotswap controller process (the dev stack's config).

Each test starts from a fresh dev cluster: every object of the plan applied, the controller running
as the plan's ServiceAccount with the plan's RBAC and admission policies, and one 1-slice JobSet per
team within its own quota (research at high priority, applied at low). Then one slice under the
high-priority JobSet has an incident. kube-controller-manager runs at upstream's default
node-lifecycle timings (NotReady after 50 s without a Lease renewal or status update). Each step's
time is read from the API server's objects and printed with the tier's figures.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.live.cluster import Kube, LiveCluster
from tests.live.cluster import workloads as w
from tests.live.cluster.hotswap import Controller, start_controller
from tpu_platform.hotswap.core import constants as k

CHAOS = "pod-container-running-failed.stage.kwok.x-k8s.io"  # kwok v0.8.0 pod/chaos stage
# kwok's stage writes the message unquoted into YAML, so it holds no ": ".
TPU_ERROR = "SLICE_FAILURE_CHIP_DRIVER_ERROR chip 2 on this host reported an uncorrectable error"


@dataclass
class Scene:
    live: LiveCluster
    controller: Controller
    broken_pool: str
    spare_pool: str

    @property
    def kube(self) -> Kube:
        return self.live.admin


@pytest.fixture
def scene(live: LiveCluster) -> Iterator[Scene]:
    rejected = live.install_planned("dev")
    assert not rejected, rejected
    ctl = start_controller(live)
    kube = live.admin
    kube.create(w.tpu_jobset("high-train", "research", "research-queue", "high-priority-job"))
    w.wait_for("high JobSet Running", lambda: len(w.running_pods(kube, "research", "high-train")) == 4, 120)
    kube.create(w.tpu_jobset("low-train", "applied", "applied-queue", "low-priority-job"))
    w.wait_for("low JobSet Running", lambda: len(w.running_pods(kube, "applied", "low-train")) == 4, 120)
    (broken,) = w.pools_of(kube, w.running_pods(kube, "research", "high-train"))
    (spare,) = w.pools_of(kube, w.running_pods(kube, "applied", "low-train"))
    yield Scene(live, ctl, broken, spare)
    ctl.process.stop()
    live.cp.group.processes.remove(ctl.process)


def _ready(node: dict[str, Any]) -> str:
    conds = node.get("status", {}).get("conditions", [])
    return next((c["status"] for c in conds if c["type"] == "Ready"), "Unknown")


def _pool_nodes(kube: Kube, pool: str) -> list[dict[str, Any]]:
    return kube.list("v1", "Node", selector=f"cloud.google.com/gke-nodepool={pool}")


def _pool_tainted(kube: Kube, pool: str) -> bool:
    nodes = _pool_nodes(kube, pool)
    return bool(nodes) and all(
        any(t["key"] == k.UNHEALTHY_TAINT_KEY for t in n["spec"].get("taints", [])) for n in nodes
    )


def _high_moved(scene: Scene) -> bool:
    pods = w.running_pods(scene.kube, "research", "high-train")
    return len(pods) == 4 and w.pools_of(scene.kube, pods) == {scene.spare_pool}


def _a_high_node(scene: Scene) -> str:
    return str(w.running_pods(scene.kube, "research", "high-train")[0]["spec"]["nodeName"])


def test_a_silent_host_death(scene: Scene, report: list[str]) -> None:
    kube, victim = scene.kube, _a_high_node(scene)
    watch = w.Stopwatch()
    scene.live.silence(victim, True)
    watch.wait("node NotReady", lambda: _ready(kube.get("v1", "Node", victim)) != "True", 120)
    watch.wait("pool tainted", lambda: _pool_tainted(kube, scene.broken_pool), 120)
    watch.wait("high pods Running on the spare slice", lambda: _high_moved(scene), 240)
    assert w.condition(w.workload_of(kube, "research", "high-train"), "Admitted")
    low = w.running_pods(kube, "applied", "low-train")
    assert not low or w.pools_of(kube, low) != {scene.spare_pool}, "the low-priority JobSet gave its slice up"
    report.append(watch.line("hotswap on the real control plane, silent host death"))
    assert scene.controller.process.running()


def test_a_chip_error_with_the_kubelet_alive(scene: Scene, report: list[str]) -> None:
    """The host with the bad chip and the runtime's coordinator both exit with the TPU error.

    They must exit together: the first failure fails its Job (``backoffLimit: 0``) and JobSet
    deletes every Job of the restart within milliseconds, so a pod that fails later is deleted
    first and never reports (seen on the real JobSet v0.12.0: a second report 50 ms later was
    lost about half the time). kwok's chaos Stage fires each pod's failure after the delay its
    annotation names, so each pod's delay is set to fail both at one instant.
    """
    kube = scene.kube
    watch = w.Stopwatch()
    at = time.monotonic() + 2.0
    for pod in w.running_pods(kube, "research", "high-train")[:2]:
        delay = str(max(0, int((at - time.monotonic()) * 1000)))
        annotations = {f"{CHAOS}/message": TPU_ERROR, f"{CHAOS}/delay": delay, f"{CHAOS}/jitter-delay": delay}
        patch = {"metadata": {"labels": {CHAOS: "true"}, "annotations": annotations}}
        kube.patch("v1", "Pod", pod["metadata"]["name"], patch, namespace="research")
    watch.wait("pool tainted", lambda: _pool_tainted(kube, scene.broken_pool), 120)
    watch.wait("high pods Running on the spare slice", lambda: _high_moved(scene), 240)
    report.append(watch.line("hotswap on the real control plane, chip error (2 pods report it together)"))


def test_a_kubelet_restart_of_70_seconds(scene: Scene, report: list[str]) -> None:
    kube, victim = scene.kube, _a_high_node(scene)
    watch = w.Stopwatch()
    scene.live.silence(victim, True)
    watch.wait("node NotReady", lambda: _ready(kube.get("v1", "Node", victim)) != "True", 120)
    time.sleep(max(0.0, 70 - (time.monotonic() - watch.start)))
    scene.live.silence(victim, False)
    watch.wait("node Ready again", lambda: _ready(kube.get("v1", "Node", victim)) == "True", 60)
    watch.wait("high pods Running", lambda: len(w.running_pods(kube, "research", "high-train")) == 4, 240)
    moved = _high_moved(scene)
    report.append(
        watch.line(f"hotswap on the real control plane, 70 s kubelet restart (JobSet moved: {moved})")
    )


def test_a_maintenance_notice(scene: Scene, report: list[str]) -> None:
    kube = scene.kube
    window = int(time.time()) + 300 + 120  # inside the request period: W - lead - checkpoint < now
    watch = w.Stopwatch()
    for node in _pool_nodes(kube, scene.broken_pool):
        kube.patch(
            "v1",
            "Node",
            node["metadata"]["name"],
            {"metadata": {"labels": {"cloud.google.com/scheduled-maintenance-time": str(window)}}},
        )

    def requested() -> bool:
        js = kube.get(w.JOBSET_API, "JobSet", "high-train", "research")
        return k.CHECKPOINT_REQUEST_ANNOTATIONS[0] in (js["metadata"].get("annotations") or {})

    watch.wait("checkpoint requested", requested, 60)
    answer = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    kube.patch(
        w.JOBSET_API,
        "JobSet",
        "high-train",
        {"metadata": {"annotations": {k.CHECKPOINT_COMPLETED_AT_ANNOTATION: answer}}},
        namespace="research",
    )
    watch.wait("pool tainted", lambda: _pool_tainted(kube, scene.broken_pool), 60)
    watch.wait("high pods Running on the spare slice", lambda: _high_moved(scene), 240)
    report.append(watch.line("hotswap on the real control plane, maintenance notice (checkpoint answered)"))
