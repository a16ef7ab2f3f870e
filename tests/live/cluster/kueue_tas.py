"""The ``kueue_tas`` baseline's setup on the real Kueue v0.19.2: Kueue's own failure recovery.

The setup is the one ``tpu_platform/sim/kueue_tas.py`` models (its docstring cites Kueue's source):
a Topology with the levels ``cloud.google.com/gke-nodepool`` and ``kubernetes.io/hostname`` named by
the TPU ResourceFlavor, JobSets that require one node pool per Job
(``kueue.x-k8s.io/podset-required-topology``), the FailureRecoveryPolicy gate on (Alpha in 0.19.2)
with pods annotated ``kueue.x-k8s.io/safe-to-forcefully-delete``, a 1 s termination grace period
(``workloads.tpu_jobset``), and the not-ready and unreachable taints tolerated for ``toleration_s``:
0 s is the strongest configuration the docs allow (``tolerationSeconds: 0`` evicts at once), 30 s
the simulator's default. The dev stack otherwise as planned.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from . import rendered
from . import workloads as w
from .cluster import LiveCluster
from .figures import Report
from .incidents import HIGH, VMS, JobSetFactory, a_high_node, high_pods_on, hold, low_pods, silent_host_death
from .kube import Kube

TOPOLOGY = "tpu-slices"
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
SAFE = "kueue.x-k8s.io/safe-to-forcefully-delete"
STRONGEST_S = 0
MID_S = 30
WAIT_AFTER_EVICTION_S = 20.0


def tas_plan() -> dict[str, Any]:
    """The dev plan with Kueue's FailureRecoveryPolicy gate on and the flavor naming the Topology."""
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


def install(live: LiveCluster) -> None:
    rejected = live.install_planned("dev", plan=tas_plan())
    assert not rejected, rejected
    live.admin.apply(
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


def tas_jobset(
    name: str, namespace: str, queue: str, priority: str, *, toleration_s: int = STRONGEST_S
) -> dict[str, Any]:
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
            {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": toleration_s}
            for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
        ),
    ]
    return js


def jobsets(toleration_s: int) -> JobSetFactory:
    return partial(tas_jobset, toleration_s=toleration_s)


def high_workload(kube: Kube) -> dict[str, Any] | None:
    return w.workload_of(kube, HIGH.namespace, HIGH.jobset)


def assert_placed_by_tas(kube: Kube) -> None:
    wl = high_workload(kube)
    assert wl and (wl.get("status", {}).get("admission") or {}).get("podSetAssignments"), "TAS admitted it"
    assert "topologyAssignment" in json.dumps(wl["status"]["admission"]), "with a topology assignment"


def silent_host_death_waits(live: LiveCluster, report: Report, policy: str) -> None:
    """The high JobSet's slice loses a host: Kueue evicts its Workload and it waits for a repair."""
    kube = live.admin
    assert_placed_by_tas(kube)
    victim = a_high_node(kube)
    watch = w.Stopwatch()
    silent_host_death(live, victim, watch)
    watch.wait("pod on the dead node force-deleted", lambda: not high_pods_on(kube, victim), 240)
    watch.wait("Workload evicted", lambda: w.condition(high_workload(kube), "Evicted"), 120)
    later = f"still not admitted {WAIT_AFTER_EVICTION_S:.0f} s later"
    hold(watch, later, WAIT_AFTER_EVICTION_S, "Workload evicted")
    assert not w.condition(high_workload(kube), "Admitted"), "Kueue re-admitted it"
    assert len(low_pods(kube)) == VMS, "the low-priority JobSet kept its slice"
    report.incident(policy, "silent host death", watch, "no repair: the JobSet waits")
