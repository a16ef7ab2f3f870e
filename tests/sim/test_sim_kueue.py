"""Kueue admission in the simulator: quota, priority order, preemption, cohorts, StrictFIFO."""

from __future__ import annotations

from typing import Any

from tpu_platform.config import parse_platform
from tpu_platform.plan import load_stack_config, parse_stack_config, stack_file
from tpu_platform.sim.cluster import Cluster
from tpu_platform.sim.engine import Engine
from tpu_platform.sim.kueue import Kueue, setup_from_stack
from tpu_platform.sim.model import Workload, WorkloadSpec
from tpu_platform.sim.params import Timings

PRIORITIES = {"low": 1_000_000, "high": 2_000_000}


def _team(name: str, slices: int, **extra: Any) -> dict[str, Any]:
    return {"name": name, "quota": [{"topology": "4x4", "slices": slices, **extra.pop("quota", {})}], **extra}


class Harness:
    def __init__(self, teams: list[dict[str, Any]], slices: int, cohorts: list[Any] = ()) -> None:  # type: ignore[assignment]
        raw = {
            "project": "sim-project",
            "region": "us-east5",
            "zone": "us-east5-b",
            "cluster": {"name": "c"},
            "slicePools": [{"name": "s", "topology": "4x4", "count": slices}],
            "priorities": [{"name": "low", "value": 1_000_000}, {"name": "high", "value": 2_000_000}],
            "cohorts": [c if isinstance(c, dict) else {"name": c} for c in cohorts],
            "teams": teams,
        }
        self.cfg = parse_platform(raw)
        self.engine = Engine()
        self.cluster = Cluster(self.engine, Timings(), [])
        self.started: list[str] = []
        self.evicted: list[str] = []
        self.kueue = Kueue(self.cluster, setup_from_stack(self.cfg), start=self._start, evict=self._evict)

    def _start(self, w: Workload) -> None:
        self.started.append(w.spec.name)

    def _evict(self, w: Workload) -> None:
        self.evicted.append(w.spec.name)
        w.state = "queued"

    def submit(self, name: str, team: str, priority: str, slices: int = 1) -> Workload:
        spec = WorkloadSpec(
            name=name,
            namespace=team,
            queue=f"{team}-queue",
            priority_class=priority,
            priority=PRIORITIES[priority],
            topology="4x4",
            slices=slices,
        )
        w = self.kueue.submit(spec, shape_nodes=4, shape_chips=16)
        self.step()
        return w

    def finish(self, w: Workload) -> None:
        w.state = "done"
        self.kueue.release(w)
        self.step()

    def step(self) -> None:
        self.engine.run(self.engine.now + 1.0)

    def state(self) -> dict[str, str]:
        return {w.spec.name: w.state for w in self.cluster.workloads.values()}


def test_admits_up_to_the_quota_then_by_priority_before_age() -> None:
    h = Harness([_team("a", 2)], slices=2)
    first = h.submit("low-1", "a", "low")
    h.submit("low-2", "a", "low")
    h.submit("low-3", "a", "low")
    h.submit("high-1", "a", "high")
    assert h.state() == {"low-1": "admitted", "low-2": "admitted", "low-3": "queued", "high-1": "queued"}
    assert h.evicted == [], "withinClusterQueue defaults to Never: nothing is preempted"
    h.finish(first)
    assert h.state()["high-1"] == "admitted", "the freed quota goes to the higher priority, not the older"
    assert h.state()["low-3"] == "queued"
    assert h.started == ["low-1", "low-2", "high-1"]


def test_within_cluster_queue_lower_priority_evicts_the_most_recently_admitted_lower_priority() -> None:
    h = Harness([_team("a", 2, preemption={"withinClusterQueue": "LowerPriority"})], slices=2)
    h.submit("low-old", "a", "low")
    h.submit("low-new", "a", "low")
    h.submit("high", "a", "high")
    assert h.evicted == ["low-new"]
    assert h.state() == {"low-old": "admitted", "low-new": "queued", "high": "admitted"}
    h.submit("high-2", "a", "high", slices=2)
    assert h.state()["high-2"] == "queued", "cannot evict the equal-priority high"
    assert h.evicted == ["low-new"], "no eviction when evicting every candidate would still not make room"
    assert h.kueue.usage["a-cq"]["4x4"] == 2


def test_cohort_borrowing_limit_and_reclaim() -> None:
    teams = [
        _team("a", 1, cohortName="org", quota={"borrowingLimitSlices": 1}),
        _team("b", 1, cohortName="org", preemption={"reclaimWithinCohort": "Any"}),
    ]
    h = Harness(teams, slices=2, cohorts=["org"])
    h.submit("a-1", "a", "low")
    h.submit("a-2", "a", "low")
    h.submit("a-3", "a", "low")
    assert h.state() == {"a-1": "admitted", "a-2": "admitted", "a-3": "queued"}, "borrows one, not two"
    h.submit("b-1", "b", "low")
    assert h.evicted == ["a-2"], "b takes its lent slice back from the borrower"
    assert h.state()["b-1"] == "admitted"
    assert h.kueue.usage == {"a-cq": {"4x4": 1}, "b-cq": {"4x4": 1}}


def test_without_reclaim_the_owner_waits_for_its_lent_quota() -> None:
    teams = [_team("a", 1, cohortName="org"), _team("b", 1, cohortName="org")]
    h = Harness(teams, slices=2, cohorts=["org"])
    borrower = h.submit("a-1", "a", "low")
    h.submit("a-2", "a", "low")
    h.submit("b-1", "b", "high")
    assert h.state()["b-1"] == "queued" and h.evicted == []
    h.finish(borrower)
    assert h.state()["b-1"] == "admitted"


def test_strict_fifo_head_blocks_its_queue_best_effort_does_not() -> None:
    for strategy, small_state in (("StrictFIFO", "queued"), ("BestEffortFIFO", "admitted")):
        h = Harness([_team("a", 2, queueingStrategy=strategy)], slices=2)
        h.submit("one", "a", "low")
        h.submit("big", "a", "low", slices=2)
        h.submit("small", "a", "low")
        assert h.state() == {"one": "admitted", "big": "queued", "small": small_state}, strategy


def test_setup_from_the_prod_stack() -> None:
    cfg = parse_stack_config(load_stack_config(stack_file("prod")))
    setup = setup_from_stack(cfg)
    assert {cq.cohort for cq in setup.queues.values()} == {"research", "product"}
    assert {setup.root(cq.cohort) for cq in setup.queues.values()} == {"tpu-org"}, "one tree, one root"
    pretrain = setup.queues["llm-pretrain-cq"]
    assert pretrain.quotas["8x8"].nominal == 2
    assert pretrain.quotas["8x8"].lendable == 1
    # prod runs fair sharing, under which Kueue ignores borrowWithinCohort: the stack sets none.
    assert pretrain.borrow_threshold is None
    assert setup.local_queues[("serving-canary", "canary")] == "serving-eval-cq"
    assert setup.queues["serving-eval-cq"].strict_fifo


def _tree(lending: int | None) -> Harness:
    """A root with two cohorts: ``shared`` owns one slice of quota itself (lending at most ``lending``
    of it up the tree), ``other`` owns none; each has one ClusterQueue with no nominal quota."""
    shared_quota: dict[str, Any] = {"topology": "4x4", "slices": 1}
    if lending is not None:
        shared_quota["lendingLimitSlices"] = lending
    return Harness(
        [_team("x", 0, cohortName="shared"), _team("y", 0, cohortName="other")],
        slices=1,
        cohorts=[
            "root",
            {"name": "shared", "parentName": "root", "quota": [shared_quota]},
            {"name": "other", "parentName": "root"},
        ],
    )


def test_a_cohorts_own_quota_is_shared_down_its_subtree_first() -> None:
    """Kueue 0.19.2 ``pkg/cache/scheduler/resource_node.go``: a cohort's SubtreeQuota is its own nominal
    plus what its children lend; ``available`` walks up the tree. A queue under ``shared`` gets the
    cohort's slice; with the tree flattened to its root, both queues would compete for it alike."""
    h = _tree(lending=0)
    h.submit("y-job", "y", "low")
    h.submit("x-job", "x", "low")
    assert h.state() == {"y-job": "queued", "x-job": "admitted"}, "lendingLimit 0 keeps it in the subtree"


def test_without_a_lending_limit_the_cohort_lends_its_quota_up_the_tree() -> None:
    """Same tree, no lending limit: ``accumulateFromChild`` adds the whole subtree quota to the root, so
    a queue in the sibling cohort may borrow it."""
    h = _tree(lending=None)
    h.submit("y-job", "y", "low")
    assert h.state() == {"y-job": "admitted"}


def test_wait_for_pods_ready_evicts_a_workload_never_ready_and_requeues_it_after_the_backoff() -> None:
    """Kueue 0.19.2 ``pkg/controller/core/workload_controller.go`` (``admittedNotReadyWorkload``): an
    admitted workload without PodsReady within ``timeout`` of admission is evicted; it is requeued after
    ``backoffBaseSeconds * 2^(n-1)`` (``pkg/workload/workload.go``, ``UpdateRequeueState``)."""
    h = Harness([_team("a", 1)], slices=1)
    h.submit("stuck", "a", "low")
    wfpr = h.kueue.setup.wait_for_pods_ready
    assert wfpr is not None and wfpr.timeout_s == 1800.0, "enabled with 30 min by default in 0.19"
    h.engine.run(wfpr.timeout_s - 1)
    assert h.evicted == []
    h.engine.run(wfpr.timeout_s + 1)
    assert h.evicted == ["stuck"] and h.state() == {"stuck": "queued"}
    assert h.kueue.evictions == {"PodsReadyTimeout": 1}
    h.engine.run(wfpr.timeout_s + wfpr.backoff_base_s - 1)
    assert h.started == ["stuck"], "not before the backoff"
    h.engine.run(wfpr.timeout_s + wfpr.backoff_base_s + 1)
    assert h.started == ["stuck", "stuck"]


def test_wait_for_pods_ready_recovery_timeout_counts_from_losing_readiness() -> None:
    """Once PodsReady held, only ``recoveryTimeout`` applies, counted from when readiness was lost
    (WaitForRecovery)."""
    h = Harness([_team("a", 1)], slices=1)
    w = h.submit("job", "a", "low")
    h.kueue.ready_changed(w, True)
    h.engine.run(1900.0)
    assert h.evicted == [], "the start timeout no longer applies"
    h.kueue.ready_changed(w, False)
    wfpr = h.kueue.setup.wait_for_pods_ready
    assert wfpr is not None and wfpr.recovery_timeout_s is not None
    h.engine.run(1900.0 + wfpr.recovery_timeout_s - 1)
    assert h.evicted == []
    h.kueue.ready_changed(w, True)
    h.engine.run(1900.0 + wfpr.recovery_timeout_s + 1)
    assert h.evicted == [], "ready again in time"
