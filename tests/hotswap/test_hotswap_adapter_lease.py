"""The node Lease cache: only with ``lease_stale_seconds`` on, watch-fed like the others, joined into
the snapshot's nodes by node name."""

from __future__ import annotations

from typing import Any

from tests.hotswap.hotswap_fakes import FakeApi, node_lease_obj
from tests.hotswap.test_hotswap_adapter_controller import NOW, Clock, cluster, sync
from tpu_platform.hotswap.adapter.config import Config, RuntimeConfig
from tpu_platform.hotswap.adapter.controller import Controller
from tpu_platform.hotswap.adapter.metrics import Metrics
from tpu_platform.hotswap.core import Settings

NS = "kube-node-lease"
ON = Settings(lease_stale_seconds=20)


def controller(api: FakeApi, settings: Settings) -> Controller:
    return Controller(
        api, Config(settings, RuntimeConfig()), identity="hotswap-0", metrics=Metrics(), clock=Clock(NOW)
    )


def with_leases(api: FakeApi, renewed: dict[str, float | None]) -> FakeApi:
    for node, t in renewed.items():
        api.add("leases", node_lease_obj(node, t))
    return api


def fresh(**stale: float | None) -> dict[str, float | None]:
    """Every node of pools a and b renewed 3 s ago, except those given."""
    out: dict[str, float | None] = {f"{p}-{i}": NOW - 3 for p in ("a", "b") for i in range(4)}
    out.update({name.replace("_", "-"): t for name, t in stale.items()})
    return out


def event(kind: str, obj: dict[str, Any], rv: str) -> dict[str, Any]:
    return {"type": kind, "object": {**obj, "metadata": {**obj["metadata"], "resourceVersion": rv}}}


def test_off_there_is_no_lease_cache_and_no_lease_call() -> None:
    api = with_leases(cluster(), fresh())
    c = controller(api, Settings())
    assert c.leases is None and len(c.caches) == 4
    for cache in c.caches:
        cache.relist()
    assert not any("leases" in call for call in api.calls)
    snap = c.snapshot(NOW)
    assert all(n.lease_renewed is None for n in snap.nodes)


def test_on_leases_are_listed_and_watched_in_kube_node_lease_only() -> None:
    api = with_leases(cluster(), fresh())
    api.add("leases", node_lease_obj("b-0", NOW - 900, namespace="elsewhere"))
    c = controller(api, ON)
    assert c.leases is not None and c.leases in c.caches
    api.watch_streams["leases"] = [[event("MODIFIED", node_lease_obj("b-1", NOW - 1), "200")]]
    c.leases.watch_once()
    lease_calls = [call for call in api.calls if call[1] == "leases"]
    assert lease_calls == [
        ("list", "leases", "", NS),
        ("watch", "leases", str(api.rv), 300, NS),
    ]
    renewed = {lease.node: lease.renewed for lease in c.leases.values()}
    assert renewed["b-1"] == NOW - 1 and renewed["b-0"] == NOW - 3, "the other namespace is not read"
    assert not c.wake.is_set(), "renewals (every 10 s per node) do not trigger reconciles"


def test_a_gone_lease_watch_relists() -> None:
    api = with_leases(cluster(), fresh())
    c = controller(api, ON)
    assert c.leases is not None
    c.leases.relist()
    api.watch_streams["leases"] = [[{"type": "ERROR", "object": {"code": 410, "reason": "Expired"}}]]
    c.leases.watch_once()
    assert c.leases.lists == 2
    assert [call[0] for call in api.calls if call[1] == "leases"] == ["list", "watch", "list"]


def renew(api: FakeApi, at: float, *, except_nodes: tuple[str, ...] = ()) -> None:
    """Every kubelet with a Lease renews it at ``at``, except the silent ones."""
    for key, obj in list(api.objects["leases"].items()):
        node = obj["metadata"]["name"]
        if node not in except_nodes and "renewTime" in obj["spec"]:
            api.objects["leases"][key] = node_lease_obj(node, at)


def test_heartbeats_are_timed_on_the_controllers_clock_and_a_silent_node_declares_the_pool() -> None:
    # The kubelets' clocks run 600 s behind the controller's: renewTime alone would look stale.
    skew = 600.0
    api = with_leases(cluster(), {n: t - skew if t is not None else None for n, t in fresh(b_3=None).items()})
    del api.objects["leases"][f"{NS}/b-1"]
    clock = Clock(NOW)
    c = Controller(api, Config(ON, RuntimeConfig()), identity="hotswap-0", metrics=Metrics(), clock=clock)
    sync(c)
    nodes = {n.name: n for n in c.snapshot(NOW).nodes}
    assert nodes["b-0"].lease_renewed == NOW, "first seen counts as renewed now, whatever its clock says"
    assert nodes["b-1"].lease_renewed is None, "no Lease: no signal"
    assert nodes["b-3"].lease_renewed is None, "a Lease without renewTime: no signal"
    first = c.reconcile_once()
    assert first is not None
    first_b = first.pool("b")
    assert first_b is not None and not first_b.declared_now, "skewed clocks alone declare nothing"

    # b-2's kubelet falls silent; every other kubelet keeps renewing (on its own skewed clock).
    for step in range(1, 5):
        clock.t = NOW + 10 * step
        renew(api, clock.t - skew, except_nodes=("b-2",))
        sync(c)
        nodes = {n.name: n for n in c.snapshot(clock.t).nodes}
        assert nodes["b-0"].lease_renewed == clock.t
        assert nodes["b-2"].lease_renewed == NOW
    d = c.reconcile_once()
    assert d is not None
    status = d.pool("b")
    assert status is not None and status.declared_now and "lease not renewed" in status.reason
    evicted = sorted(w[2] for w in api.writes() if w[0] == "evict_pod")
    assert [p for p in evicted if p.startswith("low-")] == [f"low-{i}" for i in range(4)]
    deleted = [w[2] for w in api.writes() if w[0] == "delete_pod"]
    assert not [p for p in deleted if p.startswith("low-")], "a stale lease never force-deletes"

    off = with_leases(cluster(), fresh(b_2=NOW - 35))
    c_off = controller(off, Settings())
    sync(c_off)
    d_off = c_off.reconcile_once()
    assert d_off is not None
    status_off = d_off.pool("b")
    assert status_off is not None and not status_off.declared_now


def test_lease_observations_time_changes_not_timestamps() -> None:
    from tpu_platform.hotswap.adapter.convert import LeaseObservations, NodeLease

    seen = LeaseObservations()
    assert seen.observe([NodeLease("n", 5.0)], now=100.0) == [NodeLease("n", 100.0)]
    assert seen.observe([NodeLease("n", 5.0)], now=130.0) == [NodeLease("n", 100.0)], "no change: silent"
    assert seen.observe([NodeLease("n", 15.0)], now=140.0) == [NodeLease("n", 140.0)], "renewed: heard now"
    assert seen.observe([], now=150.0) == []
    assert seen.observe([NodeLease("n", 15.0)], now=160.0) == [NodeLease("n", 160.0)], "forgotten once gone"
