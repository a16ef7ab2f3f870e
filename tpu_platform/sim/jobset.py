"""The JobSet and Job controllers: attempts, exclusive-placement followers, failure policy, restarts,
productive time and checkpoints.

Failure semantics (JobSet v0.12.0, Job podFailurePolicy), each from upstream source:
- with a pod failure policy, only a pod in phase Failed (or deleted before reaching it) fails its Job,
  so a pod stuck Terminating on a dead node fails nothing; a DisruptionTarget condition makes the
  restart free (RestartJobSetAndIgnoreMaxRestarts), any other failure counts against maxRestarts;
- without one, a terminating pod already counts as failed (podReplacementPolicy TerminatingOrFailed,
  the Job controller's default without a pod failure policy);
- a restart deletes the child Jobs with Foreground propagation (kubernetes-sigs/jobset
  ``pkg/controllers/jobset_controller.go``, ``deleteJobs``), so a Job object stays until its pods are
  gone, and a Job of the same name is created again only once no Job of that name exists
  (``shouldCreateJob``). Under ``Recreate`` each Job waits for its own predecessor; under
  ``BlockingRecreate`` no Job is created while any previous one exists (``constructJobsFromTemplate``).
  A pod stuck Terminating on a dead node therefore blocks the restart under both strategies
  (kubernetes-sigs/jobset issue #576);
- Kueue suspending a JobSet suspends its Jobs (``suspendJobs``) and resuming unsuspends the same Jobs
  (``resumeJobsIfNecessary``): no Job is deleted, and the Job controller replaces a pod that is still
  terminating at once, unless a pod failure policy makes podReplacementPolicy ``Failed``, in which
  case the replacement waits until the old pod is terminal or gone.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from tpu_platform.sim.cluster import Cluster
from tpu_platform.sim.model import (
    BLOCKING,
    CAUSE_DONE,
    CAUSE_FAILURE,
    CAUSE_KUEUE,
    CAUSE_RESTART,
    SUCCEEDED,
    SimNode,
    SimPod,
    Workload,
)


class RunObserver:
    """Metrics hooks; the defaults do nothing."""

    def run_started(self, w: Workload, now: float) -> None:
        """Training resumed: pods Running, compiled, checkpoint restored."""
        return None

    def pods_running(self, w: Workload, now: float) -> None:
        """Every pod of the attempt bound to a live node and started."""
        return None

    def run_stopped(self, w: Workload, now: float, cause: str, lost_s: float, was_productive: bool) -> None:
        return None

    def restarted(self, w: Workload, now: float, cause: str, counted: bool) -> None:
        return None

    def finished(self, w: Workload, now: float) -> None:
        return None

    def suspended(self, w: Workload, now: float) -> None:
        """Kueue evicted the JobSet (it queues again)."""
        return None


class JobSetController:
    def __init__(self, cluster: Cluster, observer: RunObserver, release: Callable[[Workload], None]) -> None:
        self.c = cluster
        self.obs = observer
        self.release = release
        """Tells Kueue the workload no longer holds quota (finished or failed)."""
        self.ready_listeners: list[Callable[[Workload, bool], None]] = []
        """Told when all pods of a JobSet become ready (True) and when that ends (False): Kueue's
        PodsReady condition."""
        cluster.pod_listeners.append(self.on_pod)

    # --- attempts ------------------------------------------------------------------------------------
    def start(self, w: Workload) -> None:
        """Kueue admitted (unsuspended) the JobSet: its Jobs are resumed or created."""
        self.c.engine.after(self.c.t.kueue_admit_s, "jobset-unsuspend", self._resume, w.key, w.token)

    def _resume(self, key: str, token: int) -> None:
        w = self.c.workloads[key]
        if w.state != "admitted" or w.token != token:
            return
        self._begin_attempt(w, resumed=True)

    def _begin_attempt(self, w: Workload, *, resumed: bool) -> None:
        w.attempt += 1
        w.token += 1
        w.restarting = True
        w.resumed = resumed
        w.pending = set(range(w.spec.slices))
        self._create_ready(w)

    def _blocked(self, w: Workload) -> set[int]:
        """Job indexes of the current attempt that cannot be created yet (see the module docstring)."""
        old = [p for p in w.pods.values() if p.attempt < w.attempt]
        deleted = [p for p in old if p.job_deleted]
        blocked: set[int] = set()
        if deleted:
            blocked |= (
                set(w.pending) if w.spec.restart_strategy == BLOCKING else {p.slice_index for p in deleted}
            )
        if w.resumed and w.spec.pod_failure_policy:
            blocked |= {p.slice_index for p in old if not p.terminal}
        return blocked

    def _create_ready(self, w: Workload) -> None:
        if w.state != "admitted" or not w.pending:
            return
        ready = sorted(w.pending - self._blocked(w))
        if not ready:
            return
        self.c.engine.after(
            self.c.t.jobset_recreate_s, "jobset-create", self._create, w.key, w.attempt, tuple(ready)
        )

    def _create(self, key: str, attempt: int, indexes: tuple[int, ...]) -> None:
        w = self.c.workloads.get(key)
        if w is None or w.state != "admitted" or w.attempt != attempt:
            return
        blocked = self._blocked(w)
        for i in indexes:
            if i in w.pending and i not in blocked:
                w.pending.discard(i)
                pinned = w.assigned[i] if w.assigned is not None else None
                self.c.create_pod(w, slice_index=i, index=0, pool_selector=pinned)
        if not w.pending:
            w.restarting = False

    def _followers(self, key: str, leader_key: str, attempt: int) -> None:
        w = self.c.workloads.get(key)  # a JobSet that failed for good meanwhile is gone
        leader = self.c.pods.get(leader_key)
        if w is None or w.attempt != attempt or leader is None or leader.terminating or leader.pool is None:
            return
        for j in range(1, w.nodes_per_slice):
            self.c.create_pod(w, slice_index=leader.slice_index, index=j, pool_selector=leader.pool)

    # --- pod lifecycle -------------------------------------------------------------------------------
    def on_pod(self, pod: SimPod, what: str) -> None:
        w = self.c.workloads.get(pod.workload)
        if w is None:
            return
        if what == "bound":
            if pod.leader and pod.attempt == w.attempt and w.nodes_per_slice > 1:
                self.c.engine.after(
                    self.c.t.follower_create_s, "followers", self._followers, w.key, pod.key, w.attempt
                )
            self.check_ready(w)
            return
        if pod.attempt < w.attempt and what in ("gone", "failed"):
            self._create_ready(w)
        if w.state != "admitted" or pod.attempt != w.attempt:
            return
        self.stop_run(w, pod.cause or CAUSE_FAILURE)
        pfp = w.spec.pod_failure_policy
        failed = (
            what == "failed"
            or (what == "gone" and pod.phase != SUCCEEDED)
            or (what == "terminating" and not pfp)
        )
        if failed:
            self.restart(w, pod.cause or CAUSE_FAILURE, counted=not (pfp and pod.disruption is not None))

    def node_died(self, node: SimNode) -> None:
        """The kubelet is silent: every workload with a pod there stops making progress (it hangs)."""
        for key in sorted(node.holders):
            pod = self.c.pods[key]
            w = self.c.workloads.get(pod.workload)
            if w is not None and w.state == "admitted" and pod.attempt == w.attempt and not w.restarting:
                self.stop_run(w, CAUSE_FAILURE, hit=True)

    def restart(self, w: Workload, cause: str, *, counted: bool) -> None:
        """The JobSet's failure policy restarts it: every child Job is deleted (Foreground) and recreated
        as its predecessor goes away."""
        self.obs.restarted(w, self.c.now, cause, counted)
        if counted:
            w.restarts += 1
        if w.restarts > w.spec.max_restarts:
            self._terminate(w, "failed", cause)
            return
        for p in w.pods.values():
            p.job_deleted = True
        self._begin_attempt(w, resumed=False)
        for p in sorted(w.pods.values(), key=lambda p: p.key):
            if p.attempt < w.attempt:
                self.c.delete_pod(p, CAUSE_RESTART)

    def suspend(self, w: Workload) -> None:
        """Kueue evicted the workload: its Jobs are suspended (their pods deleted) and it queues again."""
        self.obs.suspended(w, self.c.now)
        self.stop_run(w, CAUSE_KUEUE)
        w.state = "queued"
        w.restarting = False
        w.pending = set()
        w.token += 1
        for p in sorted(w.pods.values(), key=lambda p: p.key):
            self.c.delete_pod(p, CAUSE_KUEUE, disruption="EvictedByKueue")

    def _terminate(self, w: Workload, state: str, cause: str) -> None:
        self.stop_run(w, cause)
        w.state = state
        w.token += 1
        for p in sorted(w.pods.values(), key=lambda p: p.key):
            if state == "done":
                self.c.fail_pod(p, CAUSE_DONE, phase=SUCCEEDED)
            self.c.delete_pod(p, CAUSE_DONE if state == "done" else CAUSE_RESTART)
        self.release(w)
        self.obs.finished(w, self.c.now)

    # --- progress ------------------------------------------------------------------------------------
    def check_ready(self, w: Workload) -> None:
        """All pods of the attempt bound to live nodes: Running once the last one has started up."""
        if w.state != "admitted" or w.restarting or w.productive or w.running_since is not None:
            return
        pods = w.current_pods()
        if len(pods) != w.spec.slices * w.nodes_per_slice:
            return
        latest = 0.0
        for p in pods:
            if not p.holding or p.terminating or not self.c.kubelet_alive(p) or p.bound_at is None:
                return
            latest = max(latest, p.bound_at)
        ready_at = latest + self.c.t.pod_startup_s
        self.c.engine.at(max(ready_at, self.c.now), "pods-running", self._running, w.key, w.token)

    def _intact(self, w: Workload) -> bool:
        pods = w.current_pods()
        return len(pods) == w.spec.slices * w.nodes_per_slice and all(
            p.holding and not p.terminating and self.c.kubelet_alive(p) for p in pods
        )

    def _running(self, key: str, token: int) -> None:
        w = self.c.workloads[key]
        if w.token != token or w.productive or w.state != "admitted" or w.restarting:
            return
        if w.running_since is not None or not self._intact(w):
            return
        w.running_since = self.c.now
        w.token += 1
        self.obs.pods_running(w, self.c.now)
        for listener in self.ready_listeners:
            listener(w, True)
        warmup = self.c.t.compile_s + self.c.t.restore_s
        self.c.engine.after(warmup, "training-resumed", self._productive, w.key, w.token)

    def _productive(self, key: str, token: int) -> None:
        w = self.c.workloads[key]
        if w.token != token or w.productive or w.state != "admitted" or w.restarting:
            return
        if not self._intact(w):
            return
        w.productive_since = self.c.now
        w.token += 1
        self.obs.run_started(w, self.c.now)
        if w.spec.work_s is not None:
            remaining = max(0.0, w.spec.work_s - w.progress)
            self.c.engine.after(remaining, "jobset-complete", self._complete, w.key, w.token)

    def save_checkpoint(self, w: Workload) -> None:
        """The trainer writes a checkpoint now (told to stop with time to spare): nothing is lost."""
        if w.productive_since is None:
            return
        now = self.c.now
        progress = w.progress + (now - w.productive_since)
        w.progress = w.checkpoint_progress = progress
        w.last_checkpoint_at = now
        w.productive_since = now

    def _complete(self, key: str, token: int) -> None:
        w = self.c.workloads[key]
        if w.token != token or not w.productive:
            return
        self._terminate(w, "done", CAUSE_DONE)

    def stop_run(self, w: Workload, cause: str, *, hit: bool = False) -> None:
        """End the current run (if any): progress since the last checkpoint is lost unless it completed."""
        ready = w.running_since is not None or w.productive
        if w.running_since is not None:
            w.running_since = None
            w.token += 1
        if ready:
            for listener in self.ready_listeners:
                listener(w, False)
        was_productive = w.productive
        if not was_productive and not hit:
            return
        now = self.c.now
        lost = 0.0
        if w.productive_since is not None:
            progress = w.progress + (now - w.productive_since)
            start, base = w.productive_since, w.progress
            w.productive_since = None
            if cause == CAUSE_DONE and w.spec.work_s is not None:
                w.progress = w.spec.work_s
            else:
                interval = w.spec.checkpoint_s
                cp = w.checkpoint_progress
                if interval:
                    reached = math.floor(progress / interval) * interval
                    if reached > cp:
                        cp = reached
                        w.last_checkpoint_at = start + (cp - base)
                lost = progress - cp
                w.progress = cp
                w.checkpoint_progress = cp
            w.token += 1
        self.obs.run_stopped(w, now, cause, lost, was_productive)

    def last_checkpoint_time(self, w: Workload, now: float) -> float | None:
        """Wall time of the last checkpoint written, as the workload would report it."""
        interval = w.spec.checkpoint_s
        if w.productive_since is None or not interval:
            return w.last_checkpoint_at
        progress = w.progress + (now - w.productive_since)
        reached = math.floor(progress / interval) * interval
        if reached > w.checkpoint_progress:
            return w.productive_since + (reached - w.progress)
        return w.last_checkpoint_at
