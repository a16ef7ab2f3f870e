"""The baselines on the real components: a silent host death without our controller.

``recipe``, the guide's setup (the dev stack as planned, no controller): the pods on the dead node
keep the 300 s tolerations of the not-ready and unreachable taints that the DefaultTolerationSeconds
admission plugin adds, so nothing moves for five minutes, and after that they stay Terminating on
a node without a kubelet until GKE repairs the slice (not part of this tier). The test shows the
first part on the real control plane and bounds it: nothing has moved 60 s after NotReady.

``kueue_tas``, the strongest setup of Kueue v0.19.2 without our controller:
The setup is the one ``tpu_platform/sim/kueue_tas.py`` models (its docstring cites Kueue's source):
a Topology with the levels ``cloud.google.com/gke-nodepool`` and ``kubernetes.io/hostname`` named by
the TPU ResourceFlavor, JobSets that require one node pool per Job
(``kueue.x-k8s.io/podset-required-topology``), the FailureRecoveryPolicy gate on (Alpha in 0.19.2)
with pods annotated ``kueue.x-k8s.io/safe-to-forcefully-delete``, and 30 s tolerations of the
not-ready and unreachable taints. The dev stack otherwise as planned; no hotswap controller runs.

Each team runs one 1-slice JobSet within its own quota, then a node under the high-priority one
goes silent. What Kueue does is read from the objects: the pods' force deletion, the Workload's
eviction, and whether it is admitted again while the other slice holds work within its team's
quota (Kueue preempts only by queue policy, so it waits for the repair).
"""

from __future__ import annotations

import json
import time
from typing import Any

from tests.live.cluster import LiveCluster, rendered
from tests.live.cluster import workloads as w

TOPOLOGY = "tpu-slices"
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
SAFE = "kueue.x-k8s.io/safe-to-forcefully-delete"
WAIT_AFTER_EVICTION_S = 20.0


def _tas_plan() -> dict[str, Any]:
    plan = rendered.load_plan("dev")
    for res in plan["resources"]:
        inputs = res.get("inputs") or {}
        if res["type"] == rendered.CHART and inputs.get("name") == "kueue":
            inputs["values"]["controllerManager"]["featureGates"] = [
                {"name": "FailureRecoveryPolicy", "enabled": True}
            ]
        if res["type"].endswith(":ResourceFlavor"):
            inputs["spec"]["topologyName"] = TOPOLOGY
    return plan


def _tas_jobset(name: str, namespace: str, queue: str, priority: str) -> dict[str, Any]:
    js = w.tpu_jobset(name, namespace, queue, priority, hotswap=False)
    template = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    template.setdefault("metadata", {})["annotations"] = {
        REQUIRED: "cloud.google.com/gke-nodepool",
        SAFE: "true",
    }
    template["spec"]["tolerations"] = [
        # TAS places from the JobSet's pod template, before any admission plugin adds the TPU
        # toleration to the pods: without it Kueue reports every node "excluded: taint
        # google.com/tpu=present:NoSchedule" (seen on the real Kueue), so a TAS user writes it.
        {"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"},
        *(
            {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}
            for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
        ),
    ]
    return js


def _ready(kube: Any, node: str) -> bool:
    conds = kube.get("v1", "Node", node).get("status", {}).get("conditions", [])
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)


RECIPE_WATCH_S = 60.0


def test_recipe_after_a_silent_host_death(live: LiveCluster, report: list[str]) -> None:
    rejected = live.install_planned("dev")
    assert not rejected, rejected
    kube = live.admin
    kube.create(w.tpu_jobset("high-train", "research", "research-queue", "high-priority-job", hotswap=False))
    w.wait_for("high JobSet Running", lambda: len(w.running_pods(kube, "research", "high-train")) == 4, 120)
    kube.create(w.tpu_jobset("low-train", "applied", "applied-queue", "low-priority-job", hotswap=False))
    w.wait_for("low JobSet Running", lambda: len(w.running_pods(kube, "applied", "low-train")) == 4, 120)
    (spare,) = w.pools_of(kube, w.running_pods(kube, "applied", "low-train"))
    pod = w.running_pods(kube, "research", "high-train")[0]
    victim = str(pod["spec"]["nodeName"])
    tolerations = {t.get("key"): t.get("tolerationSeconds") for t in pod["spec"].get("tolerations", [])}
    assert tolerations.get("node.kubernetes.io/unreachable") == 300, tolerations

    watch = w.Stopwatch()
    live.silence(victim, True)
    watch.wait("node NotReady", lambda: not _ready(kube, victim), 120)
    watch.wait(
        f"{RECIPE_WATCH_S:.0f} s later",
        lambda: time.monotonic() - watch.start - watch.steps["node NotReady"] >= RECIPE_WATCH_S,
        RECIPE_WATCH_S + 30,
    )
    on_dead = [p for p in w.pods_of(kube, "research", "high-train") if p["spec"].get("nodeName") == victim]
    assert on_dead and not any(p["metadata"].get("deletionTimestamp") for p in on_dead), "still tolerated"
    moved = w.pools_of(kube, w.running_pods(kube, "research", "high-train")) == {spare}
    assert not moved, "the recipe moved the JobSet within a minute"
    report.append(
        watch.line("recipe on the real control plane, silent host death (pods tolerate 300 s: nothing moved)")
    )
    live.silence(victim, False)


def test_kueue_tas_after_a_silent_host_death(live: LiveCluster, report: list[str]) -> None:
    rejected = live.install_planned("dev", plan=_tas_plan())
    assert not rejected, rejected
    kube = live.admin
    kube.apply(
        {
            "apiVersion": w.KUEUE_API,
            "kind": "Topology",
            "metadata": {"name": TOPOLOGY},
            "spec": {
                "levels": [
                    {"nodeLabel": "cloud.google.com/gke-nodepool"},
                    {"nodeLabel": "kubernetes.io/hostname"},
                ]
            },
        }
    )
    kube.create(_tas_jobset("high-train", "research", "research-queue", "high-priority-job"))
    w.wait_for("high JobSet Running", lambda: len(w.running_pods(kube, "research", "high-train")) == 4, 120)
    kube.create(_tas_jobset("low-train", "applied", "applied-queue", "low-priority-job"))
    w.wait_for("low JobSet Running", lambda: len(w.running_pods(kube, "applied", "low-train")) == 4, 120)
    wl = w.workload_of(kube, "research", "high-train")
    assert wl and (wl.get("status", {}).get("admission") or {}).get("podSetAssignments"), "TAS admitted it"
    assert json.dumps(wl["status"]["admission"]).count("topologyAssignment") >= 1, (
        "with a topology assignment"
    )
    victim = str(w.running_pods(kube, "research", "high-train")[0]["spec"]["nodeName"])

    watch = w.Stopwatch()
    live.silence(victim, True)
    watch.wait("node NotReady", lambda: not _ready(kube, victim), 120)
    watch.wait(
        "pod on the dead node force-deleted",
        lambda: (
            not [p for p in w.pods_of(kube, "research", "high-train") if p["spec"].get("nodeName") == victim]
        ),
        240,
    )
    watch.wait(
        "Workload evicted", lambda: w.condition(w.workload_of(kube, "research", "high-train"), "Evicted"), 120
    )
    watch.wait(
        f"still not admitted {WAIT_AFTER_EVICTION_S:.0f} s later",
        lambda: time.monotonic() - watch.start - watch.steps["Workload evicted"] >= WAIT_AFTER_EVICTION_S,
        WAIT_AFTER_EVICTION_S + 30,
    )
    high = w.workload_of(kube, "research", "high-train")
    assert not w.condition(high, "Admitted"), "Kueue re-admitted it: a slice was free after all"
    assert len(w.running_pods(kube, "applied", "low-train")) == 4, "the low-priority JobSet kept its slice"
    report.append(watch.line("kueue_tas on the real Kueue, silent host death (no repair: the JobSet waits)"))
    live.silence(victim, False)
