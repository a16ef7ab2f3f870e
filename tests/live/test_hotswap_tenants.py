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
  termination messages. With no free slice for the restart, research's word alone does not take the
  pool out: tainted, the restarted pods would find no node and kube-scheduler would preempt
  applied's pods for them (seen here before the rule); the JobSet restarts in place
  (``tpu_platform/hotswap/core/tenancy.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.live.cluster import LiveCluster
from tests.live.cluster import incidents as inc
from tests.live.cluster import workloads as w
from tests.live.cluster.figures import Report
from tests.live.cluster.scene import Scene, hotswap_scene, pool_tainted
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
    # The decoys carry the JobSet's labels, so the label-selected helpers would count them: gone first.
    for name in ("decoy-bound", "decoy-pending"):
        kube.delete("v1", "Pod", name, ns, grace=0)
    kube.delete("batch/v1", "Job", "decoy-owner", ns)
    w.wait_for("decoys gone", lambda: len(inc.high_pods(kube)) == inc.VMS, 60)

    before = inc.uids(inc.high_pods(kube))
    chip = w.Stopwatch(start=inc.chip_error(kube, inc.high_pods(kube)))
    chip.observe("pool tainted", lambda: pool_tainted(kube, scene.broken_pool))
    chip.wait("JobSet restarted", lambda: inc.jobset_restarts(kube, inc.HIGH) >= 1, 60)
    chip.wait("high pods Running again", inc.high_running_again(kube, before), 120)
    chip.until(chip.steps["high pods Running again"] + HOLD_S)
    assert "pool tainted" not in chip.steps, "no free slice: research's word alone must not take the pool out"
    assert w.pools_of(kube, inc.high_pods(kube)) == {scene.broken_pool}, "restarted in place"
    assert inc.uids(inc.low_pods(kube)) == low_before, "applied's JobSet lost its slice to research's word"
    assert scene.controller.metric("hotswap_preemptions_total") == 0
    assert scene.controller.metric("hotswap_suspect_pools") >= 1, "the reports keep the pool suspect"
    assert scene.controller.process.running()
    report.incident(
        POLICY,
        "chip error, reports only",
        chip,
        f"no free slice: pool kept in service, restarted in place; applied's JobSet kept its slice "
        f"{HOLD_S:.0f} s after, as it did for {HOLD_S:.0f} s of two decoy pods",
    )
