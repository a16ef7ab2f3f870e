"""Incidents on the real components with the real hotswap controller process (the dev stack's config).

Each test starts from a fresh dev cluster: every object of the plan applied, the controller running
as the plan's ServiceAccount with the plan's RBAC and admission policies, and one 1-slice JobSet per
team within its own quota (research at high priority, applied at low). Then one slice under the
high-priority JobSet has an incident. kube-controller-manager runs at upstream's default
node-lifecycle timings (NotReady after 50 s without a Lease renewal or status update). Each step's
time is read from the API server's objects and printed with the tier's figures.

The dev stack ships Compute Engine corroboration on and no force deletion without it
(``force_delete_unconfirmed: false``): the controller force-deletes a silent node's pods only once
Compute Engine, here the cluster's double, reports the VM not running. A dead host's VM reads
TERMINATED; a restarting kubelet's VM reads RUNNING, and none of its pods may be force-deleted.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.live.cluster import Kube, LiveCluster
from tests.live.cluster import incidents as inc
from tests.live.cluster import workloads as w
from tests.live.cluster.figures import Report
from tests.live.cluster.hotswap import Controller, start_controller
from tpu_platform.hotswap.core import constants as k

POLICY = "hotswap"


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
    teams = inc.two_teams(live.admin, w.tpu_jobset)
    yield Scene(live, ctl, teams.broken_pool, teams.spare_pool)
    ctl.process.stop()
    live.cp.group.processes.remove(ctl.process)


def _pool_tainted(kube: Kube, pool: str) -> bool:
    nodes = inc.pool_nodes(kube, pool)
    return bool(nodes) and all(
        any(t["key"] == k.UNHEALTHY_TAINT_KEY for t in n["spec"].get("taints", [])) for n in nodes
    )


def _high_moved(scene: Scene) -> bool:
    pods = inc.high_pods(scene.kube)
    return len(pods) == inc.VMS and w.pools_of(scene.kube, pods) == {scene.spare_pool}


def test_a_silent_host_death(scene: Scene, report: Report) -> None:
    kube, victim = scene.kube, inc.a_high_node(scene.kube)
    watch = w.Stopwatch()
    inc.silent_host_death(scene.live, victim, watch)
    watch.wait("pool tainted", lambda: _pool_tainted(kube, scene.broken_pool), 120)
    watch.wait("high pods Running on the spare slice", lambda: _high_moved(scene), 240)
    assert w.condition(w.workload_of(kube, inc.HIGH.namespace, inc.HIGH.jobset), "Admitted")
    low = inc.low_pods(kube)
    assert not low or w.pools_of(kube, low) != {scene.spare_pool}, "the low-priority JobSet gave its slice up"
    ctl = scene.controller
    reads = scene.live.compute.reads_of(inc.provider_id(kube, victim))
    assert reads, "the controller never asked Compute Engine about the dead node's VM"
    assert ctl.metric("hotswap_compute_confirmations_total", {"status": "TERMINATED"}) >= 1
    deleted = ctl.metric("hotswap_force_deletions_total")
    assert deleted >= 1, "the dead node's pods were not force-deleted"
    report.incident(
        POLICY,
        "silent host death",
        watch,
        f"moved to the spare slice, the low JobSet preempted; VM read TERMINATED, {deleted:.0f} pod(s) "
        "force-deleted",
    )
    assert ctl.process.running()


def test_a_chip_error_with_the_kubelet_alive(scene: Scene, report: Report) -> None:
    kube = scene.kube
    watch = w.Stopwatch(start=inc.chip_error(kube, inc.high_pods(kube)))
    watch.wait("pool tainted", lambda: _pool_tainted(kube, scene.broken_pool), 120)
    watch.wait("high pods Running on the spare slice", lambda: _high_moved(scene), 240)
    report.incident(POLICY, "chip error", watch, "2 pods report it together; moved to the spare slice")


def test_a_kubelet_restart_of_70_seconds(scene: Scene, report: Report) -> None:
    kube, victim = scene.kube, inc.a_high_node(scene.kube)
    watch = w.Stopwatch()
    watch.observe("pool tainted", lambda: _pool_tainted(kube, scene.broken_pool))
    watch.observe("high pods Running on the spare slice", lambda: _high_moved(scene))
    inc.kubelet_restart(scene.live, victim, 70, watch)
    watch.wait("high pods Running", lambda: len(inc.high_pods(kube)) == inc.VMS, 240)
    moved = _high_moved(scene)
    ctl = scene.controller
    reads = scene.live.compute.reads_of(inc.provider_id(kube, victim))
    assert reads, "the controller never asked Compute Engine about the silent node's VM"
    assert ctl.metric("hotswap_compute_confirmations_total") == 0, "a RUNNING VM confirmed down"
    assert ctl.metric("hotswap_force_deletions_total") == 0, "a pod of a RUNNING VM force-deleted"
    report.incident(
        POLICY,
        "kubelet restart 70 s",
        watch,
        f"JobSet moved: {moved}; VM read RUNNING {len(reads)}x, no pod force-deleted",
    )


def test_a_maintenance_notice(scene: Scene, report: Report) -> None:
    kube = scene.kube
    watch = w.Stopwatch()
    inc.maintenance_notice(kube, scene.broken_pool, 300 + 120)  # inside the request period

    def requested() -> bool:
        js = kube.get(w.JOBSET_API, "JobSet", inc.HIGH.jobset, inc.HIGH.namespace)
        return k.CHECKPOINT_REQUEST_ANNOTATIONS[0] in (js["metadata"].get("annotations") or {})

    watch.wait("checkpoint requested", requested, 60)
    answer = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    kube.patch(
        w.JOBSET_API,
        "JobSet",
        inc.HIGH.jobset,
        {"metadata": {"annotations": {k.CHECKPOINT_COMPLETED_AT_ANNOTATION: answer}}},
        namespace=inc.HIGH.namespace,
    )
    watch.wait("pool tainted", lambda: _pool_tainted(kube, scene.broken_pool), 60)
    watch.wait("high pods Running on the spare slice", lambda: _high_moved(scene), 240)
    report.incident(POLICY, "maintenance notice", watch, "checkpoint answered; moved to the spare slice")
