"""Hardware and the control plane's reaction to it: incidents of every kind (``failures``), NotReady,
taint-based eviction, GKE's repair of the whole slice, kubelets that come back by themselves.

Upstream behaviour modelled here, with where it comes from:
- the node lifecycle controller sets Ready=Unknown and the ``node.kubernetes.io/unreachable`` taints
  (NoSchedule, and NoExecute with its timeAdded) once the kubelet has been silent for
  node-monitor-grace-period (kubernetes/kubernetes ``pkg/controller/nodelifecycle/
  node_lifecycle_controller.go``, ``tryUpdateNodeHealth`` / ``processTaintBaseEviction``);
- taint-based eviction deletes a pod once its toleration of that NoExecute taint runs out
  (``pkg/controller/tainteviction/taint_eviction.go``, ``processPodOnNode``): 300 s by default, the
  pod's own ``tolerationSeconds`` when it sets one. The deletion never completes on a dead kubelet;
- PodGC deletes pods bound to a Node that no longer exists after a 40 s quarantine
  (``pkg/controller/podgc/gc_controller.go``, ``gcOrphaned``), marking them Failed first;
- GKE auto-repair recreates a multi-host TPU slice as a unit after ~10 min NotReady (GKE "About TPUs
  in GKE": a multi-host slice is repaired atomically). Whether the repair deletes the Node objects
  (new ones register) or keeps them (the same names go Ready again) is not documented; both are
  modelled (``Timings.repair_replaces_nodes``);
- GKE's maintenance and Spot signals on nodes: the ``cloud.google.com/scheduled-maintenance-time``
  label with the notice, ``cloud.google.com/active-node-maintenance=ONGOING`` and a cordon when it
  starts, the ``cloud.google.com/impending-node-termination`` taint on a Spot preemption notice, and
  the kubelet's graceful node shutdown marking the pods Failed within 15 s of it, the VM gone after
  30 s (GKE "Manage GKE node disruption for GPUs and TPUs";
  https://cloud.google.com/kubernetes-engine/docs/concepts/spot-vms).

None of this depends on the policy under test, so every policy sees the same infrastructure timeline
for the same trace.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from tpu_platform.hotswap.core import Condition, Taint
from tpu_platform.hotswap.core import constants as k
from tpu_platform.sim.chipsignals import crash, restore_chips, tpu_error, withdraw_chips
from tpu_platform.sim.cluster import Cluster
from tpu_platform.sim.failures import (
    CHIP_ERROR,
    HOST_DEATH,
    KUBELET_RESTART,
    MAINTENANCE,
    MASS_EVENT,
    SPOT_PREEMPTION,
    WORKLOAD_CRASH,
)
from tpu_platform.sim.host_fates import HUNG, RESTARTED, STOPPED, host_fate
from tpu_platform.sim.model import CAUSE_FAILURE, Pool, SimNode, SimPod, Workload
from tpu_platform.sim.node_lifecycle import not_ready_after
from tpu_platform.sim.traces import Failure

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
SPOT_POD_GRACE_S = 15.0
"""GKE "Spot VMs": on a preemption notice the kubelet's graceful node shutdown gives non-system pods up
to 15 s, then the VM is shut down 30 s after the notice."""
"""What the node lifecycle controller adds to a cordoned node (TaintNodesByCondition)."""


@dataclass(slots=True)
class Observer:
    """What the infrastructure reports to metrics (all optional)."""

    failed: Callable[[float, SimNode, str], None] | None = None
    """(time, node, kind): an incident hit this live node (for slice-level kinds: each node of it)."""
    absorbed: Callable[[float, Failure], None] | None = None
    repair: Callable[[str, float, bool], None] | None = None
    """(pool, time, started): called when a repair starts and when its last node is back."""


class Infra:
    def __init__(
        self,
        cluster: Cluster,
        trace: Iterable[Failure],
        *,
        seed: int,
        node_died: Callable[[SimNode], None],
        observer: Observer | None = None,
        target: Callable[[], str | None] | None = None,
        save_checkpoint: Callable[[Workload], None] | None = None,
        toleration_s: float | None = None,
    ) -> None:
        self.c = cluster
        self.seed = seed
        self.node_died = node_died
        self.obs = observer or Observer()
        self.target = target
        """Picks the node of a failure that names none (e.g. "wherever the top-priority JobSet runs")."""
        self.save_checkpoint = save_checkpoint
        """Tells a JobSet to write a checkpoint now (a trainer's SIGTERM handler, given time to)."""
        self.toleration_s = cluster.t.toleration_s if toleration_s is None else toleration_s
        self._pending: dict[str, list[float]] = {}
        """Announced maintenance windows per pool that have not started yet."""
        """The pods' toleration of the unreachable/not-ready NoExecute taints (the policy's choice)."""
        cluster.pod_listeners.append(self._on_pod)
        for f in trace:
            if f.node and f.node not in cluster.nodes:
                raise ValueError(f"failure at {f.at}s names node {f.node!r}, which is not in the fleet")
            cluster.engine.at(f.at, f"incident-{f.kind}", self.fail, f)
            if f.kind == MAINTENANCE and f.node:
                notice = max(cluster.now, f.at - cluster.t.maintenance_notice_s)
                cluster.engine.at(notice, "maintenance-notice", self._notice, f)

    # --- dispatch ------------------------------------------------------------------------------------
    def fail(self, f: Failure) -> None:
        name = f.node or (self.target() if self.target is not None else None) or ""
        node = self.c.nodes.get(name)
        if node is None or not node.alive:
            if self.obs.absorbed:
                self.obs.absorbed(self.c.now, f)
            return
        if f.kind in (HOST_DEATH, MASS_EVENT):
            self._report(node, f.kind)
            self._kill(node, back_after=f.back_after)
        elif f.kind == CHIP_ERROR:
            self._report(node, f.kind)
            self._chip_error(node)
        elif f.kind == WORKLOAD_CRASH:
            self._report(node, f.kind)
            self._workload_crash(node, random.Random(f"crash:{self.seed}:{f.at}:{f.node}"))
        elif f.kind == KUBELET_RESTART:
            self._report(node, f.kind)
            self._kubelet_pause(node, f.back_after or 0.0)
        elif f.kind == MAINTENANCE:
            self._maintenance(self.c.pools[node.pool], f.kind)
        elif f.kind == SPOT_PREEMPTION:
            self._spot(self.c.pools[node.pool], f.kind)

    def _report(self, node: SimNode, kind: str) -> None:
        if self.obs.failed:
            self.obs.failed(self.c.now, node, kind)

    def _current(self, name: str, inc: int) -> SimNode | None:
        node = self.c.nodes.get(name)
        return node if node is not None and node.incarnation == inc else None

    def silence(self, node: SimNode) -> int:
        """The kubelet stops: no status, no Lease renewals; NotReady follows after the grace period."""
        t = self.c.t
        node.lease_last = node.lease_renewed(self.c.now, t.lease_renew_s)
        node.alive = False
        node.incarnation += 1
        inc = node.incarnation
        for listener in self.c.kubelet_listeners:
            listener()
        delay = (
            not_ready_after(self.c.now, node.lease_last, t)
            if t.not_ready_from_last_renewal
            else t.node_monitor_grace_s
        )
        self.c.engine.after(delay, "node-not-ready", self._not_ready, node.name, inc)
        return inc

    # --- a host dies silently ------------------------------------------------------------------------
    def _kill(self, node: SimNode, *, back_after: float | None, repair: bool = True) -> None:
        """The kubelet falls silent; what the VM does meanwhile is its fate (``host_fates``): a
        reboot or a restart by Compute Engine brings the kubelet back without its containers."""
        fate = (
            host_fate(self.c.t, self.seed, node.name, self.c.now)
            if back_after is None and repair
            else STOPPED
        )
        inc = self.silence(node)
        if fate != HUNG:
            node.vm_running, node.vm_down_at = False, self.c.now
        if fate == RESTARTED:
            node.host_error_at = self.c.now
            back_after = self.c.t.compute_restart_s
        node.repair_armed = repair
        self.node_died(node)
        t = self.c.t
        if back_after is not None:
            self.c.engine.after(back_after, "kubelet-back", self.kubelet_back, node.name, inc, False)
        if t.peer_exit_s is not None:
            self.c.engine.after(t.peer_exit_s, "peers-exit", self._peers_exit, node.name, inc)

    def _not_ready(self, name: str, inc: int) -> None:
        """The node lifecycle controller: Ready=Unknown and the unreachable taints."""
        node = self._current(name, inc)
        if node is None or not node.ready:  # silenced again while NotReady (a reset): already marked
            return
        now = self.c.now
        api = node.api
        conditions = (*(c for c in api.conditions if c.type != "Ready"), Condition("Ready", "Unknown", now))
        taints = (
            *api.taints,
            Taint(k.UNREACHABLE_TAINT, "NoSchedule"),
            Taint(k.UNREACHABLE_TAINT, "NoExecute", time_added=now),
        )
        self.c.update_node(node, replace(api, conditions=conditions, taints=taints))
        for key in sorted(node.holders):
            self.c.engine.after(self.toleration_s, "taint-eviction", self._taint_evict, name, inc, key)
        if node.repair_armed:
            self.c.engine.after(self.c.t.auto_repair_after_s, "auto-repair", self._auto_repair, name, inc)

    def _taint_evict(self, name: str, inc: int, key: str) -> None:
        """Its toleration is up: taint eviction deletes the pod (it stays Terminating on a dead kubelet)."""
        node = self._current(name, inc)
        pod = self.c.pods.get(key)
        if node is None or pod is None or pod.node != name or not pod.holding:
            return
        self.c.delete_pod(pod, CAUSE_FAILURE, disruption="DeletionByTaintManager")

    def _peers_exit(self, name: str, inc: int) -> None:
        """The other hosts of the broken slice give up on their collectives and exit with an error."""
        node = self._current(name, inc)
        if node is None:
            return
        for key in sorted(node.holders):
            pod = self.c.pods[key]
            w = self.c.workloads.get(pod.workload)
            if w is None:
                continue
            for peer in sorted(w.current_pods(), key=lambda p: p.key):
                if peer.attempt == pod.attempt and peer.key != key and self.c.kubelet_alive(peer):
                    self.c.fail_pod(peer, CAUSE_FAILURE)

    def kubelet_back(self, name: str, inc: int, containers_survived: bool) -> None:
        """The kubelet returns. After a reboot the containers that were running are gone (restartPolicy
        Never: their pods fail); after a kubelet restart they kept running. Deletions requested meanwhile
        are carried out now."""
        node = self._current(name, inc)
        if node is None:
            return
        node.alive = True
        node.vm_running, node.vm_down_at = True, None
        node.incarnation += 1
        node.lease_from, node.lease_last = self.c.now, None
        for listener in self.c.kubelet_listeners:
            listener()
        if not node.ready:
            self.c.heal_node_api(node, self.c.now)
        for key in sorted(node.holders):
            pod = self.c.pods[key]
            if pod.terminating:
                self.c.finish_termination(pod)
            elif not containers_survived:
                self.c.fail_pod(pod, CAUSE_FAILURE)

    # --- a chip or ICI link fails, the kubelet lives -------------------------------------------------
    def _chip_error(self, node: SimNode) -> None:
        """The trainer on the node crashes (pod Failed, no DisruptionTarget) with the slice failure in its
        termination message, and so does the runtime's coordinator a moment later; the node stays
        Ready, its chips are withdrawn once the kubelet reports them Unhealthy (if the device plugin
        does); GKE repairs the slice after ``chip_repair_after_s``."""
        node.chip_broken = True
        self.node_died(node)
        t = self.c.t
        pool = self.c.pools[node.pool]
        for key in sorted(node.holders):
            pod = self.c.pods[key]
            pod.termination = tpu_error(self.c.now)
            self.c.fail_pod(pod, CAUSE_FAILURE)
            coordinator = self._coordinator(pod)
            if coordinator is not None and t.chip_coordinator_report_s is not None:
                self.c.engine.after(
                    t.chip_coordinator_report_s, "coordinator-report", self._report_tpu_error, coordinator
                )
        if t.chips_withdrawn_report_s is not None:
            self.c.engine.after(
                t.chips_withdrawn_report_s,
                "chips-withdrawn",
                self._withdraw,
                node.name,
                pool.generation,
                pool.chips // max(pool.size, 1),
            )
        self.c.changed()
        self.c.engine.after(
            self.c.t.chip_repair_after_s, "chip-repair", self._repair_if, pool.name, pool.generation
        )

    def _coordinator(self, pod: SimPod) -> SimPod | None:
        """Worker 0 of the failed pod's Job (the runtime's coordinator), if it is another pod."""
        w = self.c.workloads.get(pod.workload)
        if w is None or pod.index == 0:
            return None
        for p in w.pods.values():
            if p.attempt == pod.attempt and p.slice_index == pod.slice_index and p.index == 0:
                return p
        return None

    def _report_tpu_error(self, pod: SimPod) -> None:
        """The coordinator logs the slice failure and exits, unless its kubelet already stopped it."""
        if self.c.pods.get(pod.key) is not pod or pod.terminal or not self.c.kubelet_alive(pod):
            return
        pod.termination = tpu_error(self.c.now)
        self.c.fail_pod(pod, CAUSE_FAILURE)

    def _withdraw(self, name: str, generation: int, chips: int) -> None:
        """The kubelet's node status shows the chips withdrawn; kube-scheduler reads the same status."""
        node = self.c.nodes.get(name)
        if node is None or not node.chip_broken or self.c.pools[node.pool].generation != generation:
            return
        node.chips_ok = False
        withdraw_chips(self.c, node, chips)

    def _on_pod(self, pod: SimPod, what: str) -> None:
        """A TPU pod bound to a node with a broken chip fails when its runtime initializes (the end of
        its startup), with the same slice failure in its termination message."""
        if what != "bound" or pod.node is None:
            return
        node = self.c.nodes.get(pod.node)
        if node is not None and node.chip_broken:
            # The runtime initializes at the end of the startup, a second before the pod counts Running.
            init = max(0.0, self.c.t.pod_startup_s - 1.0)
            self.c.engine.after(init, "tpu-init-fails", self._init_fails, pod, node.name)

    def _init_fails(self, pod: SimPod, node_name: str) -> None:
        node = self.c.nodes.get(node_name)
        if node is None or not node.chip_broken or pod.node != node_name:
            return
        self._report_tpu_error(pod)

    # --- a trainer crashes on healthy hardware -------------------------------------------------------
    def _workload_crash(self, node: SimNode, rng: random.Random) -> None:
        """The pod on the node fails with an error; the JobSet restarts it where it likes."""
        if not node.holders:
            return
        self.node_died(node)
        for key in sorted(node.holders):
            pod = self.c.pods[key]
            pod.termination = crash(
                self.c.now, reports_tpu_error=rng.random() < self.c.t.crash_tpu_report_fraction
            )
            self.c.fail_pod(pod, CAUSE_FAILURE)

    def _repair_if(self, pool_name: str, generation: int) -> None:
        pool = self.c.pools[pool_name]
        if pool.generation == generation and not pool.repairing:
            self._start_repair(pool, self.c.t.repair_s)

    # --- the kubelet restarts ------------------------------------------------------------------------
    def _kubelet_pause(self, node: SimNode, seconds: float) -> None:
        inc = self.silence(node)
        node.repair_armed = False
        self.c.engine.after(seconds, "kubelet-back", self.kubelet_back, node.name, inc, True)

    # --- scheduled maintenance with notice -----------------------------------------------------------
    def _notice(self, f: Failure) -> None:
        """GKE labels the slice's nodes with the window start (epoch seconds). With several windows
        announced, the label shows the next one; nodes that register later (after a repair) get it too."""
        pool = f.node.rsplit("-n", 1)[0]
        if pool not in self.c.pools:
            return
        self._pending.setdefault(pool, []).append(f.at)
        self._label(pool)

    def _label(self, pool: str) -> None:
        upcoming = [w for w in self._pending.get(pool, ()) if w >= self.c.now]
        for name in sorted(self.c.pools[pool].nodes):
            member = self.c.nodes[name]
            labels = {key: v for key, v in member.api.labels.items() if key != k.SCHEDULED_MAINTENANCE_LABEL}
            if upcoming:
                labels[k.SCHEDULED_MAINTENANCE_LABEL] = f"{min(upcoming):.0f}"
            if labels != member.api.labels:
                self.c.update_node(member, replace(member.api, labels=labels))

    def _maintenance(self, pool: Pool, kind: str) -> None:
        """The window starts: GKE cordons and drains the slice; trainers checkpoint on SIGTERM and exit;
        then the slice is down for ``maintenance_s``."""
        t = self.c.t
        pending = self._pending.get(pool.name, [])
        if self.c.now in pending:
            pending.remove(self.c.now)
        for name in sorted(pool.nodes):
            node = self.c.nodes[name]
            self._report(node, kind)
            labels = {**node.api.labels, k.ACTIVE_MAINTENANCE_LABEL: k.ACTIVE_MAINTENANCE_VALUE}
            taints = (*node.api.taints, Taint(UNSCHEDULABLE_TAINT, "NoSchedule", time_added=self.c.now))
            self.c.update_node(node, replace(node.api, labels=labels, unschedulable=True, taints=taints))
        for name in sorted(pool.nodes):
            node = self.c.nodes[name]
            for key in sorted(node.holders):
                pod = self.c.pods[key]
                w = self.c.workloads.get(pod.workload)
                if w is not None and self.save_checkpoint is not None:
                    self.save_checkpoint(w)
                self.c.delete_pod(
                    pod, CAUSE_FAILURE, disruption="EvictionByEvictionAPI", exit_after=t.sigterm_checkpoint_s
                )
        drain = t.sigterm_checkpoint_s + t.pod_termination_s
        self.c.engine.after(
            drain, "maintenance-down", self._down, pool.name, pool.generation, t.maintenance_s
        )

    # --- Spot preemption with a 30 s notice ----------------------------------------------------------
    def _spot(self, pool: Pool, kind: str) -> None:
        t = self.c.t
        for name in sorted(pool.nodes):
            node = self.c.nodes[name]
            self._report(node, kind)
            taint = Taint(k.IMPENDING_TERMINATION_TAINT, "NoSchedule", time_added=self.c.now)
            self.c.update_node(node, replace(node.api, taints=(*node.api.taints, taint)))
        exit_after = min(t.pod_termination_s, SPOT_POD_GRACE_S)
        for name in sorted(pool.nodes):
            for key in sorted(self.c.nodes[name].holders):
                pod = self.c.pods[key]
                self.c.engine.after(exit_after, "node-shutdown", self._shutdown_pod, key, pod.uid)
        self.c.engine.after(
            t.spot_notice_s, "spot-reclaimed", self._down, pool.name, pool.generation, t.spot_return_s
        )

    def _shutdown_pod(self, key: str, uid: str) -> None:
        """Graceful node shutdown: the kubelet stops the pod and sets it Failed (reason Terminated) with a
        DisruptionTarget condition; the pod object stays."""
        pod = self.c.pods.get(key)
        if pod is None or pod.uid != uid or pod.terminal:
            return
        self.c.fail_pod(pod, CAUSE_FAILURE, disruption="TerminationByKubelet")

    def _down(self, pool_name: str, generation: int, seconds: float) -> None:
        pool = self.c.pools[pool_name]
        if pool.generation != generation or pool.repairing:
            return
        for name in sorted(pool.nodes):
            node = self.c.nodes[name]
            if node.alive:
                node.lease_last = node.lease_renewed(self.c.now, self.c.t.lease_renew_s)
                node.alive = False
            if node.vm_running:
                node.vm_running, node.vm_down_at = False, self.c.now
        self._start_repair(pool, seconds, replace_nodes=True)

    # --- GKE auto-repair: the whole multi-host pool is recreated ------------------------------------
    def _auto_repair(self, name: str, inc: int) -> None:
        node = self._current(name, inc)
        if node is None:
            return
        pool = self.c.pools[node.pool]
        if pool.repairing:
            return
        self._start_repair(pool, self.c.t.repair_s)

    def _start_repair(self, pool: Pool, seconds: float, *, replace_nodes: bool | None = None) -> None:
        pool.repairing = True
        pool.generation += 1
        if self.obs.repair:
            self.obs.repair(pool.name, self.c.now, True)
        replaces = self.c.t.repair_replaces_nodes if replace_nodes is None else replace_nodes
        if replaces:
            for member in sorted(pool.nodes):
                self.c.delete_node(self.c.nodes[member])
        else:
            for member in sorted(pool.nodes):
                node = self.c.nodes[member]
                if node.alive:
                    self._kill(node, back_after=None, repair=False)
                else:
                    node.repair_armed = False
        self.c.engine.after(seconds, "repair-done", self._repaired, pool.name, pool.generation)

    def _repaired(self, pool_name: str, generation: int) -> None:
        pool = self.c.pools[pool_name]
        if pool.generation != generation:
            return
        rng = random.Random(f"register:{self.seed}:{pool_name}:{generation}")
        delays = sorted((rng.uniform(0.0, self.c.t.node_register_spread_s), i) for i in range(pool.size))
        for delay, i in delays:
            self.c.engine.after(delay, "node-registered", self._register, pool_name, generation, i)

    def _register(self, pool_name: str, generation: int, index: int) -> None:
        pool = self.c.pools[pool_name]
        if pool.generation != generation:
            return
        name = f"{pool_name}-n{index}"
        existing = self.c.nodes.get(name)
        if existing is not None:
            self._renew(existing)
        else:
            self.c.add_node(pool, index, ready_at=self.c.now)
        if self._pending.get(pool_name):
            self._label(pool_name)
        if len(pool.nodes) == pool.size and all(self.c.nodes[n].alive for n in pool.nodes):
            pool.repairing = False
            if self.obs.repair:
                self.obs.repair(pool.name, self.c.now, False)

    def _renew(self, node: SimNode) -> None:
        """A recreated VM under the same Node object: Ready again, chips back, uncordoned; pods it no
        longer runs fail (or finish their deletion)."""
        node.chips_ok = True
        node.chip_broken = False
        node.incarnation += 1
        restore_chips(self.c, node)
        api = node.api
        labels = {
            key: v
            for key, v in api.labels.items()
            if key not in (k.ACTIVE_MAINTENANCE_LABEL, k.SCHEDULED_MAINTENANCE_LABEL)
        }
        taints = tuple(
            t for t in api.taints if t.key not in (UNSCHEDULABLE_TAINT, k.IMPENDING_TERMINATION_TAINT)
        )
        self.c.update_node(node, replace(api, labels=labels, taints=taints, unschedulable=False))
        self.kubelet_back(node.name, node.incarnation, False)
