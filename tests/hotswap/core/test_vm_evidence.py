"""The VM behind a silent node (``core/vm_evidence.py``): Compute Engine's evidence, and the VM reset.

Evidence: a suspect node's managed pods are force-deleted early only when the VM is confirmed not
running; fresh evidence of a running VM vetoes the NotReady timer. Statuses:
https://cloud.google.com/compute/docs/reference/rest/v1/instances (``status``), as the module cites
them.

The VM reset: a silent node of a declared pool whose VM Compute Engine reads RUNNING has its VM
reset, and its pods are force-deleted only once the reset is done. Attacked: every combination of
evidence, renewal, reset state and pool state (hypothesis) keeps the two rules a reviewer checks: a
reset only on a suspect node of a declared pool, and a force deletion never on a VM whose latest
evidence reads it running without a host error or a done reset since the kubelet was last heard.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tpu_platform.hotswap.core import (
    GONE,
    NOT_RUNNING,
    EvictPod,
    ForceDeletePod,
    Instance,
    Node,
    ResetVm,
    Settings,
    SettingsError,
    Snapshot,
    apply_actions,
    confirmed_down,
    decide,
    settings_from_mapping,
    suspects,
)
from tpu_platform.hotswap.core.times import CLOCK_SKEW_SECONDS
from tpu_platform.hotswap.core.vm_evidence import RESET, confirmation_problems, confirmed_by, known_running
from tpu_platform.testing.hotswap_builders import silent_node_cluster

DIED = 50_000.0
"""The kubelet of ``p-n2`` renews its Lease at ``DIED`` and then goes silent."""
STALE = 20.0
OFF = Settings(max_bad_node_fraction=1.0, lease_stale_seconds=STALE, force_delete_unconfirmed=True)
ON = OFF.replace(compute_corroboration=True)
RUNNING_STATUSES = ("RUNNING", "STOPPING", "SUSPENDING", "PROVISIONING", "STAGING", "PENDING_STOP", "")


def cluster_at(t: float, instance: Instance | None, *, terminating: bool = False) -> Snapshot:
    """p-n2 silent since ``DIED`` (Lease stale, node still Ready: NotReady comes later)."""
    return silent_node_cluster(t, instance, died=DIED, terminating=terminating)


def force_deleted(snap: Snapshot, s: Settings) -> list[ForceDeletePod]:
    return [a for a in decide(snap, s).actions if isinstance(a, ForceDeletePod)]


@pytest.mark.parametrize("status", sorted(NOT_RUNNING))
def test_a_vm_confirmed_down_has_its_pods_force_deleted_before_not_ready(status: str) -> None:
    t = DIED + STALE + OFF.unhealthy_after_seconds + 1.0
    ev = Instance(status=status, observed=t - 1.0)
    deletes = force_deleted(cluster_at(t, ev), ON)
    assert deletes and {d.node for d in deletes} == {"p-n2"}
    assert status in deletes[0].reason or status == GONE
    assert force_deleted(cluster_at(t, ev), OFF) == [], "off: the evidence is ignored"


@pytest.mark.parametrize("status", RUNNING_STATUSES)
def test_a_running_or_stopping_vm_is_never_force_deleted_early(status: str) -> None:
    t = DIED + STALE + OFF.unhealthy_after_seconds + 1.0
    assert force_deleted(cluster_at(t, Instance(status=status, observed=t - 1.0)), ON) == []


def test_no_evidence_stale_evidence_or_evidence_from_before_the_suspicion_confirms_nothing() -> None:
    t = DIED + STALE + 15.0
    assert force_deleted(cluster_at(t, None), ON) == []
    old = Instance(status="TERMINATED", observed=t - ON.instance_evidence_max_age_seconds - 1.0)
    assert force_deleted(cluster_at(t, old), ON) == []
    before = Instance(status="TERMINATED", observed=DIED + STALE - 1.0)
    assert force_deleted(cluster_at(t, before), ON) == []
    future = Instance(status="TERMINATED", observed=t + 5.0)
    assert force_deleted(cluster_at(t, future), ON) == []


def suspect_node(t: float, instance: Instance) -> Node:
    return next(n for n in cluster_at(t, instance).nodes if n.name == "p-n2")


def test_an_answer_read_within_the_skew_of_the_suspicion_does_not_confirm() -> None:
    """The suspicion's start is the kubelet's Lease time, the answer's the controller's clock, which
    may run up to the skew ahead: an answer it dates less than the skew after the suspicion began may
    have been read before it, when the VM's state said nothing of this suspicion."""
    began = DIED + STALE
    t = began + 10.0
    for lag in (0.0, 0.5, 1.0, CLOCK_SKEW_SECONDS - 0.001):
        early = Instance(status="TERMINATED", observed=began + lag)
        assert confirmed_down(suspect_node(t, early), ON, t) is None, lag
        assert force_deleted(cluster_at(t, early, terminating=True), ON) == [], lag
        running = Instance(status="RUNNING", observed=began + lag)
        assert not known_running(suspect_node(t, running), ON, t), "nor does it veto the timer"
    for lag in (CLOCK_SKEW_SECONDS, CLOCK_SKEW_SECONDS + 0.5, 5.0):
        late = Instance(status="TERMINATED", observed=began + lag)
        assert confirmed_down(suspect_node(t, late), ON, t) is not None, lag
        assert force_deleted(cluster_at(t, late, terminating=True), ON), lag
        assert known_running(suspect_node(t, replace(late, status="RUNNING")), ON, t)


@settings(max_examples=300, deadline=None)
@given(
    # Microseconds: the finest resolution of the times compared (RFC 3339 in the API, the controller's
    # clock); a float 1e-163 s before the suspicion is no reading anyone can make.
    read=st.integers(-20_000_000, 20_000_000).map(lambda us: us / 1e6),
    ahead=st.integers(-int(CLOCK_SKEW_SECONDS * 1e6), int(CLOCK_SKEW_SECONDS * 1e6)).map(lambda us: us / 1e6),
    age=st.floats(0.0, 10.0, allow_nan=False),
    status=st.sampled_from(sorted(NOT_RUNNING)),
)
def test_no_answer_read_before_the_suspicion_confirms_whatever_the_clock_skew(
    read: float, ahead: float, age: float, status: str
) -> None:
    """An answer truly read ``read`` seconds after the suspicion began (negative: before), by a
    controller whose clock runs ``ahead`` of the kubelet's within the skew, confirms only if it was read
    after the suspicion; and one read at least twice the skew after always confirms (while fresh)."""
    began = DIED + STALE
    observed = began + read + ahead
    t = max(observed, began) + age
    why = confirmed_down(suspect_node(t, Instance(status=status, observed=observed)), ON, t)
    if why is not None:
        assert read >= 0.0, f"read at {read!r}s of the suspicion, controller {ahead!r}s ahead"
    if read >= 2 * CLOCK_SKEW_SECONDS:
        assert why is not None


def test_a_host_error_confirms_only_after_the_last_renewal() -> None:
    t = DIED + STALE + 15.0
    after = Instance(status="RUNNING", observed=t - 1.0, host_error_at=DIED + 3.0)
    assert force_deleted(cluster_at(t, after), ON)
    before = Instance(status="RUNNING", observed=t - 1.0, host_error_at=DIED - 3.0)
    assert force_deleted(cluster_at(t, before), ON) == []
    node = cluster_at(t, replace(after)).nodes[2]
    assert confirmed_down(replace(node, lease_renewed=None, conditions=()), ON, t) is None, (
        "without a Lease renewal time a host error proves nothing about the current boot"
    )


def test_a_running_vm_vetoes_the_not_ready_timer_that_would_otherwise_delete() -> None:
    """The kubelet-restart case: NotReady past dead_node_confirm_seconds while the VM runs."""
    from tpu_platform.testing.hotswap_builders import fail_node

    t = DIED + 40.0 + OFF.dead_node_confirm_seconds + 5.0
    snap = cluster_at(t, Instance(status="RUNNING", observed=t - 1.0), terminating=True)
    nodes = tuple(fail_node(n, DIED + 40.0) if n.name == "p-n2" else n for n in snap.nodes)
    snap = replace(snap, nodes=nodes)
    assert force_deleted(snap, OFF), "without corroboration the timer deletes"
    assert force_deleted(snap, ON) == [], "a fresh RUNNING answer vetoes it"
    unknown = replace(snap, nodes=tuple(replace(n, instance=None) for n in nodes))
    assert force_deleted(unknown, ON), "no evidence: the conservative timer path as before"


def test_suspects_are_read_only_with_corroboration_on() -> None:
    t = DIED + STALE + 1.0
    snap = cluster_at(t, None)
    assert [n.name for n in suspects(snap.nodes, ON, t)] == ["p-n2"]
    assert suspects(snap.nodes, OFF, t) == ()


def test_settings_validate_the_evidence_age() -> None:
    with pytest.raises(SettingsError, match="instance_evidence_max_age_seconds"):
        settings_from_mapping({"compute_corroboration": True, "instance_evidence_max_age_seconds": 0})
    with pytest.raises(SettingsError, match="compute_corroboration"):
        settings_from_mapping({"compute_corroboration": "yes"})


@settings(max_examples=200, deadline=None)
@given(
    status=st.text(max_size=20) | st.sampled_from(sorted(NOT_RUNNING) + list(RUNNING_STATUSES)),
    observed=st.floats(DIED - 100, DIED + 200, allow_nan=False),
    host_error=st.none() | st.floats(DIED - 100, DIED + 200, allow_nan=False),
    step=st.floats(0, 150, allow_nan=False),
)
def test_fuzz_no_early_delete_without_a_documented_confirmation(
    status: str, observed: float, host_error: float | None, step: float
) -> None:
    """Before NotReady (the node is Ready, only its Lease is stale) a force delete needs a documented
    not-running status or a host error after the last renewal, read fresh after the suspicion."""
    t = DIED + step
    ev = Instance(status=status, observed=observed, host_error_at=host_error)
    deletes = force_deleted(cluster_at(t, ev, terminating=True), ON)
    fresh = DIED + STALE + CLOCK_SKEW_SECONDS <= observed <= t
    fresh = fresh and t - observed <= ON.instance_evidence_max_age_seconds
    documented = status in NOT_RUNNING or (host_error is not None and DIED <= host_error <= observed)
    if deletes:
        assert fresh and documented


def test_a_confirmation_declares_the_pool_at_once_and_fails_fast_in_the_same_reconcile() -> None:
    """T_bad lets a transient signal clear; a fresh not-running answer read after the suspicion is not
    one, so the pool is declared, its managed pods evicted and those on the dead VM force-deleted in
    one pass, 3 s into the suspicion (the answer read 2.5 s in: past the clock skew)."""
    t = DIED + STALE + 3.0
    d = decide(cluster_at(t, Instance(status="TERMINATED", observed=t - 0.5)), ON)
    pool = d.pool("p")
    assert pool is not None and pool.declared_now and pool.state.value == "Unhealthy"
    assert "TERMINATED" in pool.reason
    evicted = {a.name for a in d.actions if isinstance(a, EvictPod)}
    deleted = {a.name for a in d.actions if isinstance(a, ForceDeletePod)}
    assert len(evicted) == 4, "every managed pod of the slice is failed fast"
    assert deleted and {a.node for a in d.actions if isinstance(a, ForceDeletePod)} == {"p-n2"}
    assert deleted <= evicted
    kinds = [type(a) for a in d.actions if isinstance(a, EvictPod | ForceDeletePod)]
    assert kinds == sorted(kinds, key=lambda c: c is ForceDeletePod), (
        "the eviction comes first (it records DisruptionTarget), then the force delete"
    )


@pytest.mark.parametrize(
    "instance",
    [
        None,
        Instance(status="RUNNING", observed=DIED + STALE + 0.5),
        Instance(status="STOPPING", observed=DIED + STALE + 0.5),
        Instance(status="TERMINATED", observed=DIED + STALE - 0.5),
    ],
    ids=["no-answer", "running", "stopping", "read-before-suspicion"],
)
def test_without_a_fresh_confirmation_the_pool_waits_out_t_bad(instance: Instance | None) -> None:
    t = DIED + STALE + 1.0
    assert decide(cluster_at(t, instance), OFF).pool("p").state.value == "Suspect"  # type: ignore[union-attr]
    d = decide(cluster_at(t, instance), ON)
    pool = d.pool("p")
    assert pool is not None and pool.state.value == "Suspect"
    assert not [a for a in d.actions if isinstance(a, EvictPod | ForceDeletePod)]
    late = DIED + STALE + ON.unhealthy_after_seconds
    assert decide(cluster_at(late, instance), ON).pool("p").declared  # type: ignore[union-attr]


def test_a_confirmation_without_corroboration_on_changes_nothing() -> None:
    t = DIED + STALE + 1.0
    d = decide(cluster_at(t, Instance(status="TERMINATED", observed=t - 0.5)), OFF)
    assert d.pool("p").state.value == "Suspect"  # type: ignore[union-attr]
    assert confirmation_problems(cluster_at(t, Instance(status="GONE", observed=t)).nodes, OFF, t) == {}


def test_the_mass_outage_guard_still_holds_a_confirmed_pool() -> None:
    """A confirmation adds no node to the guard's count and does not bypass it."""
    t = DIED + STALE + 1.0
    snap = cluster_at(t, Instance(status="TERMINATED", observed=t - 0.5))
    held = decide(snap, ON.replace(max_bad_node_fraction=0.2))
    assert held.held and held.actions == ()


@settings(max_examples=300, deadline=None)
@given(
    status=st.sampled_from(sorted(NOT_RUNNING) + list(RUNNING_STATUSES)),
    observed=st.floats(DIED - 50, DIED + 120, allow_nan=False),
    host_error=st.none() | st.floats(DIED - 50, DIED + 120, allow_nan=False),
    step=st.floats(0, 120, allow_nan=False),
    renewed=st.floats(DIED - 30, DIED, allow_nan=False),
)
def test_fuzz_an_early_declaration_or_force_delete_needs_a_fresh_not_running_answer(
    status: str, observed: float, host_error: float | None, step: float, renewed: float
) -> None:
    """Before T_bad has passed, the pool is declared (and anything evicted or force-deleted) only on a
    fresh confirmation; before NotReady + ``dead_node_confirm_seconds`` (the node stays Ready here) no
    force delete happens without one, terminating or not."""
    t = DIED + step
    ev = Instance(status=status, observed=observed, host_error_at=host_error)
    for terminating in (False, True):
        snap = cluster_at(t, ev, terminating=terminating)
        nodes = tuple(replace(n, lease_renewed=renewed) if n.name == "p-n2" else n for n in snap.nodes)
        snap = replace(snap, nodes=nodes)
        d = decide(snap, ON)
        pool = d.pool("p")
        assert pool is not None
        node = next(n for n in snap.nodes if n.name == "p-n2")
        why = confirmed_down(node, ON, t)
        deleted = [a for a in d.actions if isinstance(a, ForceDeletePod)]
        if deleted:
            assert why is not None
            assert renewed + STALE <= observed <= t
        early = t < renewed + STALE + ON.unhealthy_after_seconds
        if pool.declared and early:
            assert why is not None, "declared before T_bad without a confirmation"
        if why is not None and not terminating:
            assert pool.declared_now and deleted, "a confirmation declares and force-deletes at once"


# --- the VM reset ------------------------------------------------------------------------------


RESET_ON = Settings(max_bad_node_fraction=1.0, lease_stale_seconds=STALE, compute_corroboration=True)
DECLARED = DIED + STALE + RESET_ON.unhealthy_after_seconds + 1.0
"""The silent node's pool is declared by then (its Lease stale for longer than T_bad)."""
VM = "gce://tpu-prod-1234/us-east5-b/gke-p-n2"


def reset_cluster_at(
    t: float, instance: Instance | None, *, terminating: bool = False, provider_id: str = VM
) -> Snapshot:
    """``p-n2`` silent since ``DIED``; every other node renews its Lease."""
    return silent_node_cluster(t, instance, died=DIED, terminating=terminating, provider_id=provider_id)


def resets(snap: Snapshot, s: Settings = RESET_ON) -> list[ResetVm]:
    return [a for a in decide(snap, s).actions if isinstance(a, ResetVm)]


def deletes(snap: Snapshot, s: Settings = RESET_ON) -> list[ForceDeletePod]:
    return [a for a in decide(snap, s).actions if isinstance(a, ForceDeletePod)]


def test_a_running_vm_of_a_declared_pool_is_reset_once_per_suspicion() -> None:
    t = DECLARED
    snap = reset_cluster_at(t, Instance("RUNNING", observed=t - 1.0))
    (reset,) = resets(snap)
    assert (reset.node, reset.pool, reset.provider_id) == ("p-n2", "p", VM)
    assert reset.since == DIED + STALE, "the suspicion began when the Lease went stale"
    assert deletes(snap) == [], "nothing is force-deleted before the reset is done"
    after = apply_actions(snap, decide(snap, RESET_ON).actions)
    assert resets(after) == [], "a pending reset is not sent again"


def test_no_reset_before_the_pool_is_declared_nor_without_fresh_running_evidence() -> None:
    early = DIED + STALE + 1.0
    assert resets(reset_cluster_at(early, Instance("RUNNING", observed=early - 0.5))) == [], (
        "not declared yet"
    )
    t = DECLARED
    assert resets(reset_cluster_at(t, None)) == [], "no evidence"
    stale = Instance("RUNNING", observed=t - RESET_ON.instance_evidence_max_age_seconds - 1.0)
    assert resets(reset_cluster_at(t, stale)) == [], "stale evidence"
    assert resets(reset_cluster_at(t, Instance("TERMINATED", observed=t - 1.0))) == [], "confirmed already"
    assert resets(reset_cluster_at(t, Instance("STOPPING", observed=t - 1.0))) == [], "stopping by itself"
    assert resets(reset_cluster_at(t, Instance("RUNNING", observed=t - 1.0), provider_id="")) == [], (
        "no VM named"
    )
    off = RESET_ON.replace(reset_silent_vms=False)
    assert resets(reset_cluster_at(t, Instance("RUNNING", observed=t - 1.0)), off) == [], "the reset off"


def test_a_node_without_managed_pods_is_never_reset() -> None:
    t = DECLARED
    snap = reset_cluster_at(t, Instance("RUNNING", observed=t - 1.0))
    bare = replace(snap, pods=tuple(p for p in snap.pods if p.node != "p-n2"))
    assert resets(bare) == []


def test_a_done_reset_after_the_last_renewal_lets_the_pods_go() -> None:
    t = DECLARED + 20.0
    done = Instance("RUNNING", observed=t - 1.0, reset_at=DECLARED + 1.0)
    snap = reset_cluster_at(t, done, terminating=True)
    node = next(n for n in snap.nodes if n.name == "p-n2")
    assert confirmed_by(node, RESET_ON, t) == RESET
    gone = deletes(snap)
    assert gone and {d.node for d in gone} == {"p-n2"} and "reset" in gone[0].reason
    assert resets(snap) == []
    pending = replace(done, reset_at=None, reset_pending=True)
    assert deletes(reset_cluster_at(t, pending, terminating=True)) == [], "pending is not done"
    before = replace(done, reset_at=DIED - 5.0)
    assert deletes(reset_cluster_at(t, before, terminating=True)) == [], (
        "a reset before the renewal ends nothing"
    )


instances = st.builds(
    Instance,
    status=st.sampled_from(["RUNNING", "TERMINATED", "STOPPING", "STAGING", "REPAIRING", ""]),
    observed=st.floats(DIED - 60.0, DIED + 200.0),
    host_error_at=st.none() | st.floats(DIED - 60.0, DIED + 200.0),
    reset_at=st.none() | st.floats(DIED - 60.0, DIED + 200.0),
    reset_pending=st.booleans(),
)


@settings(max_examples=300, deadline=None)
@given(
    instance=st.none() | instances,
    t=st.floats(DIED + 1.0, DIED + 200.0),
    terminating=st.booleans(),
    resetting=st.booleans(),
)
def test_resets_and_force_deletions_keep_the_vm_reset_rules(
    instance: Instance | None, t: float, terminating: bool, resetting: bool
) -> None:
    s = RESET_ON.replace(reset_silent_vms=resetting)
    snap = reset_cluster_at(t, instance, terminating=terminating)
    decision = decide(snap, s)
    declared = {p.name for p in decision.pools if p.declared or p.declared_now}
    for a in decision.actions:
        if isinstance(a, ResetVm):
            assert resetting and a.pool in declared and a.node == "p-n2"
            assert instance is not None and instance.status == "RUNNING" and not instance.reset_pending
        if isinstance(a, ForceDeletePod):
            assert instance is not None and a.node == "p-n2"
            running = instance.status in ("RUNNING", "STOPPING", "STAGING", "")
            guest_ended = any(
                at is not None and DIED <= at <= instance.observed
                for at in (instance.host_error_at, instance.reset_at)
            )
            assert not running or guest_ended, (
                f"force-deleted on a VM read {instance.status!r} with no host error or reset since"
            )
