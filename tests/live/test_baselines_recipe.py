"""The guide's recipe on the real components: the dev stack as planned, and no hotswap controller.

The pods keep the 300 s tolerations of the not-ready and unreachable taints that the
DefaultTolerationSeconds admission plugin adds, JobSet restarts a failed JobSet in place, and
nothing reads GKE's maintenance notice. One install serves the module; each test heals the nodes
and places both teams' JobSets again (``incidents.fresh_teams``).

What happens after the first minutes of a silent host death (the taint manager deletes the pods
after 300 s; they stay Terminating on a node without a kubelet until GKE repairs the slice) needs
GKE's node repair, which is not part of this tier.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

import pytest

from tests.live.cluster import LiveCluster
from tests.live.cluster import incidents as inc
from tests.live.cluster import workloads as w
from tests.live.cluster.figures import Report
from tpu_platform.hotswap.core import constants as k

POLICY = "recipe"
WATCH_S = 60.0
jobset = partial(w.tpu_jobset, hotswap=False)


@pytest.fixture(scope="module")
def recipe(live: LiveCluster) -> Iterator[LiveCluster]:
    rejected = live.install_planned("dev")
    assert not rejected, rejected
    yield live


@pytest.fixture
def teams(recipe: LiveCluster) -> inc.TwoTeams:
    return inc.fresh_teams(recipe, jobset)


def test_the_pods_tolerate_an_unreachable_node_for_300_s(recipe: LiveCluster, teams: inc.TwoTeams) -> None:
    pod = inc.high_pods(recipe.admin)[0]
    tolerations = {t.get("key"): t.get("tolerationSeconds") for t in pod["spec"].get("tolerations", [])}
    assert tolerations.get("node.kubernetes.io/unreachable") == 300, tolerations
    assert tolerations.get("node.kubernetes.io/not-ready") == 300, tolerations


def test_recipe_silent_host_death(recipe: LiveCluster, teams: inc.TwoTeams, report: Report) -> None:
    kube, victim = recipe.admin, inc.a_high_node(recipe.admin)
    watch = w.Stopwatch()
    inc.silent_host_death(recipe, victim, watch)
    inc.hold(watch, f"{WATCH_S:.0f} s later", WATCH_S, since="node NotReady")
    on_dead = [
        p for p in w.pods_of(kube, inc.HIGH.namespace, inc.HIGH.jobset) if p["spec"].get("nodeName") == victim
    ]
    assert on_dead and not any(p["metadata"].get("deletionTimestamp") for p in on_dead), "still tolerated"
    assert w.pools_of(kube, inc.high_pods(kube)) == {teams.broken_pool}, "the recipe moved the JobSet"
    report.incident(POLICY, "silent host death", watch, "pods tolerate 300 s: nothing moved")


def test_recipe_chip_error(recipe: LiveCluster, teams: inc.TwoTeams, report: Report) -> None:
    kube = recipe.admin
    watch = inc.chip_error_restarts_in_place(kube, teams)
    report.incident(POLICY, "chip error", watch, "restarted in place, on the slice with the bad chip")


def test_recipe_kubelet_restart_of_70_seconds(
    recipe: LiveCluster, teams: inc.TwoTeams, report: Report
) -> None:
    kube, victim = recipe.admin, inc.a_high_node(recipe.admin)
    before = inc.uids(inc.high_pods(kube))
    watch = w.Stopwatch()
    inc.kubelet_restart(recipe, victim, 70, watch)
    inc.hold(watch, "10 s later", 10, since="node Ready again")
    assert inc.uids(inc.high_pods(kube)) == before, "the recipe restarted pods"
    assert inc.jobset_restarts(kube, inc.HIGH) == 0
    report.incident(POLICY, "kubelet restart 70 s", watch, "the same pods ran through it")


def test_recipe_maintenance_notice(recipe: LiveCluster, teams: inc.TwoTeams, report: Report) -> None:
    kube = recipe.admin
    before = inc.uids(inc.high_pods(kube))
    watch = w.Stopwatch()
    inc.maintenance_notice(kube, teams.broken_pool, 300 + 120)
    inc.hold(watch, "30 s later", 30)
    js = kube.get(w.JOBSET_API, "JobSet", inc.HIGH.jobset, inc.HIGH.namespace)
    annotations = js["metadata"].get("annotations") or {}
    assert not set(k.CHECKPOINT_REQUEST_ANNOTATIONS) & set(annotations), annotations
    assert inc.uids(inc.high_pods(kube)) == before, "something acted on the notice"
    report.incident(
        POLICY, "maintenance notice", watch, "nothing reads it: the slice goes down at the window"
    )


def test_recipe_spot_notice(recipe: LiveCluster, teams: inc.TwoTeams, report: Report) -> None:
    """The slice's Spot VMs reclaimed: JobSet restarts the failed JobSet, and kube-scheduler preempts
    the low-priority JobSet's pods for it (JobSet's exclusive anti-affinity only keeps out Jobs of
    the same priority, ``pkg/webhooks/pod_webhook.go``, ``setExclusiveAffinities``)."""
    kube, victim = recipe.admin, inc.a_high_node(recipe.admin)
    watch = w.Stopwatch()
    watch.observe("JobSet restarted", lambda: inc.jobset_restarts(kube, inc.HIGH) >= 1)
    on_spare = partial(inc.high_running_on, kube, teams.spare_pool)
    watch.observe("high pods Running on the spare slice", on_spare)
    inc.spot_notice(recipe, teams.broken_pool, watch)
    inc.reach(watch, "JobSet restarted", lambda: inc.jobset_restarts(kube, inc.HIGH) >= 1, 30)
    inc.reach(watch, "high pods Running on the spare slice", on_spare, 60)
    watch.wait("node NotReady", lambda: inc.ready(kube, victim) != "True", 90)
    assert on_spare(), "the high-priority JobSet left the spare slice"
    assert not inc.low_pods(kube), "the low-priority JobSet still runs"
    assert inc.jobset_restarts(kube, inc.HIGH) == 1
    report.incident(
        POLICY, "Spot notice", watch, "kube-scheduler preempts the low JobSet: moved to the spare slice"
    )
