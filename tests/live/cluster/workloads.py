"""JobSets as the platform's users submit them, and what the real controllers make of them.

A TPU JobSet here has the shape of ``examples/jobsets/``: one replicated Job per slice, one pod per
VM of the slice with the VM's chips, exclusive placement per node pool, the team's LocalQueue and a
WorkloadPriorityClass as labels, the hotswap opt-in. kwok runs the pods; nothing in them executes.
"""

from __future__ import annotations

import time
from typing import Any

from tpu_platform import constants

from .kube import Kube, wait_for

JOBSET_API = "jobset.x-k8s.io/v1alpha2"
KUEUE_API = "kueue.x-k8s.io/v1beta2"
EXCLUSIVE = "alpha.jobset.sigs.k8s.io/exclusive-topology"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"


def tpu_jobset(
    name: str,
    namespace: str,
    queue: str,
    priority: str,
    *,
    slices: int = 1,
    topology: str = "4x4",
    vms: int = 4,
    chips_per_vm: int = 4,
    hotswap: bool = True,
) -> dict[str, Any]:
    labels = {"kueue.x-k8s.io/queue-name": queue, "kueue.x-k8s.io/priority-class": priority}
    if hotswap:
        labels["tpu-platform.dev/hotswap"] = "enabled"
    pod_spec = {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 1,
        "priorityClassName": priority,
        "nodeSelector": {constants.LABEL_ACCELERATOR: "tpu-v6e-slice", constants.LABEL_TOPOLOGY: topology},
        "containers": [
            {
                "name": "trainer",
                "image": "registry.k8s.io/pause:3.10",
                "terminationMessagePolicy": "FallbackToLogsOnError",
                "resources": {"limits": {"google.com/tpu": str(chips_per_vm)}},
            }
        ],
    }
    return {
        "apiVersion": JOBSET_API,
        "kind": "JobSet",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "annotations": {EXCLUSIVE: constants.LABEL_NODEPOOL},
        },
        "spec": {
            "failurePolicy": {"maxRestarts": 10, "restartStrategy": "Recreate"},
            "replicatedJobs": [
                {
                    "name": "slice",
                    "replicas": slices,
                    "template": {
                        "spec": {
                            "backoffLimit": 0,
                            "completions": vms,
                            "parallelism": vms,
                            "template": {"spec": pod_spec},
                        }
                    },
                }
            ],
        },
    }


def workload_of(kube: Kube, namespace: str, jobset: str) -> dict[str, Any] | None:
    """The Kueue Workload a JobSet owns (kueue names it ``jobset-<name>-<hash>``)."""
    for wl in kube.list(KUEUE_API, "Workload", namespace):
        owners = wl["metadata"].get("ownerReferences") or []
        if any(o.get("kind") == "JobSet" and o.get("name") == jobset for o in owners):
            return wl
    return None


def condition(obj: dict[str, Any] | None, kind: str) -> bool:
    if not obj:
        return False
    return any(
        c["type"] == kind and c["status"] == "True" for c in obj.get("status", {}).get("conditions", [])
    )


def pods_of(kube: Kube, namespace: str, jobset: str) -> list[dict[str, Any]]:
    return kube.list("v1", "Pod", namespace, selector=f"{JOBSET_NAME_LABEL}={jobset}")


def running_pods(kube: Kube, namespace: str, jobset: str) -> list[dict[str, Any]]:
    return [
        p
        for p in pods_of(kube, namespace, jobset)
        if p.get("status", {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
    ]


def pools_of(kube: Kube, pods: list[dict[str, Any]]) -> set[str]:
    """The node pools the pods are bound to."""
    pools = set()
    nodes = {n["metadata"]["name"]: n for n in kube.list("v1", "Node")}
    for pod in pods:
        node = nodes.get(pod.get("spec", {}).get("nodeName", ""))
        if node:
            pools.add(node["metadata"]["labels"][constants.LABEL_NODEPOOL])
    return pools


class Stopwatch:
    """Seconds since a start, for each named step a test waits for or observes on the way."""

    def __init__(self, start: float | None = None) -> None:
        """From now, or from ``start`` (a ``time.monotonic()`` instant, such as an incident's)."""
        self.start = time.monotonic() if start is None else start
        self.steps: dict[str, float] = {}
        self._observed: dict[str, Any] = {}

    def observe(self, step: str, check: Any) -> None:
        """Time ``step`` too, whenever ``check`` first holds while the test waits for other steps
        (for steps whose order against the waited ones is not known beforehand)."""
        self._observed[step] = check

    def _poll(self) -> None:
        for step, check in list(self._observed.items()):
            if check():
                self.steps[step] = round(time.monotonic() - self.start, 1)
                del self._observed[step]

    def until(self, seconds: float) -> None:
        """Until ``seconds`` after the start, timing the observed steps meanwhile."""
        end = self.start + seconds
        while time.monotonic() < end:
            self._poll()
            time.sleep(min(0.2, max(0.0, end - time.monotonic())))

    def wait(self, step: str, check: Any, timeout: float) -> Any:
        def polled() -> Any:
            self._poll()
            return check()

        value = wait_for(step, polled, timeout)
        self.steps[step] = round(time.monotonic() - self.start, 1)
        return value

    def line(self, title: str) -> str:
        return f"{title}: " + ", ".join(f"{k} {v:.1f} s" for k, v in self.steps.items())
