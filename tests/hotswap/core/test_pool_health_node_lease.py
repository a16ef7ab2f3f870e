"""The opt-in node Lease signal: earlier detection of a silent kubelet, never a force delete."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tpu_platform.hotswap.core import (
    EvictPod,
    ForceDeletePod,
    Node,
    Pod,
    PoolState,
    Settings,
    SettingsError,
    Snapshot,
    decide,
    settings_from_mapping,
)
from tpu_platform.testing.hotswap_builders import fail_node, make_jobset, make_nodes, make_pool, running_pods

DIED = 50_000.0
"""The kubelet of ``p-n2`` renews its Lease at ``DIED`` and then goes silent."""
RENEW = 10.0
GRACE = 40.0
"""node-monitor-grace-period: Ready flips to Unknown this long after the kubelet goes silent."""
OFF = Settings(max_bad_node_fraction=1.0, force_delete_unconfirmed=True)
ON = OFF.replace(lease_stale_seconds=20.0)


def cluster_at(t: float, *, resumed_at: float | None = None) -> Snapshot:
    """The pool at ``t`` as the node lifecycle controller and the kubelet's Lease show it."""
    pool = make_pool("p")
    nodes = []
    for node in make_nodes(pool, ready_since=DIED - 3600):
        renewed = DIED - 3600 + RENEW * ((t - (DIED - 3600)) // RENEW)
        if node.name == "p-n2":
            if resumed_at is None or t < resumed_at:
                renewed = DIED
            else:
                renewed = resumed_at + RENEW * ((t - resumed_at) // RENEW)
            if resumed_at is None and t >= DIED + GRACE:
                node = fail_node(node, DIED + GRACE)  # noqa: PLW2901 - the kubelet's node, now NotReady
        nodes.append(replace(node, lease_renewed=renewed))
    js = make_jobset("job", priority=10)
    pods = running_pods(js, [pool], {"p": nodes})
    return Snapshot(now=t, pools=(pool,), nodes=tuple(nodes), jobsets=(js,), pods=pods)


def first_declared(settings: Settings, **kw: float) -> float | None:
    for step in range(0, 121):
        t = DIED + step
        status = decide(cluster_at(t, **kw), settings).pool("p")
        assert status is not None
        if status.state is PoolState.UNHEALTHY:
            return t
    return None


def test_stale_lease_declares_the_pool_twenty_seconds_before_not_ready() -> None:
    without = first_declared(OFF)
    with_lease = first_declared(ON)
    assert without == DIED + GRACE + OFF.unhealthy_after_seconds
    assert with_lease == DIED + 20.0 + ON.unhealthy_after_seconds
    assert without - with_lease == GRACE - 20.0
    status = decide(cluster_at(DIED + 30.0), ON).pool("p")
    assert status is not None and status.bad_since == DIED + 20.0, "T_bad counts from renewTime + stale"
    assert "lease not renewed" in status.reason


def test_renewals_resuming_before_t_bad_do_nothing() -> None:
    for step in range(0, 121):
        snap = cluster_at(DIED + step, resumed_at=DIED + 25.0)
        d = decide(snap, ON)
        status = d.pool("p")
        assert status is not None and status.state in (PoolState.HEALTHY, PoolState.SUSPECT)
        assert d.actions == (), f"t=+{step}s"


def stuck_on(node: Node) -> Pod:
    return Pod(
        "default",
        "stuck",
        "uid-stuck",
        jobset="default/job",
        job="job-slice-0",
        node=node.name,
        phase="Running",
        deletion_timestamp=DIED,
    )


def test_a_stale_lease_alone_never_force_deletes() -> None:
    snap = cluster_at(DIED + 30.0)
    slow = next(n for n in snap.nodes if n.name == "p-n2")
    snap = replace(snap, now=DIED + 3000.0, pods=(*snap.pods, stuck_on(slow)))
    d = decide(snap, ON)
    status = d.pool("p")
    assert status is not None and status.declared_now, "the pool is declared from the lease alone"
    assert any(isinstance(a, EvictPod) for a in d.actions), "and fail-fast acts on it"
    assert not any(isinstance(a, ForceDeletePod) for a in d.actions), "Ready node: never force-deleted"
    dead = replace(snap, nodes=tuple(fail_node(n, DIED + 40) if n is slow else n for n in snap.nodes))
    assert any(isinstance(a, ForceDeletePod) for a in decide(dead, ON).actions), "NotReady still confirms"


def state(snap: Snapshot, settings: Settings) -> PoolState:
    status = decide(snap, settings).pool("p")
    assert status is not None
    return status.state


def test_off_or_without_a_lease_the_signal_is_ignored() -> None:
    snap = replace(cluster_at(DIED + 35.0), now=DIED + 39.0)
    assert state(snap, ON) is PoolState.UNHEALTHY
    assert state(snap, OFF) is PoolState.HEALTHY
    unknown = replace(snap, nodes=tuple(replace(n, lease_renewed=None) for n in snap.nodes))
    assert state(unknown, ON) is PoolState.HEALTHY


@pytest.mark.parametrize(("value", "ok"), [(0, True), (15, False), (19.9, False), (20, True), ("30s", True)])
def test_lease_stale_seconds_is_off_or_at_least_two_renewals(value: float | str, ok: bool) -> None:
    if ok:
        assert settings_from_mapping({"lease_stale_seconds": value}).lease_stale_seconds >= 0
        return
    with pytest.raises(SettingsError) as err:
        settings_from_mapping({"lease_stale_seconds": value})
    assert err.value.field == "lease_stale_seconds"
    with pytest.raises(SettingsError):
        Settings(lease_stale_seconds=float(value))


def test_lease_signal_is_off_by_default() -> None:
    assert Settings().lease_stale_seconds == 0
