"""A scenario (fleet, queues, workloads, failure trace, timings) and one policy, wired into one run."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tpu_platform.config import PlatformConfig
from tpu_platform.hotswap.core import Settings
from tpu_platform.sim.checkpoints import CheckpointResponder
from tpu_platform.sim.cluster import Cluster
from tpu_platform.sim.downtime import Downtime, Tee
from tpu_platform.sim.engine import Engine
from tpu_platform.sim.infra import Infra, Observer
from tpu_platform.sim.jobset import JobSetController
from tpu_platform.sim.kueue import Kueue, QueueSetup, setup_from_stack
from tpu_platform.sim.kueue_tas import KueueTas
from tpu_platform.sim.metrics import Recorder, Summary, summarize
from tpu_platform.sim.model import Pool, SimNode, SimPod, Workload, WorkloadSpec
from tpu_platform.sim.params import Timings
from tpu_platform.sim.policies import Baseline, ControllerStats, Hotswap, Policy
from tpu_platform.sim.scheduler import Scheduler
from tpu_platform.sim.traces import Failure
from tpu_platform.sim.versions import node_monitor_grace_s, stack_minor
from tpu_platform.sim.vm_reset import VmResets
from tpu_platform.sim.workload import MixOptions, Successor, mix_from_stack, pools_from_stack


@dataclass(frozen=True)
class Scenario:
    pools: tuple[Pool, ...]
    """Templates; every run gets fresh copies."""
    queues: QueueSetup
    workloads: tuple[WorkloadSpec, ...]
    trace: tuple[Failure, ...]
    end: float
    seed: int = 0
    timings: Timings = field(default_factory=Timings)
    settings: Settings = field(default_factory=Settings)
    """The controller's settings (the hotswap policy only)."""
    successor: Successor | None = None
    """Closed-loop backlog: what to submit when a JobSet finishes."""
    high_priority: int | None = None
    """JobSets at or above this priority count for MTTR; default: the highest submitted priority."""
    measure_from: float = 0.0

    @property
    def top_priority(self) -> int:
        if self.high_priority is not None:
            return self.high_priority
        return max((w.priority for w in self.workloads), default=0)


@dataclass
class Result:
    policy: str
    scenario: Scenario
    metrics: Recorder
    summary: Summary
    cluster: Cluster
    controller: ControllerStats | None
    events: int
    wall_s: float
    log: list[tuple[float, str]] | None = None
    downtime: Downtime | None = None
    """High-priority downtime, planned moves at a checkpoint apart from the rest."""


def stack_settings(cfg: PlatformConfig) -> Settings:
    """The controller settings the stack deploys: its ``hotswap.settings``, corroboration switch
    (on unless the stack turns it off; a kubeconfig-mode stack has it only with the Google identity
    it names, ``hotswap.googleIdentity``) and teams, over the controller's defaults."""
    return cfg.controller_settings()


def stack_timings(cfg: PlatformConfig) -> Timings:
    """The default timings with the node-monitor-grace-period of the stack's Kubernetes version."""
    return Timings(node_monitor_grace_s=node_monitor_grace_s(stack_minor(cfg)))


def stack_scenario(
    cfg: PlatformConfig,
    *,
    trace: tuple[Failure, ...] = (),
    end: float,
    seed: int = 0,
    workloads: list[WorkloadSpec] | None = None,
    timings: Timings | None = None,
    mix: MixOptions | None = None,
    successor: Successor | None = None,
) -> Scenario:
    return Scenario(
        pools=tuple(pools_from_stack(cfg)),
        queues=setup_from_stack(cfg),
        workloads=tuple(workloads if workloads is not None else mix_from_stack(cfg, mix)),
        trace=trace,
        end=end,
        seed=seed,
        timings=timings or stack_timings(cfg),
        settings=stack_settings(cfg),
        successor=successor,
    )


class Simulation:
    def __init__(self, scenario: Scenario, policy: Policy, *, record: bool = False) -> None:
        s = scenario
        self.scenario = s
        self.policy = policy
        self.engine = Engine(record=record)
        pools = [Pool(p.name, p.topology, p.chips, p.size, p.team) for p in s.pools]
        self.shapes = {p.topology: (p.size, p.chips) for p in pools}
        self.cluster = c = Cluster(self.engine, s.timings, pools)
        self.metrics = m = Recorder(
            high_priority=s.top_priority,
            total_chips=sum(p.chips for p in pools),
            start=s.measure_from,
            settle_s=s.timings.incident_settle_s,
        )
        self.downtime = Downtime(high_priority=s.top_priority)
        self.jobsets = JobSetController(c, Tee(m, self.downtime), release=self._release)
        self.checkpoints = CheckpointResponder(c, self.jobsets.save_checkpoint, seed=s.seed)
        c.sigterm_checkpoint = self.jobsets.save_checkpoint
        self.kueue = Kueue(
            c,
            s.queues,
            start=self.jobsets.start,
            evict=self.jobsets.suspend,
            on_preempt=m.kueue_preempted,
            tas=policy.tas,
        )
        self.jobsets.ready_listeners.append(self.kueue.ready_changed)
        self.scheduler = Scheduler(
            c, random.Random(f"scheduler:{s.seed}"), on_preempt=m.scheduler_preempted, on_hazard=self._hazard
        )
        self.infra = Infra(
            c,
            s.trace,
            seed=s.seed,
            node_died=self.jobsets.node_died,
            observer=Observer(failed=self._incident, absorbed=m.failure_absorbed, repair=m.repair),
            target=self._top_node,
            save_checkpoint=self.jobsets.save_checkpoint,
            toleration_s=policy.toleration_s(s.timings),
        )
        self.resets = VmResets(c, self.infra)
        c.occupancy_listeners.append(self._occupied)
        for spec in s.workloads:
            self.engine.at(spec.submit_at, "submit", self._submit, spec)
        policy.attach(c, self.jobsets.last_checkpoint_time, self.kueue)

    def _incident(self, now: float, node: SimNode, kind: str) -> None:
        """An incident hit ``node``: every JobSet with a pod of its current attempt there is touched."""
        self.metrics.node_failed(now, node, kind)
        for key in sorted(node.holders):
            pod = self.cluster.pods[key]
            w = self.cluster.workloads.get(pod.workload)
            if w is not None and pod.attempt == w.attempt:
                self.metrics.incident(now, w, kind)

    def _submit(self, spec: WorkloadSpec) -> None:
        if spec.topology not in self.shapes:
            raise ValueError(f"workload {spec.key}: no slice of topology {spec.topology} in the fleet")
        nodes, chips = self.shapes[spec.topology]
        self.kueue.submit(spec, shape_nodes=nodes, shape_chips=chips)

    def _release(self, w: Workload) -> None:
        self.kueue.release(w)
        if not w.pods:
            del self.cluster.workloads[w.key]
        if self.scenario.successor is not None:
            nxt = self.scenario.successor(w.spec, self.engine.now)
            if nxt is not None:
                self._submit(nxt)

    def _top_node(self) -> str | None:
        """The last node of the first pool of the highest-priority productive JobSet (largest first)."""
        running = [w for w in self.cluster.workloads.values() if w.productive]
        if not running:
            return None
        w = min(running, key=lambda w: (-w.priority, -w.chips, w.key))
        pool = min(p.pool for p in w.current_pods() if p.pool is not None)
        return max(self.cluster.pools[pool].nodes, key=lambda n: int(n.rsplit("-n", 1)[1]))

    def _hazard(self, pod: SimPod, pool: str) -> None:
        self.metrics.hazard(self.engine.now, pod, pool)

    def _occupied(self, pool: str, workload: str, holding: bool) -> None:
        self.metrics.occupied(pool, workload, self.engine.now, holding)

    def stuck(self, patience: float = 600.0) -> tuple[str, ...]:
        """JobSets holding part of a slice while other pods of theirs have been unschedulable for longer
        than ``patience``: with exclusive placement's priority-scoped anti-affinity, a lower-priority
        leader can sit on a node of the pool a higher-priority leader took, and if nobody preempts it
        the two wait for each other."""
        now = self.engine.now
        out = []
        for w in self.cluster.workloads.values():
            pods = w.current_pods()
            bound = any(p.holding for p in pods)
            waiting = [
                p.unschedulable_since for p in pods if p.node is None and p.unschedulable_since is not None
            ]
            if bound and waiting and now - min(waiting) > patience:
                out.append(w.key)
        return tuple(sorted(out))

    def run(self) -> Result:
        t0 = time.perf_counter()
        self.engine.run(self.scenario.end)
        self.metrics.close(self.scenario.end)
        self.downtime.close(self.scenario.end)
        controller = self.policy.stats if isinstance(self.policy, Hotswap) else None
        summary = summarize(
            self.metrics,
            self.scenario.end,
            len(controller.preemptions) if controller is not None else 0,
            stuck=self.stuck(),
        )
        return Result(
            policy=self.policy.name,
            scenario=self.scenario,
            metrics=self.metrics,
            summary=summary,
            cluster=self.cluster,
            controller=controller,
            events=self.engine.fired,
            wall_s=time.perf_counter() - t0,
            log=self.engine.log,
            downtime=self.downtime,
        )


def run(scenario: Scenario, policy: Policy, *, record: bool = False) -> Result:
    return Simulation(scenario, policy, record=record).run()


def compare(scenario: Scenario, *, verify_idle: bool = False) -> tuple[Result, Result]:
    """The recipe and the controller on the same scenario (same trace, same seed)."""
    return run(scenario, Baseline()), run(scenario, Hotswap(scenario.settings, verify_idle=verify_idle))


POLICIES = ("recipe", "kueue_tas", "hotswap")


def make_policy(name: str, scenario: Scenario, *, verify_idle: bool = False) -> Policy:
    if name == "recipe":
        return Baseline()
    if name == "kueue_tas":
        return KueueTas()
    if name == "hotswap":
        return Hotswap(scenario.settings, verify_idle=verify_idle)
    raise ValueError(f"unknown policy {name!r}; known: {', '.join(POLICIES)}")


def compare_all(
    scenario: Scenario, *, verify_idle: bool = False, on_policy: Callable[[str], object] | None = None
) -> dict[str, Result]:
    """All three policies on the same scenario (same trace, same seed); ``on_policy(name)`` before each."""
    results: dict[str, Result] = {}
    for name in POLICIES:
        if on_policy is not None:
            on_policy(name)
        results[name] = run(scenario, make_policy(name, scenario, verify_idle=verify_idle))
    return results
