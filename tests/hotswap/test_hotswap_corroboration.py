"""Compute Engine corroboration: a suspect node's managed pods are force-deleted early only when the
VM is confirmed not running; fresh evidence of a running VM vetoes the NotReady timer.

Statuses: https://cloud.google.com/compute/docs/reference/rest/v1/instances (``status``), as the module
``tpu_platform.hotswap.core.corroboration`` cites them.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tpu_platform.hotswap.core import (
    GONE,
    NOT_RUNNING,
    ForceDeletePod,
    Instance,
    Settings,
    SettingsError,
    Snapshot,
    confirmed_down,
    decide,
    settings_from_mapping,
    suspects,
)
from tpu_platform.testing.hotswap_builders import make_jobset, make_nodes, make_pool, running_pods

DIED = 50_000.0
"""The kubelet of ``p-n2`` renews its Lease at ``DIED`` and then goes silent."""
STALE = 20.0
OFF = Settings(max_bad_node_fraction=1.0, lease_stale_seconds=STALE)
ON = replace(OFF, compute_corroboration=True)
RUNNING_STATUSES = ("RUNNING", "STOPPING", "SUSPENDING", "PROVISIONING", "STAGING", "PENDING_STOP", "")


def cluster_at(t: float, instance: Instance | None, *, terminating: bool = False) -> Snapshot:
    """p-n2 silent since ``DIED`` (Lease stale, node still Ready: NotReady comes later)."""
    pool = make_pool("p")
    nodes = []
    for node in make_nodes(pool, ready_since=DIED - 3600):
        if node.name == "p-n2":
            node = replace(node, lease_renewed=DIED, instance=instance)  # noqa: PLW2901
        else:
            node = replace(node, lease_renewed=t - 1.0)  # noqa: PLW2901
        nodes.append(node)
    js = make_jobset("job", priority=10)
    pods = running_pods(js, [pool], {"p": nodes})
    if terminating:
        pods = tuple(replace(p, deletion_timestamp=t - 1.0) for p in pods)
    return Snapshot(now=t, pools=(pool,), nodes=tuple(nodes), jobsets=(js,), pods=pods)


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
    fresh = DIED + STALE <= observed <= t and t - observed <= ON.instance_evidence_max_age_seconds
    documented = status in NOT_RUNNING or (host_error is not None and DIED <= host_error <= observed)
    if deletes:
        assert fresh and documented
