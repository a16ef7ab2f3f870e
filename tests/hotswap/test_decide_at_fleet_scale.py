"""Decisions at fleet scale (1,024 slices of 4x4, 4,096 nodes) are the same as on a small cluster.

How long they take is measured by ``bench/reconcile.py``, not here."""

from __future__ import annotations

from tpu_platform.hotswap.core import Pod, Snapshot, decide
from tpu_platform.testing.hotswap_builders import (
    fail_node,
    make_jobset,
    make_nodes,
    make_pools,
    pending_pods,
    running_pods,
)


def big_cluster(n_pools: int) -> Snapshot:
    """Every pool busy with 2-slice JobSets of mixed priority, one pool failing, one JobSet waiting."""
    now = 1_000_000.0
    pools = make_pools("tpu", n_pools)
    nodes = {p.name: list(make_nodes(p, ready_since=now - 86_400)) for p in pools}
    nodes[pools[0].name][2] = fail_node(nodes[pools[0].name][2], now - 60)
    jobsets = []
    pods: list[Pod] = []
    for i in range(0, n_pools - 1, 2):
        js = make_jobset(f"train-{i}", priority=1000 * (1 + i % 3), slices=2, running_since=now - 3600 - i)
        jobsets.append(js)
        pods.extend(running_pods(js, pools[i : i + 2], nodes, started=now - 3600 - i))
    urgent = make_jobset("urgent", priority=1_000_000, slices=2)
    jobsets.append(urgent)
    pods.extend(pending_pods(urgent, unschedulable_since=now - 30, pods_per_slice=4))
    return Snapshot(now, pools, tuple(n for p in pools for n in nodes[p.name]), tuple(jobsets), tuple(pods))


def test_1024_slices_decides_one_minimal_preemption() -> None:
    snap = big_cluster(1024)
    assert len(snap.nodes) == 4096 and len(snap.pods) > 4000
    decision = decide(snap)
    assert decision.pool("tpu-0000") is not None
    assert len(decision.preemptions) == 1 and decision.preemptions[0].slices_needed == 1
