"""One hotswap incident's scene on the live tier: the dev stack installed as planned, the real
controller process running as the plan's ServiceAccount, and one 1-slice JobSet per team placed
(research at high priority, applied at low); and the two predicates every incident test waits on."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from tpu_platform.hotswap.core import constants as k

from . import incidents as inc
from . import workloads as w
from .cluster import LiveCluster
from .hotswap import Controller, start_controller
from .kube import Kube


@dataclass
class Scene:
    live: LiveCluster
    controller: Controller
    broken_pool: str
    spare_pool: str

    @property
    def kube(self) -> Kube:
        return self.live.admin


def hotswap_scene(live: LiveCluster) -> Iterator[Scene]:
    """A fresh dev install with the controller and both teams' JobSets; the controller stopped after."""
    rejected = live.install_planned("dev")
    assert not rejected, rejected
    ctl = start_controller(live)
    teams = inc.two_teams(live.admin, w.tpu_jobset)
    yield Scene(live, ctl, teams.broken_pool, teams.spare_pool)
    ctl.process.stop()
    live.cp.group.processes.remove(ctl.process)


def pool_tainted(kube: Kube, pool: str) -> bool:
    """Every node of ``pool`` carries the controller's unhealthy-pool taint."""
    nodes = inc.pool_nodes(kube, pool)
    return bool(nodes) and all(
        any(t["key"] == k.UNHEALTHY_TAINT_KEY for t in n["spec"].get("taints", [])) for n in nodes
    )


def high_moved(scene: Scene) -> bool:
    """The high-priority JobSet's pods all on the spare slice."""
    pods = inc.high_pods(scene.kube)
    return len(pods) == inc.VMS and w.pools_of(scene.kube, pods) == {scene.spare_pool}
