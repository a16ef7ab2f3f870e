"""The live tier's scripted incidents replayed on the simulator, each step timed as the live test times it.

The live tier (``tests/live/cluster/incidents.py``) runs one incident at a time on the dev stack: the
research team's high-priority JobSet and the applied team's low-priority one, each on one of the two
4x4 slices within its own quota (``Recreate``, no podFailurePolicy, 1 s grace), then an incident on a
node under the high-priority JobSet. It waits for named steps in order and records each one's time
from the incident. Here the same fleet, JobSets and incident run on the simulator, and a probe reads
the simulated cluster every ``PROBE_S`` for the same steps, each only once the one before it is
reached, exactly as the live test's waits run one after another.

Steps the live test only holds for (``"60 s later"``) have no predicate and are left out of the table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from tpu_platform.hotswap.core import constants as k
from tpu_platform.plan.stacks import load_stack_config, parse_stack_config, stack_file
from tpu_platform.sim.failures import CHIP_ERROR, HOST_DEATH, KUBELET_RESTART, MAINTENANCE, SPOT_PREEMPTION
from tpu_platform.sim.model import RECREATE, RUNNING, SimPod, WorkloadSpec
from tpu_platform.sim.params import Timings
from tpu_platform.sim.run import Simulation, make_policy, stack_scenario
from tpu_platform.sim.traces import Failure

PROBE_S = 0.1
"""How often the probe reads the simulated cluster (the live tier polls the API server)."""
START_S = 600.0
"""The incident's time (plus a phase): both JobSets have long been Running."""
PHASES_S = (0.0, 2.5, 5.0, 7.5)
"""Where in the kubelet's 10 s Lease-renewal cycle the incident falls: a live incident's is unknown, so
each scripted incident runs at each of these and the table shows the range."""
WATCH_S = 400.0
VMS = 4
KUBELET_SILENT_S = 70.0
"""The live tier's kubelet restart: silent for 70 s from the incident."""
MAINTENANCE_LEAD_S = 420.0
"""The live tier's notice: the window 420 s ahead (inside the controller's request period)."""

# The live test's incident names (``tests/live``) and the simulator's failure kinds.
KINDS = {
    "silent host death": HOST_DEATH,
    "kubelet restart 70 s": KUBELET_RESTART,
    "chip error": CHIP_ERROR,
    "maintenance notice": MAINTENANCE,
    "Spot notice": SPOT_PREEMPTION,
    "hung guest": HOST_DEATH,
}
HUNG = frozenset({"hung guest"})
"""Kinds whose silent host keeps a guest that Compute Engine reads RUNNING (``host_fates.HUNG``)."""
RESET_S = 2.0
"""The live tier's Compute Engine double: a reset's Operation is DONE 2 s after the call
(``tests/live/cluster/compute_double.py``, ``reset_s``)."""
REBOOT_S = 5.0
"""The live tier's reboot of a reset VM (``tests/live/cluster/incidents.py``, ``REBOOT_S``)."""
CHIPS_WITHDRAWN_S: Mapping[str, float | None] = {"hotswap": 0.0, "recipe": None, "kueue_tas": None}
"""When the live tier's chip error withdraws the broken chip from the node's allocatable, per policy:
``tests/live/test_hotswap_notices.py`` writes it with the error (kwok has no device plugin, so the
test is the device plugin); the baselines (``incidents.chip_error_restarts_in_place``) never do."""


@dataclass(frozen=True)
class View:
    """What a step's predicate reads: the simulation, the node hit, and where the JobSets were."""

    sim: Simulation
    victim: str
    broken_pool: str
    spare_pool: str
    before: frozenset[str]

    def high_pods(self) -> list[SimPod]:
        return [p for p in self.sim.cluster.pods.values() if p.workload == HIGH_KEY]

    def running_high(self) -> list[SimPod]:
        return [p for p in self.high_pods() if p.phase == RUNNING and p.deletion is None]

    def ready(self, node: str) -> bool:
        """The Node reads Ready=True; a deleted Node (a reclaimed Spot VM's) is not Ready."""
        sim_node = self.sim.cluster.nodes.get(node)
        cond = None if sim_node is None else sim_node.api.condition("Ready")
        return cond is not None and cond.status == "True"


def _pool_tainted(v: View) -> bool:
    """Every node of the pool tainted, as the live test reads it: a pool without nodes is not."""
    pool = v.sim.cluster.pools[v.broken_pool]
    nodes = [v.sim.cluster.nodes[n] for n in pool.nodes]
    return bool(nodes) and all(n.api.has_taint(k.UNHEALTHY_TAINT_KEY) for n in nodes)


def _running_on(v: View, pool: str | None, *, fresh: bool = False) -> bool:
    pods = v.running_high()
    if len(pods) != VMS:
        return False
    if fresh and {p.uid for p in pods} & v.before:
        return False
    return pool is None or {p.pool for p in pods} == {pool}


def _workload_state(v: View) -> str | None:
    w = v.sim.cluster.workloads.get(HIGH_KEY)
    return None if w is None else w.state


def _annotations(v: View) -> Mapping[str, str]:
    w = v.sim.cluster.workloads.get(HIGH_KEY)
    return {} if w is None else w.annotations


def _restarts(v: View) -> int:
    w = v.sim.cluster.workloads.get(HIGH_KEY)
    return 0 if w is None else w.restarts


STEPS: dict[str, Callable[[View], bool]] = {
    "node NotReady": lambda v: not v.ready(v.victim),
    "node Ready again": lambda v: v.ready(v.victim),
    "pool tainted": _pool_tainted,
    "high pods Running on the spare slice": lambda v: _running_on(v, v.spare_pool),
    "high pods Running": lambda v: _running_on(v, None),
    "high pods Running again": lambda v: _running_on(v, None, fresh=True),
    "JobSet restarted": lambda v: _restarts(v) >= 1,
    "pod on the dead node force-deleted": lambda v: not [p for p in v.high_pods() if p.node == v.victim],
    "pod on the node evicted": lambda v: all(
        p.deletion is not None for p in v.high_pods() if p.node == v.victim
    ),
    "Workload evicted": lambda v: _workload_state(v) == "queued",
    "checkpoint requested": lambda v: k.CHECKPOINT_REQUEST_ANNOTATIONS[0] in _annotations(v),
    "VM reset": lambda v: v.sim.cluster.nodes[v.victim].reset_sent_at is not None,
}
"""The live tier's steps (their names as its tests record them) as predicates over the simulation."""

HIGH = WorkloadSpec(
    name="high-train",
    namespace="research",
    queue="research-queue",
    priority_class="high-priority-job",
    priority=2_000_000,
    topology="4x4",
    restart_strategy=RECREATE,
    pod_failure_policy=False,
    team="research",
)
LOW = replace(
    HIGH,
    name="low-train",
    namespace="applied",
    queue="applied-queue",
    priority_class="low-priority-job",
    priority=1_000_000,
    team="applied",
)
HIGH_KEY = HIGH.key


def live_like_timings(
    base: Timings, *, pod_startup_s: float, tas_toleration_s: float, chips_withdrawn_s: float | None = None
) -> Timings:
    """The simulator's timings with what the live tier sets itself: the pods' start-up (kwok), their
    1 s grace, the trainers answering a checkpoint request at once (the live test answers it), the
    notice 420 s ahead, and the ``kueue_tas`` tolerations of the run; its Compute Engine double
    (``tests/live/cluster/compute_double.py``), which reads a killed VM TERMINATED at once, finishes
    a reset in 2 s and never fails or restarts one (a hung guest is its own kind); the harness's 5 s
    reboot of a reset VM; the chips of a chip error withdrawn when the live test withdraws them
    (``chips_withdrawn_s``: at the error, or never); and NotReady from the last renewal the node
    lifecycle controller saw, as kube-controller-manager counts it."""
    return replace(
        base,
        pod_startup_s=pod_startup_s,
        termination_grace_s=1.0,
        pod_termination_s=min(base.pod_termination_s, 1.0),
        tas_toleration_s=tas_toleration_s,
        not_ready_from_last_renewal=True,
        maintenance_notice_s=MAINTENANCE_LEAD_S,
        checkpoint_never_answers=0.0,
        checkpoint_answer_min_s=0.0,
        checkpoint_answer_max_s=0.0,
        compute_status_lag_s=0.0,
        compute_reset_s=RESET_S,
        vm_boot_s=REBOOT_S,
        compute_api_error_rate=0.0,
        hung_guest_fraction=0.0,
        compute_restart_fraction=0.0,
        chips_withdrawn_report_s=chips_withdrawn_s,
    )


def simulate(
    kind: str,
    policy: str,
    steps: Sequence[str],
    *,
    pod_startup_s: float,
    tas_toleration_s: float = 0.0,
    kubelet_silent_s: float = KUBELET_SILENT_S,
    phase_s: float = 0.0,
    stack: str = "dev",
) -> dict[str, float]:
    """Seconds from the incident to each of ``steps`` (those with a predicate) on the simulator.

    ``kubelet_silent_s``: how long a kubelet restart keeps the node silent (the live tier's is 70 s
    of silence plus kwok's own restart, so the node's measured return is passed here)."""
    start = START_S + phase_s
    cfg = parse_stack_config(load_stack_config(stack_file(stack)))
    probe_scenario = stack_scenario(cfg, end=start - 1, workloads=[HIGH, LOW])
    timings = live_like_timings(
        probe_scenario.timings,
        pod_startup_s=pod_startup_s,
        tas_toleration_s=tas_toleration_s,
        chips_withdrawn_s=CHIPS_WITHDRAWN_S.get(policy),
    )
    if kind in HUNG:
        timings = replace(timings, hung_guest_fraction=1.0)
    placed = Simulation(replace(probe_scenario, timings=timings), make_policy(policy, probe_scenario))
    placed.run()
    victim, broken, spare = _placement(placed)
    failure = _failure(KINDS[kind], victim, timings, start, kubelet_silent_s)
    scenario = replace(probe_scenario, timings=timings, trace=(failure,), end=start + WATCH_S)
    sim = Simulation(scenario, make_policy(policy, scenario))
    view = View(sim, victim, broken, spare, frozenset())
    wanted = [s for s in steps if s in STEPS]
    found: dict[str, float] = {}

    def look() -> None:
        nonlocal view
        now = sim.engine.now
        if not view.before and now >= start:
            view = replace(view, before=frozenset(p.uid for p in view.running_high()))
        if now >= start:
            while len(found) < len(wanted) and STEPS[wanted[len(found)]](view):
                found[wanted[len(found)]] = round(now - start, 1)
        if len(found) < len(wanted):
            sim.engine.after(PROBE_S, "calibration-probe", look)

    sim.engine.at(start - PROBE_S, "calibration-probe", look)
    sim.run()
    return found


def _placement(sim: Simulation) -> tuple[str, str, str]:
    """The node the live tier would hit (one under the high JobSet) and both JobSets' slices."""
    pods = sim.cluster.pods.values()
    high = sorted((p for p in pods if p.workload == HIGH_KEY and p.phase == RUNNING), key=lambda p: p.key)
    low = {p.pool for p in pods if p.workload == LOW.key and p.phase == RUNNING}
    if len(high) != VMS or len(low) != 1:
        raise RuntimeError(
            f"the JobSets are not both Running at {sim.engine.now:.0f} s: high {len(high)}, low {low}"
        )
    (broken,) = {p.pool for p in high}
    victim = str(high[0].node)
    return victim, str(broken), str(next(iter(low)))


def _failure(kind: str, victim: str, timings: Timings, start: float, silent_s: float) -> Failure:
    if kind == KUBELET_RESTART:
        return Failure(start, victim, back_after=silent_s, kind=kind)
    if kind == MAINTENANCE:
        return Failure(start + timings.maintenance_notice_s, victim, kind=kind)
    # A chip error and a Spot notice at the incident; a Spot notice on the victim's whole pool
    # (``Infra.fail`` preempts the pool of the node it names): the taint at once, the pods Failed
    # after their grace, the VMs stopped ``Timings.spot_notice_s`` later.
    return Failure(start, victim, kind=kind)
