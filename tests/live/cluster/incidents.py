"""The incidents the live tier scripts, written once so every policy meets exactly the same one.

Each test of ``tests/live/test_hotswap_incidents.py``, ``test_hotswap_notices.py`` and
``tests/live/test_baselines_*.py`` starts from two teams' 1-slice JobSets Running (``two_teams``),
then one incident hits the slice under the high-priority JobSet:

- *silent host death*: kwok stops the node's Lease and status (``LiveCluster.silence``), as a VM
  that dies without a word, and Compute Engine (the double) reports the VM TERMINATED;
- *kubelet restart*: the same silence for a set time, then the heartbeats again, the VM RUNNING
  throughout (unless the controller resets it: then the node is back after the reboot);
- *hung guest*: the same silence with no end, the VM RUNNING;
- *chip error*: two of the slice's pods (the host with the bad chip and the runtime's coordinator)
  exit with the TPU runtime's error in their termination message, through kwok's own chaos Stage;
- *maintenance notice*: GKE's ``cloud.google.com/scheduled-maintenance-time`` label on every node
  of the slice (`../shared/reference/tpu-v6e-and-gke.md`);
- *Spot notice*: the preemption of the slice's Spot VMs (``spot_notice``): the impending-termination
  taint on every node, the kubelet's graceful node shutdown failing their pods, the VMs stopped 30 s
  later (https://cloud.google.com/kubernetes-engine/docs/concepts/spot-vms).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from . import workloads as w
from .cluster import LiveCluster
from .kube import ApiError, Kube
from .nodes import KWOK_ANNOTATION, MANAGED

CHAOS = "pod-container-running-failed.stage.kwok.x-k8s.io"  # kwok v0.8.0 pod/chaos stage
# kwok's stage writes the message unquoted into YAML, so it holds no ": ".
TPU_ERROR = "SLICE_FAILURE_CHIP_DRIVER_ERROR chip 2 on this host reported an uncorrectable error"
MAINTENANCE_LABEL = "cloud.google.com/scheduled-maintenance-time"
CHIPS = "google.com/tpu"
SPOT_TAINT = "cloud.google.com/impending-node-termination"
# The kubelet's graceful node shutdown (kubernetes/kubernetes pkg/kubelet/nodeshutdown,
# nodeShutdownReason and nodeShutdownMessage).
SHUTDOWN_REASON = "Terminated"
SHUTDOWN_MESSAGE = "Pod was terminated in response to imminent node shutdown."
SPOT_POD_GRACE_S = 1.0
"""The pods' ``terminationGracePeriodSeconds`` (``workloads.tpu_jobset``), under GKE's 15 s."""
SPOT_VM_STOP_S = 30.0
"""GKE: a Spot VM stops 30 s after its termination notice."""
REBOOT_S = 5.0
"""A reset VM's boot on the live tier: kwok registers a node at once, so the reboot is this long (a real
TPU VM boots for minutes: the simulator's ``vm_boot_s``; the calibration sets it to this)."""
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


def high_pods_on(kube: Kube, node: str) -> list[dict[str, Any]]:
    """Every pod of the high-priority JobSet bound to ``node``, Terminating ones included."""
    pods = w.pods_of(kube, HIGH.namespace, HIGH.jobset)
    return [p for p in pods if p["spec"].get("nodeName") == node]


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
    """The silent node's kubelet back ``seconds`` after the watch's start; until the node is Ready.

    If the controller resets the VM meanwhile, the restarting kubelet goes down with the guest: the
    node is back once the reset is done and the VM has booted (:data:`REBOOT_S` here), sooner or later
    than ``seconds``."""
    vm = provider_id(live.admin, node)
    while time.monotonic() < watch.start + seconds and not live.compute.resets_of(vm):
        watch.until(min(seconds, time.monotonic() - watch.start + 0.5))
    resets = live.compute.resets_of(vm)
    if resets:
        booted = resets[0] + live.compute.reset_s + REBOOT_S
        watch.wait("VM rebooted", lambda: time.time() >= booted, max(0.0, booted - time.time()) + 30)
    live.silence(node, False)
    watch.wait("node Ready again", lambda: ready(live.admin, node) == "True", 60)


def fail_pods_at(kube: Kube, pods: list[dict[str, Any]], wall: float, message: str, reason: str = "") -> None:
    """kwok's chaos Stage fails each pod's container at the epoch instant ``wall``, with ``message``
    (and ``reason``) in its termination state (see ``chip_error`` on the Stage's delay)."""
    stamp = datetime.fromtimestamp(wall, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    for pod in pods:
        annotations = {f"{CHAOS}/message": message, f"{CHAOS}/delay": stamp, f"{CHAOS}/jitter-delay": stamp}
        if reason:
            annotations[f"{CHAOS}/reason"] = reason
        patch = {"metadata": {"labels": {CHAOS: "true"}, "annotations": annotations}}
        kube.patch("v1", "Pod", pod["metadata"]["name"], patch, namespace=pod["metadata"]["namespace"])


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
    fail_pods_at(kube, pods[:2], time.time() + lead, TPU_ERROR)
    return at


def withdraw_chips(kube: Kube, node: str, broken: int) -> None:
    """The device plugin reports ``broken`` of the node's chips Unhealthy: the kubelet keeps them in
    ``status.capacity`` and leaves them out of ``status.allocatable`` (kubernetes/kubernetes
    ``pkg/kubelet/cm/devicemanager/manager.go``, ``GetCapacity``), written through the node's status
    as the kubelet writes it. kwok's node stages keep a node's allocatable as it is
    (``node-initialize.yaml``: ``with .status.allocatable``)."""
    status = kube.get("v1", "Node", node)["status"]
    chips = int(status["capacity"][CHIPS])
    kube.patch(
        "v1", "Node", node, {"status": {"allocatable": {CHIPS: str(chips - broken)}}}, subresource="status"
    )


def maintenance_notice(kube: Kube, pool: str, lead_s: int) -> int:
    """GKE's notice on every node of ``pool``: maintenance starts ``lead_s`` from now (epoch s)."""
    window = int(time.time()) + lead_s
    for node in pool_nodes(kube, pool):
        kube.patch(
            "v1", "Node", node["metadata"]["name"], {"metadata": {"labels": {MAINTENANCE_LABEL: str(window)}}}
        )
    return window


def retaint(kube: Kube, node: str, taint: dict[str, str] | None, drop: str = "") -> None:
    """An admin's write of the node's ``spec.taints``: ``taint`` added (replacing one of its key),
    ``drop`` removed, every other taint kept; against the node's resourceVersion, again on a conflict
    (the node lifecycle controller and the hotswap controller write taints too)."""
    gone = {drop, taint["key"] if taint else ""} - {""}
    for _ in range(10):
        current = kube.get("v1", "Node", node)
        taints = [t for t in current["spec"].get("taints") or [] if t["key"] not in gone]
        patch = {
            "metadata": {"resourceVersion": current["metadata"]["resourceVersion"]},
            "spec": {"taints": [*taints, *([taint] if taint else [])]},
        }
        try:
            kube.patch("v1", "Node", node, patch)
            return
        except ApiError as err:
            if err.status != 409:
                raise
    raise AssertionError(f"node {node}: taints changed under every write")


def spot_notice(live: LiveCluster, pool: str, watch: w.Stopwatch) -> None:
    """GKE reclaims the Spot VMs of ``pool``, the notice at the watch's start
    (https://cloud.google.com/kubernetes-engine/docs/concepts/spot-vms): every node of the pool gets
    the taint ``cloud.google.com/impending-node-termination`` (NoSchedule, the node's other taints
    kept); the kubelet's graceful node shutdown stops the pods on them within min(their grace, 15 s),
    and they end Failed (kwok's chaos Stage, all at one instant: the pods' 1 s grace after the notice,
    with the kubelet's shutdown message); 30 s after the notice the VMs stop: each reads TERMINATED in
    Compute Engine (the double) and its node falls silent.

    Returns once the VMs are stopped (the step ``"VMs stopped"``), having timed the watch's observed
    steps meanwhile (``Stopwatch.until``); a test observes what happens before that.

    The simulator does the same to the whole slice (``tpu_platform/sim/infra.py``, ``Infra._spot``).
    The pods' DisruptionTarget condition and the pod's own reason are the kubelet's, which kwok's
    Stage does not write: their containers carry the reason and message. Nor do the nodes read
    NotReady at the notice, as a real kubelet's would (Ready=False "node is shutting down", kubelet
    v1.34 ``pkg/kubelet/nodeshutdown``, ``ShutdownStatus``): kwok's node-initialize Stage sets a
    managed node's Ready back to True, so they go NotReady only after the VMs stop.
    """
    kube = live.admin
    names = [n["metadata"]["name"] for n in pool_nodes(kube, pool)]
    for name in names:
        retaint(kube, name, {"key": SPOT_TAINT, "effect": "NoSchedule"})
    on_pool = [  # the non-system pods: system ones get the last 15 s, past the VMs' stop here
        p
        for p in kube.list("v1", "Pod")
        if p["spec"].get("nodeName") in names
        and p.get("status", {}).get("phase") == "Running"
        and not str(p["spec"].get("priorityClassName", "")).startswith("system-")
    ]
    wall = time.time() + (watch.start + SPOT_POD_GRACE_S - time.monotonic())
    fail_pods_at(kube, on_pool, wall, SHUTDOWN_MESSAGE, SHUTDOWN_REASON)
    watch.until(SPOT_VM_STOP_S)
    for name in names:
        live.compute.set_status(provider_id(kube, name), "TERMINATED")
    # One kwok restart for the whole pool (``LiveCluster.silence`` restarts kwok, which then manages
    # exactly the nodes still annotated ``fake``), so every node falls silent at the same instant.
    for name in names[:-1]:
        kube.patch("v1", "Node", name, {"metadata": {"annotations": {KWOK_ANNOTATION: "silent"}}})
    live.silence(names[-1], True)
    watch.wait("VMs stopped", lambda: True, 1)


def heal(live: LiveCluster) -> None:
    """Every installed node managed by kwok again, its VM RUNNING (a dead one repaired), without a
    maintenance notice or a Spot termination taint; until all are Ready."""
    installed = live.current
    assert installed is not None, "install a stack first"
    names = [n for p in installed.pools for n in p.node_names()]
    for name in names:
        node = live.admin.get("v1", "Node", name)
        meta = node["metadata"]
        if any(t["key"] == SPOT_TAINT for t in node["spec"].get("taints") or []):
            retaint(live.admin, name, None, drop=SPOT_TAINT)
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


def reach(watch: w.Stopwatch, step: str, check: Callable[[], Any], timeout: float) -> None:
    """``step`` as timed while it was observed (``Stopwatch.observe``), else waited for now."""
    if step not in watch.steps:
        watch.wait(step, check, timeout)


def hold(watch: w.Stopwatch, step: str, seconds: float, since: str | None = None) -> None:
    """Let ``seconds`` pass after ``since`` (a step already timed, or the start): a step of its own."""
    origin = watch.start + (watch.steps[since] if since else 0.0)
    watch.wait(step, lambda: time.monotonic() - origin >= seconds, seconds + 30)


def high_running_on(kube: Kube, pool: str) -> bool:
    """All of the high JobSet's pods Running, on ``pool``."""
    pods = high_pods(kube)
    return len(pods) == VMS and w.pools_of(kube, pods) == {pool}


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
