"""``kueue_tas`` on the real Kueue v0.19.2 at its strongest configuration (``cluster/kueue_tas.py``:
TAS, FailureRecoveryPolicy, 0 s tolerations, 1 s grace), with no hotswap controller.

What Kueue does is read from the objects: the pods' eviction and force deletion, the Workload's
eviction, and whether it is admitted again. Kueue preempts only by queue policy, so a JobSet whose
slice died waits while the other slice holds work within its team's quota. One install serves the
module; ``test_baselines_kueue_tas_mid.py`` runs the silent host death at 30 s tolerations.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.live.cluster import LiveCluster
from tests.live.cluster import incidents as inc
from tests.live.cluster import kueue_tas as tas_setup
from tests.live.cluster import workloads as w
from tests.live.cluster.figures import Report

POLICY = "kueue_tas"
jobset = tas_setup.jobsets(tas_setup.STRONGEST_S)


@pytest.fixture(scope="module")
def tas(live: LiveCluster) -> Iterator[LiveCluster]:
    tas_setup.install(live)
    yield live


def test_kueue_tas_silent_host_death(tas: LiveCluster, report: Report) -> None:
    inc.fresh_teams(tas, jobset)
    tas_setup.silent_host_death_waits(tas, report, POLICY)


def test_kueue_tas_chip_error(tas: LiveCluster, report: Report) -> None:
    kube = tas.admin
    teams = inc.fresh_teams(tas, jobset)
    watch = inc.chip_error_restarts_in_place(kube, teams)
    report.incident(
        POLICY, "chip error", watch, "a Ready, untainted node is healthy to TAS: restarted in place"
    )


def test_kueue_tas_kubelet_restart_of_70_seconds(tas: LiveCluster, report: Report) -> None:
    kube = tas.admin
    teams = inc.fresh_teams(tas, jobset)
    victim = inc.a_high_node(kube)
    before = inc.uids(inc.high_pods(kube))
    watch = w.Stopwatch()
    watch.observe("Workload evicted", lambda: w.condition(tas_setup.high_workload(kube), "Evicted"))
    watch.observe("JobSet restarted", lambda: inc.jobset_restarts(kube, inc.HIGH) >= 1)
    inc.kubelet_silence(tas, victim, watch)
    watch.wait(
        "pod on the node evicted",
        lambda: all(p["metadata"].get("deletionTimestamp") for p in tas_setup.high_pods_on(kube, victim)),
        60,
    )
    inc.back_after(tas, victim, 70, watch)
    watch.wait("high pods Running again", inc.high_running_again(kube, before), 240)
    pools = w.pools_of(kube, inc.high_pods(kube))
    report.incident(
        POLICY,
        "kubelet restart 70 s",
        watch,
        f"evicted at once, restarted on {'the same' if pools == {teams.broken_pool} else 'another'} slice",
    )


def test_kueue_tas_maintenance_notice(tas: LiveCluster, report: Report) -> None:
    kube = tas.admin
    teams = inc.fresh_teams(tas, jobset)
    before = inc.uids(inc.high_pods(kube))
    watch = w.Stopwatch()
    inc.maintenance_notice(kube, teams.broken_pool, 300 + 120)
    inc.hold(watch, "30 s later", 30)
    assert inc.uids(inc.high_pods(kube)) == before, "something acted on the notice"
    assert w.condition(tas_setup.high_workload(kube), "Admitted")
    report.incident(
        POLICY, "maintenance notice", watch, "Kueue does not read it: the slice goes down at the window"
    )


def test_kueue_tas_spot_notice(tas: LiveCluster, report: Report) -> None:
    """The slice's Spot VMs reclaimed: TAS fails the tainted nodes once their pods have ended and
    evicts the Workload, which then waits, the tainted slice excluded and the other one full, until
    the VMs stop (``test_recipe_spot_notice`` times the NotReady that follows)."""
    kube = tas.admin
    teams = inc.fresh_teams(tas, jobset)

    def evicted() -> bool:
        return w.condition(tas_setup.high_workload(kube), "Evicted")

    watch = w.Stopwatch()
    watch.observe("JobSet restarted", lambda: inc.jobset_restarts(kube, inc.HIGH) >= 1)
    watch.observe("Workload evicted", evicted)
    inc.spot_notice(tas, teams.broken_pool, watch)
    inc.reach(watch, "Workload evicted", evicted, 30)
    assert not w.condition(tas_setup.high_workload(kube), "Admitted"), "Kueue re-admitted it"
    assert not inc.high_pods(kube), "the high-priority JobSet runs"
    assert len(inc.low_pods(kube)) == inc.VMS, "the low-priority JobSet kept its slice"
    report.incident(POLICY, "Spot notice", watch, "evicted once its pods ended; waits, the other slice full")
