"""Chip errors and notices on the real components with the real hotswap controller process (the dev
stack's config): a chip error with the kubelet alive, GKE's maintenance notice and a Spot preemption
notice. Silent nodes are in ``test_hotswap_incidents.py`` (the two files run on two workers); the scene
is ``tests/live/cluster/scene.py``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.live.cluster import LiveCluster
from tests.live.cluster import incidents as inc
from tests.live.cluster import workloads as w
from tests.live.cluster.figures import Report
from tests.live.cluster.scene import Scene, high_moved, hotswap_scene, pool_tainted
from tpu_platform.hotswap.core import constants as k

POLICY = "hotswap"


@pytest.fixture
def scene(live: LiveCluster) -> Iterator[Scene]:
    yield from hotswap_scene(live)


def test_a_chip_error_with_the_kubelet_alive(scene: Scene, report: Report) -> None:
    """The device plugin withdraws the broken chip (allocatable below capacity, written through the
    node's status as the kubelet does): a signal no tenant writes, so the high JobSet takes the
    low-priority team's slice."""
    kube = scene.kube
    node = inc.a_high_node(kube)
    watch = w.Stopwatch(start=inc.chip_error(kube, inc.high_pods(kube)))
    inc.withdraw_chips(kube, node, 1)
    watch.wait("pool tainted", lambda: pool_tainted(kube, scene.broken_pool), 120)
    watch.wait("high pods Running on the spare slice", lambda: high_moved(scene), 240)
    declared = [n["metadata"].get("annotations") or {} for n in inc.pool_nodes(kube, scene.broken_pool)]
    assert not any(k.TENANT_DECLARED_ANNOTATION in a for a in declared), "a system signal confirmed it"
    report.incident(
        POLICY, "chip error", watch, "2 pods report it with the chip withdrawn; moved to the spare slice"
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
    watch.wait("pool tainted", lambda: pool_tainted(kube, scene.broken_pool), 60)
    watch.wait("high pods Running on the spare slice", lambda: high_moved(scene), 240)
    report.incident(POLICY, "maintenance notice", watch, "checkpoint answered; moved to the spare slice")


def test_a_spot_notice(scene: Scene, report: Report) -> None:
    """GKE reclaims the slice's Spot VMs: the controller reads the impending-termination taint, not
    NotReady (the VMs stop only 30 s after the notice)."""
    kube = scene.kube
    watch = w.Stopwatch()
    watch.observe("JobSet restarted", lambda: inc.jobset_restarts(kube, inc.HIGH) >= 1)
    watch.observe("pool tainted", lambda: pool_tainted(kube, scene.broken_pool))
    watch.observe("high pods Running on the spare slice", lambda: high_moved(scene))
    inc.spot_notice(scene.live, scene.broken_pool, watch)
    inc.reach(watch, "pool tainted", lambda: pool_tainted(kube, scene.broken_pool), 60)
    inc.reach(watch, "high pods Running on the spare slice", lambda: high_moved(scene), 120)
    assert watch.steps["pool tainted"] < watch.steps["VMs stopped"], "declared only once the VMs stopped"
    reasons = {
        (n["metadata"].get("annotations") or {}).get(k.UNHEALTHY_REASON_ANNOTATION, "")
        for n in inc.pool_nodes(kube, scene.broken_pool)
    }
    assert any(inc.SPOT_TAINT in r for r in reasons), reasons
    low = inc.low_pods(kube)
    assert not low or w.pools_of(kube, low) != {scene.spare_pool}, "the low-priority JobSet gave its slice up"
    report.incident(
        POLICY, "Spot notice", watch, "taint read before the VMs stopped; moved to the spare slice"
    )
