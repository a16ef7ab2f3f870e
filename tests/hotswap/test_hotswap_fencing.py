"""The fence: a silent node of a declared pool whose VM Compute Engine reads RUNNING has its VM reset,
and its pods are force-deleted only once the reset is done (``tpu_platform.hotswap.core.fencing``).

Attacked: every combination of evidence, renewal, reset state and pool state (hypothesis) keeps the two
rules a reviewer checks: a reset only on a suspect node of a declared pool, and a force deletion never
on a VM whose latest evidence reads it running without a host error or a done reset since the kubelet
was last heard.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from tpu_platform.hotswap.core import (
    ForceDeletePod,
    Instance,
    ResetVm,
    Settings,
    Snapshot,
    apply_actions,
    decide,
)
from tpu_platform.hotswap.core.corroboration import RESET, confirmed_by
from tpu_platform.testing.hotswap_builders import silent_node_cluster

DIED = 50_000.0
STALE = 20.0
ON = Settings(max_bad_node_fraction=1.0, lease_stale_seconds=STALE, compute_corroboration=True)
DECLARED = DIED + STALE + ON.unhealthy_after_seconds + 1.0
"""The silent node's pool is declared by then (its Lease stale for longer than T_bad)."""
VM = "gce://tpu-prod-1234/us-east5-b/gke-p-n2"


def cluster_at(
    t: float, instance: Instance | None, *, terminating: bool = False, provider_id: str = VM
) -> Snapshot:
    """``p-n2`` silent since ``DIED``; every other node renews its Lease."""
    return silent_node_cluster(t, instance, died=DIED, terminating=terminating, provider_id=provider_id)


def resets(snap: Snapshot, s: Settings = ON) -> list[ResetVm]:
    return [a for a in decide(snap, s).actions if isinstance(a, ResetVm)]


def deletes(snap: Snapshot, s: Settings = ON) -> list[ForceDeletePod]:
    return [a for a in decide(snap, s).actions if isinstance(a, ForceDeletePod)]


def test_a_running_vm_of_a_declared_pool_is_reset_once_per_suspicion() -> None:
    t = DECLARED
    snap = cluster_at(t, Instance("RUNNING", observed=t - 1.0))
    (reset,) = resets(snap)
    assert (reset.node, reset.pool, reset.provider_id) == ("p-n2", "p", VM)
    assert reset.since == DIED + STALE, "the suspicion began when the Lease went stale"
    assert deletes(snap) == [], "nothing is force-deleted before the reset is done"
    after = apply_actions(snap, decide(snap, ON).actions)
    assert resets(after) == [], "a pending reset is not sent again"


def test_no_reset_before_the_pool_is_declared_nor_without_fresh_running_evidence() -> None:
    early = DIED + STALE + 1.0
    assert resets(cluster_at(early, Instance("RUNNING", observed=early - 0.5))) == [], "not declared yet"
    t = DECLARED
    assert resets(cluster_at(t, None)) == [], "no evidence"
    stale = Instance("RUNNING", observed=t - ON.instance_evidence_max_age_seconds - 1.0)
    assert resets(cluster_at(t, stale)) == [], "stale evidence"
    assert resets(cluster_at(t, Instance("TERMINATED", observed=t - 1.0))) == [], "confirmed already"
    assert resets(cluster_at(t, Instance("STOPPING", observed=t - 1.0))) == [], "stopping by itself"
    assert resets(cluster_at(t, Instance("RUNNING", observed=t - 1.0), provider_id="")) == [], "no VM named"
    off = replace(ON, reset_silent_vms=False)
    assert resets(cluster_at(t, Instance("RUNNING", observed=t - 1.0)), off) == [], "the fence off"


def test_a_node_without_managed_pods_is_never_reset() -> None:
    t = DECLARED
    snap = cluster_at(t, Instance("RUNNING", observed=t - 1.0))
    bare = replace(snap, pods=tuple(p for p in snap.pods if p.node != "p-n2"))
    assert resets(bare) == []


def test_a_done_reset_after_the_last_renewal_lets_the_pods_go() -> None:
    t = DECLARED + 20.0
    done = Instance("RUNNING", observed=t - 1.0, reset_at=DECLARED + 1.0)
    snap = cluster_at(t, done, terminating=True)
    node = next(n for n in snap.nodes if n.name == "p-n2")
    assert confirmed_by(node, ON, t) == RESET
    gone = deletes(snap)
    assert gone and {d.node for d in gone} == {"p-n2"} and "reset" in gone[0].reason
    assert resets(snap) == []
    pending = replace(done, reset_at=None, reset_pending=True)
    assert deletes(cluster_at(t, pending, terminating=True)) == [], "pending is not done"
    before = replace(done, reset_at=DIED - 5.0)
    assert deletes(cluster_at(t, before, terminating=True)) == [], "a reset before the renewal fences nothing"


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
    fence=st.booleans(),
)
def test_resets_and_force_deletions_keep_the_fencing_rules(
    instance: Instance | None, t: float, terminating: bool, fence: bool
) -> None:
    s = replace(ON, reset_silent_vms=fence)
    snap = cluster_at(t, instance, terminating=terminating)
    decision = decide(snap, s)
    declared = {p.name for p in decision.pools if p.declared or p.declared_now}
    for a in decision.actions:
        if isinstance(a, ResetVm):
            assert fence and a.pool in declared and a.node == "p-n2"
            assert instance is not None and instance.status == "RUNNING" and not instance.reset_pending
        if isinstance(a, ForceDeletePod):
            assert instance is not None and a.node == "p-n2"
            running = instance.status in ("RUNNING", "STOPPING", "STAGING", "")
            fenced = any(
                at is not None and DIED <= at <= instance.observed
                for at in (instance.host_error_at, instance.reset_at)
            )
            assert not running or fenced, f"force-deleted on a VM read {instance.status!r} and not fenced"
