"""Silent nodes on the real components with the real hotswap controller process (the dev stack's
config): a host death, a kubelet restart and a hung guest. Chip errors and notices are in
``test_hotswap_notices.py`` (the two files run on two workers); the scene is
``tests/live/cluster/scene.py``.

Each test starts from a fresh dev cluster: every object of the plan applied, the controller running
as the plan's ServiceAccount with the plan's RBAC and admission policies, and one 1-slice JobSet per
team within its own quota (research at high priority, applied at low). Then one slice under the
high-priority JobSet has an incident. kube-controller-manager runs at upstream's default
node-lifecycle timings (NotReady after 50 s without a Lease renewal or status update). Each step's
time is read from the API server's objects and printed with the tier's figures.

The dev stack ships Compute Engine corroboration on, no force deletion without it
(``force_delete_unconfirmed: false``) and the fence (``reset_silent_vms``): the controller
force-deletes a silent node's pods only once Compute Engine, here the cluster's double, reports the
VM not running, or reports done the reset the controller sent it once the pool was declared. A dead
host's VM reads TERMINATED; a restarting kubelet's or a hung guest's VM reads RUNNING, and none of its
pods may be force-deleted before its reset is done.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.live.cluster import LiveCluster
from tests.live.cluster import incidents as inc
from tests.live.cluster import workloads as w
from tests.live.cluster.figures import Report
from tests.live.cluster.scene import Scene, high_moved, hotswap_scene, pool_tainted
from tpu_platform.hotswap.adapter.compute_engine import parse_provider_id

POLICY = "hotswap"


@pytest.fixture
def scene(live: LiveCluster) -> Iterator[Scene]:
    yield from hotswap_scene(live)


def test_a_silent_host_death(scene: Scene, report: Report) -> None:
    kube, victim = scene.kube, inc.a_high_node(scene.kube)
    watch = w.Stopwatch()
    inc.silent_host_death(scene.live, victim, watch)
    watch.wait("pool tainted", lambda: pool_tainted(kube, scene.broken_pool), 120)
    watch.wait("high pods Running on the spare slice", lambda: high_moved(scene), 240)
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


def test_a_kubelet_restart_of_70_seconds(scene: Scene, report: Report) -> None:
    """Silent past the pool's declaration on a VM read RUNNING: no pod is force-deleted on that answer;
    if the declaration comes before the kubelet does, the fence resets the VM and the pod goes only
    once the reset is done (the kubelet then returns after the reboot)."""
    kube, victim = scene.kube, inc.a_high_node(scene.kube)
    vm = inc.provider_id(kube, victim)
    watch = w.Stopwatch()
    watch.observe("pool tainted", lambda: pool_tainted(kube, scene.broken_pool))
    watch.observe("high pods Running on the spare slice", lambda: high_moved(scene))
    watch.observe("VM reset", lambda: bool(scene.live.compute.resets_of(vm)))
    inc.kubelet_restart(scene.live, victim, 70, watch)
    watch.wait("high pods Running", lambda: len(inc.high_pods(kube)) == inc.VMS, 240)
    moved = high_moved(scene)
    ctl = scene.controller
    reads = scene.live.compute.reads_of(vm)
    resets = scene.live.compute.resets_of(vm)
    assert reads, "the controller never asked Compute Engine about the silent node's VM"
    assert len(resets) <= 1, "one reset per suspicion"
    confirmed = ctl.metric("hotswap_compute_confirmations_total")
    assert confirmed == ctl.metric("hotswap_compute_confirmations_total", {"status": "RESET"}), (
        "a RUNNING VM confirmed down by its status"
    )
    forced = ctl.metric("hotswap_force_deletions_total")
    assert forced == (1 if resets and confirmed else 0), "a pod force-deleted without a done reset"
    report.incident(
        POLICY,
        "kubelet restart 70 s",
        watch,
        f"JobSet moved: {moved}; VM read RUNNING {len(reads)}x, reset {len(resets)}x, "
        f"{forced:.0f} pod force-deleted",
    )


def test_a_hung_guest(scene: Scene, report: Report) -> None:
    """The kubelet falls silent on a VM Compute Engine keeps reading RUNNING (a hung guest): nothing
    confirms it down, so the fence resets the VM once the pool is declared, and the pod is force-deleted
    when the reset is done instead of waiting for GKE's repair."""
    kube, victim = scene.kube, inc.a_high_node(scene.kube)
    vm = inc.provider_id(kube, victim)
    watch = w.Stopwatch()

    def reset() -> bool:
        return bool(scene.live.compute.resets_of(vm))

    def cleared() -> bool:
        return not inc.high_pods_on(kube, victim)

    watch.observe("pool tainted", lambda: pool_tainted(kube, scene.broken_pool))
    watch.observe("VM reset", reset)
    watch.observe("pod on the dead node force-deleted", cleared)
    inc.kubelet_silence(scene.live, victim, watch)
    inc.reach(watch, "pool tainted", lambda: pool_tainted(kube, scene.broken_pool), 60)
    inc.reach(watch, "VM reset", reset, 60)
    inc.reach(watch, "pod on the dead node force-deleted", cleared, 60)
    watch.wait("high pods Running on the spare slice", lambda: high_moved(scene), 240)
    # Observed steps are sampled one after another in each poll, so a later step may be seen a poll
    # (well under a second) before an earlier one; the order itself is what the metrics below show.
    steps = watch.steps
    assert steps["pool tainted"] <= steps["VM reset"] + 1.0
    assert steps["VM reset"] <= steps["pod on the dead node force-deleted"] + 1.0
    ctl = scene.controller
    ref = parse_provider_id(vm)
    assert ref is not None and scene.live.compute.status(ref) == "RUNNING", "a reset leaves the VM running"
    assert len(scene.live.compute.resets_of(vm)) == 1, "one reset per suspicion"
    assert ctl.metric("hotswap_compute_confirmations_total", {"status": "RESET"}) == 1
    assert ctl.metric("hotswap_force_deletions_total") == 1
    report.incident(
        POLICY, "hung guest", watch, "VM reset once declared; pod cleared when the reset was done"
    )
