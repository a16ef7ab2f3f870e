"""``kueue_tas``: the strongest recovery a user gets from Kueue 0.19.2 and JobSet 0.12.0 without our
controller, configured as a capable user would, its algorithm modelled from Kueue's source.

The setup (what a stack would render for it: docs/benchmarks.md):
- TopologyAwareScheduling: a ``Topology`` with levels ``cloud.google.com/gke-nodepool`` and
  ``kubernetes.io/hostname``, each TPU ResourceFlavor naming it (``spec.topologyName``), and JobSets
  asking ``kueue.x-k8s.io/podset-required-topology: cloud.google.com/gke-nodepool`` per Job, so Kueue
  places each Job on one whole, healthy slice (``Kueue(tas=True)``);
- the feature gates as 0.19.2 ships them (``pkg/features/kube_features.go``): TASFailedNodeReplacement,
  TASFailedNodeReplacementFailFast, TASReplaceNodeOnPodTermination and TASReplaceNodeOnNodeTaints are
  Beta and on; TASReplaceNodeDueToNotReadyOverFixedTime is deprecated and off; FailureRecoveryPolicy is
  Alpha and off, so the user turns it on and annotates the pod template with
  ``kueue.x-k8s.io/safe-to-forcefully-delete: "true"``;
- shorter tolerations of the not-ready/unreachable taints (``Timings.tas_toleration_s``, chosen 30 s,
  instead of the 300 s the DefaultTolerationSeconds admission plugin adds).

The algorithm:
- the TAS node controller (``pkg/controller/tas/node_controller.go``, ``Reconcile`` /
  ``getWorkloadStatus`` / ``checkPodsOnNode``) looks at every node of an admitted workload's assignment,
  100 ms after a change (``reconcileBatchPeriod``). A node that is gone is failed at once; a NotReady
  node is failed once the workload has no *progressing* pod on it (none without a deletionTimestamp
  and not terminal: TASReplaceNodeOnPodTermination); a Ready node with an untolerated NoSchedule or
  NoExecute taint (a cordon, a Spot termination notice) likewise (TASReplaceNodeOnNodeTaints). A
  Ready, untainted node is healthy whatever its pods do, so a chip error with a live kubelet is not
  seen here;
- a failed node is replaced by another node of the same required domain (the slice) with room. A
  slice has exactly the nodes its Job uses, so there is never one; with FailFast the workload is
  evicted at the first failed attempt (``evictWorkloadIfNeeded`` also evicts on a second failed node)
  and requeued, and Kueue admits it again on a healthy slice, preempting by its queue's rules;
- FailureRecoveryPolicy (``pkg/controller/failurerecovery/pod_termination_controller.go``,
  ``Reconcile``): a pod with the annotation and a deletionTimestamp, on a node with the
  ``node.kubernetes.io/unreachable`` taint, is set Failed and force-deleted once
  ``forcefulTerminationGracePeriod`` (1 min) has passed since its deletionTimestamp (the delete request
  plus the pod's grace period), which lets JobSet's Foreground deletion finish.
"""

from __future__ import annotations

from tpu_platform.hotswap.core import constants as k
from tpu_platform.sim.cluster import Cluster
from tpu_platform.sim.engine import Handle
from tpu_platform.sim.kueue import Kueue
from tpu_platform.sim.model import FAILED, SimPod, Workload
from tpu_platform.sim.params import Timings
from tpu_platform.sim.snapshot import CheckpointClock

BATCH_S = 0.1
"""kueue: the TAS node controller's reconcileBatchPeriod (100 ms)."""
RECHECK_S = 5.0
"""chosen: how soon FailureRecoveryPolicy looks again at a pod whose node is not unreachable yet (it
watches nodes gaining the taint; this stands in for that watch)."""


class KueueTas:
    name = "kueue_tas"
    tas = True

    def __init__(self) -> None:
        self._next: Handle | None = None
        self.evicted_for_nodes = 0
        self.force_deleted = 0

    def toleration_s(self, t: Timings) -> float:
        return t.tas_toleration_s

    def attach(self, cluster: Cluster, last_checkpoint: CheckpointClock, kueue: Kueue) -> None:
        self.c = cluster
        self.kueue = kueue
        cluster.watchers.append(self._arm)
        cluster.pod_listeners.append(self._on_pod)

    # --- TAS node controller -------------------------------------------------------------------------
    def _arm(self) -> None:
        if self._next is not None and self._next.pending:
            return
        self._next = self.c.engine.after(BATCH_S, "tas-node-controller", self._reconcile)

    def _reconcile(self) -> None:
        self._next = None
        if any(w.state == "queued" for w in self.c.workloads.values()):
            # a node change reconciles the TAS flavors, which requeues inadmissible workloads
            # (pkg/controller/tas/resource_flavor.go, NotifyNodeUpdate)
            self.kueue.kick()
        for key, pools in sorted(self.kueue.assigned.items()):
            w = self.c.workloads.get(key)
            if w is None or w.state != "admitted":
                continue
            if any(self._failed_node(w, pool) for pool in pools):
                self.evicted_for_nodes += 1
                self.kueue.evict_and_requeue(w, "NodeFailures", backoff=False)

    def _failed_node(self, w: Workload, pool_name: str) -> bool:
        """Some node of the assigned slice is failed for ``w`` (there is never a replacement: FailFast)."""
        pool = self.c.pools[pool_name]
        if len(pool.nodes) < pool.size:
            return True
        for name in pool.nodes:
            node = self.c.nodes[name]
            untolerated = any(
                t.effect in ("NoSchedule", "NoExecute") and t.key != k.TPU_RESOURCE for t in node.api.taints
            )
            if node.ready and not untolerated:
                continue
            progressing = any(
                not p.terminating and not p.terminal
                for p in w.pods.values()
                if p.node == name and p.attempt == w.attempt
            )
            if not progressing:
                return True
        return False

    # --- FailureRecoveryPolicy -----------------------------------------------------------------------
    def _on_pod(self, pod: SimPod, what: str) -> None:
        if what != "terminating" or pod.deletion is None or pod.node is None:
            return
        t = self.c.t
        due = pod.deletion + t.termination_grace_s + t.frp_forceful_s
        self.c.engine.at(max(due, self.c.now), "failure-recovery", self._force, pod.key, pod.uid)

    def _force(self, key: str, uid: str) -> None:
        pod = self.c.pods.get(key)
        if pod is None or pod.uid != uid or not pod.terminating or pod.node is None:
            return
        node = self.c.nodes.get(pod.node)
        if node is None:
            return
        if not node.api.has_taint(k.UNREACHABLE_TAINT):
            if not node.alive:
                self.c.engine.after(RECHECK_S, "failure-recovery", self._force, key, uid)
            return
        self.force_deleted += 1
        self.c.note_force_delete(pod)
        self.c.fail_pod(pod, pod.cause or "failure", disruption="KueueForcefullyDeleted", phase=FAILED)
        self.c.remove_pod(pod)
