"""What Compute Engine does with a silently dead host's VM, and the shipped settings' answer to each:
force-delete only on Compute Engine's word, never a pod whose guest may still run."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tpu_platform.config import HotswapConfig
from tpu_platform.sim.host_fates import FATES, HUNG, RESTARTED, STOPPED, host_fate
from tpu_platform.sim.kueue_tas import KueueTas
from tpu_platform.sim.params import Timings
from tpu_platform.sim.policies import Hotswap
from tpu_platform.sim.provenance import CHOSEN, PROVENANCE, SENSITIVITY, SOURCES, missing, parameters
from tpu_platform.sim.run import Result, run
from tpu_platform.sim.scenarios import seed_scenario

SHIPPED = HotswapConfig().controller_settings()
FAIL_AT = 1800.0


def only(fate: str) -> Timings:
    """Timings under which every silent death has ``fate``."""
    hung = 1.0 if fate == HUNG else 0.0
    restarted = 1.0 if fate == RESTARTED else 0.0
    return replace(Timings(), hung_guest_fraction=hung, compute_restart_fraction=restarted)


def high_mttr(r: Result) -> float:
    (episode,) = r.metrics.episodes
    assert episode.seconds is not None
    return episode.seconds


def test_the_shipped_settings_corroborate_and_never_force_delete_on_a_timer() -> None:
    assert SHIPPED.compute_corroboration and not SHIPPED.force_delete_unconfirmed


@pytest.mark.parametrize("fate", [STOPPED, RESTARTED])
def test_a_vm_compute_engine_reports_down_is_cleared_at_its_word(fate: str) -> None:
    t = only(fate)
    r = run(seed_scenario(spare=True, timings=t), Hotswap(SHIPPED, verify_idle=True))
    assert r.cluster.force_deletes == 1 and r.cluster.unsafe_force_deletes == 0
    # NotReady (at most 55 s) or Compute Engine's status (30 s late) first, then the restart.
    assert high_mttr(r) <= 55.0 + t.pod_startup_s + 15.0


def test_a_hung_guest_is_reset_then_cleared_and_without_the_fence_waits_for_repair() -> None:
    """Compute Engine reads RUNNING: nothing may force-delete the pod before its guest is gone (it may
    resume and write the same checkpoints). The shipped fence resets the VM once the pool is declared
    and clears the pod when the reset is done; without it the restart waits for GKE's repair. Kueue's
    FailureRecoveryPolicy force-deletes on the unreachable taint alone, which is unsafe here."""
    t = only(HUNG)
    scenario = seed_scenario(spare=True, timings=t)
    hot = run(scenario, Hotswap(SHIPPED, verify_idle=True))
    assert SHIPPED.reset_silent_vms
    assert hot.cluster.force_deletes == 1 and hot.cluster.unsafe_force_deletes == 0
    declared = 55.0 + SHIPPED.unhealthy_after_seconds
    assert high_mttr(hot) <= declared + t.compute_reset_s + t.compute_reread_s + t.pod_startup_s + 15.0
    unfenced = run(scenario, Hotswap(SHIPPED.replace(reset_silent_vms=False), verify_idle=True))
    assert unfenced.cluster.force_deletes == 0 and unfenced.cluster.unsafe_force_deletes == 0
    assert high_mttr(unfenced) >= t.auto_repair_after_s
    tas = run(scenario, KueueTas())
    assert tas.cluster.unsafe_force_deletes >= 1


def test_a_kubelet_restart_on_a_declared_pool_is_rebooted_never_force_deleted_unsafely() -> None:
    """The fence's false positive: a kubelet silent past the declaration gets its VM reset (its slice
    was given up already); the pod goes only once the reset is done, so never while its guest runs."""
    from tpu_platform.sim.failures import KUBELET_RESTART
    from tpu_platform.sim.traces import Failure

    base = seed_scenario(spare=True)
    node = "seed-4x4-0-n1"
    scenario = replace(base, trace=(Failure(FAIL_AT, node, back_after=240.0, kind=KUBELET_RESTART),))
    r = run(scenario, Hotswap(SHIPPED, verify_idle=True))
    assert r.cluster.unsafe_force_deletes == 0
    assert r.cluster.force_deletes >= 1, "reset, then cleared before the kubelet's own return"


def test_the_timer_path_force_deletes_a_hung_guests_pod() -> None:
    """Why the NotReady timer is opt-in: on a hung guest it is an unsafe force deletion."""
    opted = SHIPPED.replace(force_delete_unconfirmed=True, compute_corroboration=False)
    r = run(seed_scenario(spare=True, timings=only(HUNG)), Hotswap(opted, verify_idle=True))
    assert r.cluster.unsafe_force_deletes == 1


@given(
    seed=st.integers(0, 10_000),
    at=st.floats(0, 1e7, allow_nan=False),
    hung=st.floats(0, 1),
    restarted=st.floats(0, 1),
)
@settings(max_examples=200, deadline=None)
def test_a_fate_depends_on_the_incident_alone(seed: int, at: float, hung: float, restarted: float) -> None:
    t = replace(Timings(), hung_guest_fraction=hung, compute_restart_fraction=restarted)
    fate = host_fate(t, seed, "n0", at)
    assert fate in FATES and fate == host_fate(t, seed, "n0", at)
    if hung == 0.0:
        assert fate != HUNG
    if hung == 0.0 and restarted == 0.0:
        assert fate == STOPPED


def test_every_timing_has_a_source_and_every_range_is_of_a_chosen_one() -> None:
    assert missing() == []
    assert {source for source, _ in PROVENANCE.values()} <= set(SOURCES)
    assert all(PROVENANCE[name][0] == CHOSEN for name in SENSITIVITY)
    t = Timings()
    assert all(t.__getattribute__(name) in values for name, values in SENSITIVITY.items()), (
        "each range contains the default it is shown around"
    )
    assert parameters(t)["pod_startup_s"] == {
        "value": t.pod_startup_s,
        "source": CHOSEN,
        "ref": PROVENANCE["pod_startup_s"][1],
    }
