"""A tenant against the real hotswap controller process on the real components (the dev stack's
config): what research, which writes any object in its own namespace, can make the controller do to
applied's lower-priority JobSet. Each attack is one an adversarial review reproduced; each must leave
applied's JobSet on its slice, with no preemption.

- *Decoy pods*: two pods in research's namespace that carry its high-priority JobSet's two labels
  (``jobset-name``, ``jobset-uid``: any tenant can set them and read its own JobSet's UID) and a
  controlling owner reference to a ``batch/v1`` Job of research's own, one bound to a node of
  applied's slice without TPU chips and one unschedulable. A pod belongs to a JobSet only through the
  ownership chain JobSet -> Job -> Pod, and only pods that hold chips count as placement
  (``tpu_platform/hotswap/core/ownership.py``).
- *Self-reported chip errors*: two of research's own pods write the TPU runtime's error into their
  termination messages. The pool goes out on research's word alone, which lets research preempt only
  its own work while it is out (``tpu_platform/hotswap/core/tenancy.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.live.cluster import LiveCluster
from tests.live.cluster import incidents as inc
from tests.live.cluster import workloads as w
from tests.live.cluster.figures import Report
from tests.live.cluster.scene import Scene, high_moved, hotswap_scene, pool_tainted
from tpu_platform.hotswap.core import constants as k

POLICY = "hotswap"
HOLD_S = 60.0
"""How long nothing may move: six times the preemption wait (10 s), thirty reconciles (2 s)."""


@pytest.fixture
def scene(live: LiveCluster) -> Iterator[Scene]:
    yield from hotswap_scene(live)


def decoy_job(namespace: str) -> dict[str, Any]:
    """A Job of the tenant's own that never runs a pod (suspended): the decoys' owner."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "decoy-owner", "namespace": namespace},
        "spec": {
            "suspend": True,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
                }
            },
        },
    }


def decoy_pod(
    name: str, namespace: str, jobset: dict[str, Any], owner: dict[str, Any], **spec: Any
) -> dict[str, Any]:
    """A pod with the JobSet's labels and a controlling owner reference to ``owner`` (not its Job)."""
    meta = jobset["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {k.JOBSET_NAME_LABEL: meta["name"], k.JOBSET_UID_LABEL: meta["uid"]},
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": owner["metadata"]["name"],
                    "uid": owner["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        "spec": {
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
            "tolerations": [{"operator": "Exists"}],
            **spec,
        },
    }


def test_a_tenant_cannot_take_another_teams_slice(scene: Scene, report: Report) -> None:
    kube = scene.kube
    ns = inc.HIGH.namespace
    low_before = inc.uids(inc.low_pods(kube))
    jobset = kube.get(w.JOBSET_API, "JobSet", inc.HIGH.jobset, ns)
    owner = kube.create(decoy_job(ns))
    spare_node = inc.pool_nodes(kube, scene.spare_pool)[0]["metadata"]["name"]
    kube.create(decoy_pod("decoy-bound", ns, jobset, owner, nodeName=spare_node))
    kube.create(decoy_pod("decoy-pending", ns, jobset, owner, nodeSelector={"no-such-node": "x"}))
    watch = w.Stopwatch()
    watch.until(HOLD_S)
    assert inc.uids(inc.low_pods(kube)) == low_before, "applied's JobSet lost its slice to research's decoys"
    assert scene.controller.metric("hotswap_preemptions_total") == 0

    chip = w.Stopwatch(start=inc.chip_error(kube, inc.high_pods(kube)))
    chip.wait("pool tainted", lambda: pool_tainted(kube, scene.broken_pool), 120)
    declared = {
        (n["metadata"].get("annotations") or {}).get(k.TENANT_DECLARED_ANNOTATION, "")
        for n in inc.pool_nodes(kube, scene.broken_pool)
    }
    assert declared and all(v.endswith("/team:research") for v in declared), declared
    chip.until(chip.steps["pool tainted"] + HOLD_S)
    assert inc.uids(inc.low_pods(kube)) == low_before, "applied's JobSet lost its slice to research's word"
    assert not high_moved(scene)
    assert scene.controller.metric("hotswap_preemptions_total") == 0
    assert scene.controller.process.running()
    report.incident(
        POLICY,
        "chip error, reports only",
        chip,
        f"pool out on research's word; applied's JobSet kept its slice for {HOLD_S:.0f} s, "
        f"as it did for {HOLD_S:.0f} s of two decoy pods",
    )
