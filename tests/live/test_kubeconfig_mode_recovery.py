"""A silent host death under ``cluster.mode: kubeconfig`` with a named Google identity recovers as
under the GKE mode, on the same harness: the same TPU node pools as kwok nodes, the same Compute
Engine double behind them (its metadata server mints the token Workload Identity would), the same
incident (``incidents.silent_host_death``) and the same measurement.

The GKE mode is the dev stack as planned (``scene.hotswap_scene``). The kubeconfig mode is the
``local`` stack with ``hotswap.computeCorroboration: true`` and ``hotswap.googleIdentity`` (``manage:
false``: the plan holds no Google resource, the ``gcloud`` commands grant the access), rendered by
``tpu-platform plan`` as a user's stack would be; its controller runs as that plan renders it (its
ConfigMap, its annotated ServiceAccount, its RBAC and admission policies). A kubeconfig-mode plan
registers no node pool (``slicePools`` describe the cluster's own), so the dev plan's pools of the
same names and shapes stand for the GKE cluster's. Each test prints its recovery; the second prints
both modes' beside each other and holds the kubeconfig mode to the GKE mode's and well under the
recipe's, whose pods tolerate the dead node for 300 s and then wait for GKE's repair.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.live.cluster import LiveCluster
from tests.live.cluster import incidents as inc
from tests.live.cluster import workloads as w
from tests.live.cluster.engine_stack import offline_plan
from tests.live.cluster.figures import Report
from tests.live.cluster.hotswap import start_controller
from tests.live.cluster.rendered import load_plan
from tests.live.cluster.scene import Scene, high_moved, hotswap_scene, pool_tainted
from tpu_platform.hotswap import iam
from tpu_platform.plan import parse_stack_config

POLICY = "hotswap"
REPO = Path(__file__).resolve().parents[2]
EMAIL = "tpu-local-hotswap@my-tpu-project-dev.iam.gserviceaccount.com"
NODE_POOL = "gcp:container/nodePool:NodePool"
RECOVERED = "high pods Running on the spare slice"
RECIPE_TOLERATION_S = 300.0
"""The recipe's pods stay bound to the dead node this long (DefaultTolerationSeconds), then wait for
GKE's repair (``test_baselines_recipe.py``): its recovery is longer than this."""
SAME_AS_GKE_S = 30.0
"""How far apart the two modes' recoveries may be: a few of the controller's reconcile and Compute
Engine read intervals, well under any difference a missing corroboration would make."""
MTTR: dict[str, float] = {}


def kubeconfig_config() -> dict[str, Any]:
    """The local stack with Compute Engine corroboration through a named identity."""
    config = yaml.safe_load((REPO / "stacks" / "Pulumi.local.yaml").read_text())["config"]
    hotswap = config["tpu-platform:hotswap"]
    hotswap["computeCorroboration"] = True
    hotswap["googleIdentity"] = {"serviceAccount": EMAIL, "manage": False}
    return dict(config)


def on_the_clusters_pools(
    config: dict[str, Any], plan: dict[str, Any], gke: dict[str, Any]
) -> dict[str, Any]:
    """``plan`` with the TPU node pools its cluster already has: the GKE plan's pools of the names the
    stack's ``slicePools`` describe, bound to the plan's Kubernetes provider as the harness places
    pools (by the cluster the provider depends on)."""
    names = {name for pool in parse_stack_config(config).slice_pools for name in pool.pool_names()}
    pools = [r for r in gke["resources"] if r["type"] == NODE_POOL and r["inputs"]["name"] in names]
    assert {p["inputs"]["name"] for p in pools} == names, "the dev plan's pools are the local stack's"
    clusters = sorted({d for p in pools for d in p["dependsOn"] if d.startswith("gcp:container/cluster:")})
    resources = copy.deepcopy(plan["resources"])
    for resource in resources:
        if resource["type"] == "pulumi:providers:kubernetes":
            resource["dependsOn"] = [*(resource.get("dependsOn") or []), *clusters]
    return {**plan, "resources": [*resources, *copy.deepcopy(pools)]}


@pytest.fixture
def gke_scene(live: LiveCluster) -> Iterator[Scene]:
    yield from hotswap_scene(live)


@pytest.fixture
def kubeconfig_scene(live: LiveCluster, tmp_path: Path) -> Iterator[Scene]:
    config = kubeconfig_config()
    plan = on_the_clusters_pools(config, offline_plan(tmp_path, config), load_plan("dev"))
    rejected = live.install_planned("local-googleidentity", plan=plan)
    assert not rejected, rejected
    ctl = start_controller(live)
    teams = inc.two_teams(live.admin, w.tpu_jobset)
    yield Scene(live, ctl, teams.broken_pool, teams.spare_pool)
    ctl.process.stop()
    live.cp.group.processes.remove(ctl.process)


def silent_host_death(scene: Scene, report: Report, mode: str) -> float:
    """The incident and its recovery, as ``test_hotswap_incidents.py`` runs it: seconds from the VM's
    death until the high-priority JobSet's pods all run on the spare slice."""
    kube, victim = scene.kube, inc.a_high_node(scene.kube)
    watch = w.Stopwatch()
    inc.silent_host_death(scene.live, victim, watch)
    watch.wait("pool tainted", lambda: pool_tainted(kube, scene.broken_pool), 120)
    watch.wait(RECOVERED, lambda: high_moved(scene), 240)
    ctl = scene.controller
    assert scene.live.compute.reads_of(inc.provider_id(kube, victim)), "no Compute Engine read of the VM"
    assert ctl.metric("hotswap_compute_confirmations_total", {"status": "TERMINATED"}) >= 1
    deleted = ctl.metric("hotswap_force_deletions_total")
    assert deleted >= 1, "the dead node's pods were not force-deleted"
    report.incident(
        POLICY,
        f"silent host death, {mode}",
        watch,
        f"VM read TERMINATED, {deleted:.0f} pod(s) force-deleted",
    )
    assert ctl.process.running()
    return watch.steps[RECOVERED]


def test_gke_mode(gke_scene: Scene, report: Report) -> None:
    MTTR["gke"] = silent_host_death(gke_scene, report, "GKE mode (dev)")


def test_kubeconfig_mode_with_a_google_identity(kubeconfig_scene: Scene, report: Report) -> None:
    plan = kubeconfig_scene.live.current
    assert plan is not None
    assert not [r for r in plan.plan["resources"] if r["type"].startswith("gcp:") and r["type"] != NODE_POOL]
    (account,) = [
        o
        for o in plan.applied
        if o["kind"] == "ServiceAccount" and o["metadata"]["name"] == iam.CONTROLLER_KSA
    ]
    assert account["metadata"]["annotations"] == {iam.GSA_ANNOTATION: EMAIL}
    mttr = silent_host_death(kubeconfig_scene, report, "kubeconfig mode (local + googleIdentity)")
    gke = MTTR.get("gke")
    report.append(
        f"silent host death, high-priority JobSet Running again: kubeconfig mode {mttr:.1f} s, GKE mode "
        + (f"{gke:.1f} s" if gke is not None else "not run in this session")
        + f"; the recipe's pods tolerate the dead node {RECIPE_TOLERATION_S:.0f} s, then wait for repair"
    )
    assert mttr < RECIPE_TOLERATION_S / 2, "well under the recipe's: no wait for GKE's repair"
    if gke is not None:
        assert abs(mttr - gke) <= SAME_AS_GKE_S, (mttr, gke)
