"""The incidents the live tier scripts, written once so every policy meets exactly the same one.

Each test of ``tests/live/test_hotswap_incidents.py`` and ``tests/live/test_baselines_*.py`` starts
from two teams' 1-slice JobSets Running (``two_teams``), then one incident hits the slice under the
high-priority JobSet:

- *silent host death*: kwok stops the node's Lease and status (``LiveCluster.silence``), as a VM
  that dies without a word, and Compute Engine (the double) reports the VM TERMINATED;
- *kubelet restart*: the same silence for a set time, then the heartbeats again, the VM RUNNING
  throughout;
- *chip error*: two of the slice's pods (the host with the bad chip and the runtime's coordinator)
  exit with the TPU runtime's error in their termination message, through kwok's own chaos Stage;
- *maintenance notice*: GKE's ``cloud.google.com/scheduled-maintenance-time`` label on every node
  of the slice (`../shared/reference/tpu-v6e-and-gke.md`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from . import workloads as w
from .cluster import LiveCluster
from .kube import Kube
from .nodes import KWOK_ANNOTATION, MANAGED

CHAOS = "pod-container-running-failed.stage.kwok.x-k8s.io"  # kwok v0.8.0 pod/chaos stage
# kwok's stage writes the message unquoted into YAML, so it holds no ": ".
TPU_ERROR = "SLICE_FAILURE_CHIP_DRIVER_ERROR chip 2 on this host reported an uncorrectable error"
MAINTENANCE_LABEL = "cloud.google.com/scheduled-maintenance-time"
VMS = 4


@dataclass(frozen=True)
class Team:
    """One team's JobSet: where it is submitted and at which priority."""

    namespace: str
    jobset: str
    queue: str
    priority: str

    def args(self) -> tuple[str, str, str, str]:
        """``(name, namespace, queue, priority)``: the arguments of a JobSet factory."""
        return (self.jobset, self.namespace, self.queue, self.priority)


JobSetFactory = Callable[[str, str, str, str], dict[str, Any]]
HIGH = Team("research", "high-train", "research-queue", "high-priority-job")
LOW = Team("applied", "low-train", "applied-queue", "low-priority-job")


@dataclass(frozen=True)
class TwoTeams:
    """Where the two JobSets run once both are placed: the slice to break and the other one."""

    broken_pool: str
    spare_pool: str


def ready(kube: Kube, node: str) -> str:
    conds = kube.get("v1", "Node", node).get("status", {}).get("conditions", [])
    return next((c["status"] for c in conds if c["type"] == "Ready"), "Unknown")


def pool_nodes(kube: Kube, pool: str) -> list[dict[str, Any]]:
    return kube.list("v1", "Node", selector=f"cloud.google.com/gke-nodepool={pool}")


def high_pods(kube: Kube) -> list[dict[str, Any]]:
    return w.running_pods(kube, HIGH.namespace, HIGH.jobset)


def low_pods(kube: Kube) -> list[dict[str, Any]]:
    return w.running_pods(kube, LOW.namespace, LOW.jobset)


def a_high_node(kube: Kube) -> str:
    return str(high_pods(kube)[0]["spec"]["nodeName"])


def two_teams(kube: Kube, jobset: JobSetFactory) -> TwoTeams:
    """research's high-priority JobSet and applied's low-priority one, each on one slice.

    Both are submitted at once: each fits its own team's quota, so Kueue admits both whatever the
    order, and exclusive placement gives each a slice of its own.
    """
    kube.create(jobset(*HIGH.args()))
    kube.create(jobset(*LOW.args()))
    w.wait_for(
        "both JobSets Running", lambda: len(high_pods(kube)) == VMS and len(low_pods(kube)) == VMS, 120
    )
    (broken,) = w.pools_of(kube, high_pods(kube))
    (spare,) = w.pools_of(kube, low_pods(kube))
    return TwoTeams(broken, spare)


def provider_id(kube: Kube, node: str) -> str:
    """The node's ``spec.providerID``: the VM behind it, ``gce://PROJECT/ZONE/INSTANCE``."""
    return str(kube.get("v1", "Node", node)["spec"]["providerID"])


def kubelet_silence(live: LiveCluster, node: str, watch: w.Stopwatch) -> None:
    """No more Lease renewals or status from the node, until it is NotReady; its VM keeps running."""
    live.silence(node, True)
    watch.wait("node NotReady", lambda: ready(live.admin, node) != "True", 120)


def silent_host_death(live: LiveCluster, node: str, watch: w.Stopwatch, status_lag_s: float = 0.0) -> None:
    """The VM stops (TERMINATED in Compute Engine ``status_lag_s`` later) and its kubelet with it."""
    live.compute.set_status(provider_id(live.admin, node), "TERMINATED", lag_s=status_lag_s)
    kubelet_silence(live, node, watch)


def kubelet_restart(live: LiveCluster, node: str, seconds: float, watch: w.Stopwatch) -> None:
    """Silent for ``seconds`` from the watch's start, then heartbeats again until the node is Ready."""
    kubelet_silence(live, node, watch)
    back_after(live, node, seconds, watch)


def back_after(live: LiveCluster, node: str, seconds: float, watch: w.Stopwatch) -> None:
    """The silent node's kubelet back ``seconds`` after the watch's start; until the node is Ready."""
    watch.until(seconds)
    live.silence(node, False)
    watch.wait("node Ready again", lambda: ready(live.admin, node) == "True", 60)


def chip_error(kube: Kube, pods: list[dict[str, Any]]) -> float:
    """Two pods exit with the TPU error at one instant, 2 s from now; returns that instant
    (``time.monotonic()``), the incident's start.

    They must exit together: the first failure fails its Job (``backoffLimit: 0``) and JobSet
    deletes every Job of the restart within milliseconds, so a pod that fails later is deleted
    first and never reports (seen on the real JobSet v0.12.0). kwok's chaos Stage delays each
    pod's failure by what its delay annotation names: an RFC 3339 time (then until that time) or a
    Go duration, anything else falling back to the Stage's 1000 ms (kwok v0.8.0
    ``pkg/utils/lifecycle/value_duration_from.go``, ``durationFrom.Get``). Both pods get the same
    absolute time.
    """
    lead = 2.0
    at = time.monotonic() + lead
    stamp = datetime.fromtimestamp(time.time() + lead, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    for pod in pods[:2]:
        annotations = {f"{CHAOS}/message": TPU_ERROR, f"{CHAOS}/delay": stamp, f"{CHAOS}/jitter-delay": stamp}
        patch = {"metadata": {"labels": {CHAOS: "true"}, "annotations": annotations}}
        kube.patch("v1", "Pod", pod["metadata"]["name"], patch, namespace=pod["metadata"]["namespace"])
    return at


def maintenance_notice(kube: Kube, pool: str, lead_s: int) -> int:
    """GKE's notice on every node of ``pool``: maintenance starts ``lead_s`` from now (epoch s)."""
    window = int(time.time()) + lead_s
    for node in pool_nodes(kube, pool):
        kube.patch(
            "v1", "Node", node["metadata"]["name"], {"metadata": {"labels": {MAINTENANCE_LABEL: str(window)}}}
        )
    return window


def heal(live: LiveCluster) -> None:
    """Every installed node managed by kwok again, its VM RUNNING (a dead one repaired), without a
    maintenance notice; until all are Ready."""
    installed = live.current
    assert installed is not None, "install a stack first"
    names = [n for p in installed.pools for n in p.node_names()]
    for name in names:
        node = live.admin.get("v1", "Node", name)
        meta = node["metadata"]
        if (meta.get("annotations") or {}).get(KWOK_ANNOTATION) != MANAGED:
            live.compute.set_status(node["spec"]["providerID"], "RUNNING")
            live.silence(name, False)
        if MAINTENANCE_LABEL in (meta.get("labels") or {}):
            live.admin.patch("v1", "Node", name, {"metadata": {"labels": {MAINTENANCE_LABEL: None}}})
    w.wait_for("every node Ready", lambda: live.ready_nodes() >= set(names), 120)


def fresh_teams(live: LiveCluster, jobset: JobSetFactory) -> TwoTeams:
    """For a module that shares one install: heal the nodes, drop every JobSet, place both again."""
    heal(live)
    live.clear_workloads()
    return two_teams(live.admin, jobset)


def uids(pods: list[dict[str, Any]]) -> set[str]:
    return {str(p["metadata"]["uid"]) for p in pods}


def jobset_restarts(kube: Kube, team: Team) -> int:
    js = kube.get(w.JOBSET_API, "JobSet", team.jobset, team.namespace)
    return int(js.get("status", {}).get("restarts", 0))


def hold(watch: w.Stopwatch, step: str, seconds: float, since: str | None = None) -> None:
    """Let ``seconds`` pass after ``since`` (a step already timed, or the start): a step of its own."""
    origin = watch.start + (watch.steps[since] if since else 0.0)
    watch.wait(step, lambda: time.monotonic() - origin >= seconds, seconds + 30)


def high_running_again(kube: Kube, before: set[str]) -> Callable[[], bool]:
    """All of the high JobSet's pods Running, none of them one of ``before`` (its pods until now)."""

    def check() -> bool:
        pods = high_pods(kube)
        return len(pods) == VMS and not uids(pods) & before

    return check


def chip_error_restarts_in_place(kube: Kube, teams: TwoTeams) -> w.Stopwatch:
    """A chip error where nothing reads it: JobSet restarts the JobSet on the same slice."""
    before = uids(high_pods(kube))
    watch = w.Stopwatch(start=chip_error(kube, high_pods(kube)))
    watch.wait("JobSet restarted", lambda: jobset_restarts(kube, HIGH) >= 1, 60)
    watch.wait("high pods Running again", high_running_again(kube, before), 120)
    pools = w.pools_of(kube, high_pods(kube))
    assert pools == {teams.broken_pool}, f"restarted on {pools}, not in place"
    return watch
