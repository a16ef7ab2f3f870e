"""The simulator and the core's reference semantics apply the controller's actions alike.

Two models read the core's actions: ``tpu_platform.hotswap.core.apply`` (on a snapshot, for the
idempotency properties and the decision tests' world) and ``tpu_platform.sim.snapshot.apply`` (on the
simulated cluster, for whatif). Here every decision with actions in simulated runs (with and without a
spare, a host death and a reboot, either restart strategy, a maintenance
move) is applied both ways at the same instant, and what the controller would read back
must be the same: each node's taints and annotations, which pods exist and which are terminating,
and each JobSet's annotations. The count of actions compared is printed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from tpu_platform.hotswap.core import Decision, Settings, Snapshot, apply_actions
from tpu_platform.sim import policies
from tpu_platform.sim.failures import MAINTENANCE
from tpu_platform.sim.policies import Hotswap
from tpu_platform.sim.run import Scenario, Simulation, stack_scenario
from tpu_platform.sim.scenarios import seed_jobsets, seed_scenario, seed_stack
from tpu_platform.sim.traces import Failure

SETTINGS = Settings(force_delete_unconfirmed=True)


def readable(snapshot: Snapshot) -> dict[str, Any]:
    """What the controller reads back after its writes."""
    return {
        "nodes": {
            n.name: (sorted((t.key, t.effect, t.value) for t in n.taints), sorted(n.annotations.items()))
            for n in snapshot.nodes
        },
        "pods": {p.key: p.deletion_timestamp is not None for p in snapshot.pods},
        "jobsets": {js.key: sorted(js.annotations.items()) for js in snapshot.jobsets},
    }


class Agreement:
    """Wraps the simulator's ``apply``: after it runs, the cluster is read back at the same instant
    and held against the reference semantics applied to the snapshot the decision was made on."""

    def __init__(self) -> None:
        self.compared: Counter[str] = Counter()
        self.pending: tuple[Snapshot, Decision] | None = None
        self.policy: Hotswap | None = None

    def on_decision(self, snap: Snapshot, decision: Decision) -> None:
        self.pending = (snap, decision)

    def apply(self, cluster: Any, actions: Any, **kw: Any) -> Counter[str]:
        counts = ORIGINAL_APPLY(cluster, actions, **kw)
        assert self.pending is not None and self.policy is not None
        snap, decision = self.pending
        expected = readable(apply_actions(snap, decision.actions))
        actual = readable(self.policy.snapshots.build())
        # Pods the simulated kubelet has not heard of yet and lingering ones aside, the same objects.
        assert actual["nodes"] == expected["nodes"], f"t={snap.now}: node state differs"
        assert actual["jobsets"] == expected["jobsets"], f"t={snap.now}: JobSet annotations differ"
        assert actual["pods"] == expected["pods"], f"t={snap.now}: pods differ"
        self.compared.update(type(a).__name__ for a in decision.actions)
        return counts


ORIGINAL_APPLY = policies.apply


@pytest.fixture
def agreement(monkeypatch: pytest.MonkeyPatch) -> Iterator[Agreement]:
    check = Agreement()
    monkeypatch.setattr(policies, "apply", check.apply)
    yield check


def run_checked(check: Agreement, scenario: Scenario, settings: Settings = SETTINGS) -> None:
    policy = Hotswap(settings, on_decision=check.on_decision)
    check.policy = policy
    Simulation(scenario, policy).run()


def maintenance_on_the_high_slice() -> Scenario:
    """Scheduled maintenance on the slice the high-priority JobSet runs on (no spare): the
    controller asks for a checkpoint on the JobSet and moves it before the window."""
    trace = (Failure(20_000.0, "seed-4x4-0-n0", None, MAINTENANCE),)
    return stack_scenario(seed_stack(2), trace=trace, end=40_000.0, workloads=seed_jobsets())


def test_the_simulator_applies_actions_as_the_reference_semantics_do(agreement: Agreement) -> None:
    for spare in (True, False):
        run_checked(agreement, seed_scenario(spare=spare))
        run_checked(agreement, seed_scenario(spare=spare, reboot_after=300.0))
        run_checked(
            agreement, seed_scenario(spare=spare, restart_strategy="Recreate", pod_failure_policy=False)
        )
    maintenance = maintenance_on_the_high_slice()
    run_checked(agreement, maintenance, maintenance.settings)
    total = sum(agreement.compared.values())
    print(f"actions applied alike by both models: {total} ({dict(sorted(agreement.compared.items()))})")
    assert {"PatchNode", "EvictPod", "ForceDeletePod", "AnnotateJobSet"} <= set(agreement.compared)
