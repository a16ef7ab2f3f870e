"""Pool memory: a pool's health state survives GKE recreating all of its nodes."""

from __future__ import annotations

from dataclasses import replace

from tests.hotswap.hotswap_fakes import FakeApi, node_obj
from tpu_platform.hotswap.adapter.config import Config, RuntimeConfig
from tpu_platform.hotswap.adapter.controller import Controller
from tpu_platform.hotswap.adapter.metrics import Metrics
from tpu_platform.hotswap.core import (
    Decision,
    EmitEvent,
    Node,
    PatchNode,
    PoolMemory,
    PoolState,
    Settings,
    Snapshot,
    apply_actions,
    constants,
    decide,
    format_time,
)
from tpu_platform.testing.hotswap_builders import fail_node, heal_node, make_nodes, make_pool

NOW = 50_000.0
SETTINGS = Settings(max_bad_node_fraction=1.0)
POOL = make_pool("p")


def fresh_nodes(ready_since: float, generation: int) -> tuple[Node, ...]:
    """The pool's nodes as GKE re-registers them after a repair: same names, new uids, no state."""
    return tuple(
        replace(n, uid=f"uid-{n.name}-gen{generation}") for n in make_nodes(POOL, ready_since=ready_since)
    )


def step(snap: Snapshot, at: float, memory: PoolMemory | None) -> tuple[Snapshot, Decision]:
    """Decide at ``at`` with ``memory`` and return the snapshot with the actions applied."""
    snap = replace(snap, now=at)
    d = decide(snap, SETTINGS, memory=memory)
    after = apply_actions(snap, d.actions)
    assert decide(after, SETTINGS, memory=d.memory).actions == (), "idempotent with memory"
    return after, d


def declared_pool() -> tuple[Snapshot, Decision]:
    """Pool ``p`` declared unhealthy at NOW (a node went silent 100 s earlier), actions applied."""
    nodes = list(make_nodes(POOL, ready_since=NOW - 3600))
    nodes[0] = fail_node(nodes[0], NOW - 100)
    snap, d = step(Snapshot(NOW, (POOL,), tuple(nodes)), NOW, None)
    status = d.pool("p")
    assert status is not None and status.declared_now
    assert all(n.has_taint(constants.UNHEALTHY_TAINT_KEY) for n in snap.nodes)
    return snap, d


def events(d: Decision) -> list[str]:
    return [a.reason for a in d.actions if isinstance(a, EmitEvent)]


def test_recreated_pool_is_handed_back_at_once_without_memory() -> None:
    """The behaviour without memory is unchanged: fresh nodes carry no state, the pool looks healthy."""
    snap, _ = declared_pool()
    repaired = replace(snap, now=NOW + 600, nodes=fresh_nodes(NOW + 590, 1))
    d = decide(repaired, SETTINGS)
    status = d.pool("p")
    assert status is not None and status.state is PoolState.HEALTHY and not status.recovered_now
    assert d.actions == ()
    assert decide(repaired, SETTINGS, memory=PoolMemory()).actions == ()


def test_recreated_pool_keeps_the_hold_with_memory_then_recovers() -> None:
    snap, d = declared_pool()
    record = d.memory.get("p")
    assert record is not None and record.declared and record.unhealthy_since == NOW
    repaired = replace(snap, nodes=fresh_nodes(NOW + 590, 1))

    snap, d = step(repaired, NOW + 600, d.memory)
    status = d.pool("p")
    assert status is not None and status.state is PoolState.RECOVERING
    assert status.unhealthy_since == NOW and status.clean_since == NOW + 590
    assert status.recovers_at == NOW + 590 + SETTINGS.healthy_after_seconds, "T_good from the nodes' time"
    assert events(d) == []
    patches = [a for a in d.actions if isinstance(a, PatchNode)]
    assert len(patches) == POOL.expected_nodes and all(p.add_taints for p in patches)
    for n in snap.nodes:
        assert n.has_taint(constants.UNHEALTHY_TAINT_KEY)
        assert n.annotations[constants.UNHEALTHY_SINCE_ANNOTATION] == format_time(NOW)
        assert n.annotations[constants.CLEAN_SINCE_ANNOTATION] == format_time(NOW + 590)

    snap, d = step(snap, NOW + 709, d.memory)
    status = d.pool("p")
    assert status is not None and status.state is PoolState.RECOVERING and d.actions == ()

    snap, d = step(snap, NOW + 710, d.memory)
    status = d.pool("p")
    assert status is not None and status.recovered_now and status.state is PoolState.HEALTHY
    assert events(d) == ["HotswapPoolRecovered"]
    assert not any(n.has_taint(constants.UNHEALTHY_TAINT_KEY) for n in snap.nodes)
    record = d.memory.get("p")
    assert record is not None and not record.declared and record.history == (NOW,)


def test_memory_survives_a_snapshot_without_the_pools_nodes() -> None:
    """While the pool is being recreated it may have no Node objects at all (and no pool entry)."""
    snap, d = declared_pool()
    gone = decide(Snapshot(NOW + 300, (), ()), SETTINGS, memory=d.memory)
    assert gone.memory == d.memory
    _, back = step(replace(snap, nodes=fresh_nodes(NOW + 590, 1)), NOW + 600, gone.memory)
    status = back.pool("p")
    assert status is not None and status.state is PoolState.RECOVERING


def test_incomplete_recreated_pool_stays_unhealthy_without_a_new_declaration() -> None:
    snap, d = declared_pool()
    partial = replace(snap, nodes=fresh_nodes(NOW + 590, 1)[:2])
    snap, d = step(partial, NOW + 600, d.memory)
    status = d.pool("p")
    assert status is not None and status.state is PoolState.UNHEALTHY and not status.declared_now
    assert status.history == (NOW,)
    assert events(d) == []
    assert all(n.has_taint(constants.UNHEALTHY_TAINT_KEY) for n in snap.nodes)


def test_flap_counting_continues_across_a_recreation() -> None:
    settings_threshold = SETTINGS.flap_threshold
    assert settings_threshold == 3
    snap, d = declared_pool()
    memory: PoolMemory | None = d.memory
    without: PoolMemory | None = None
    for generation, t in enumerate((NOW + 1000, NOW + 2000), start=1):
        # Repaired: all nodes recreated, clean long enough to be handed back.
        snap = replace(snap, nodes=fresh_nodes(t - 200, generation))
        snap, d = step(snap, t, memory)
        status = d.pool("p")
        assert status is not None and status.recovered_now
        memory = d.memory
        # Fails again 100 s later.
        nodes = list(snap.nodes)
        nodes[1] = fail_node(nodes[1], t + 50)
        failing = replace(snap, nodes=tuple(nodes))
        plain = decide(replace(failing, now=t + 100), SETTINGS, memory=without).pool("p")
        snap, d = step(failing, t + 100, memory)
        status = d.pool("p")
        assert status is not None and status.declared_now
        assert status.history == (NOW, t + 100) if generation == 1 else (NOW, NOW + 1100, t + 100)
        assert plain is not None and plain.history == (t + 100,), "without memory the count restarts"
        memory = d.memory
        nodes = [heal_node(n, t + 150) for n in snap.nodes]
        snap = replace(snap, nodes=tuple(nodes))
    status = d.pool("p")
    assert status is not None and status.flapping, "third declaration within the window"
    for n in snap.nodes:
        assert n.annotations[constants.UNHEALTHY_HISTORY_ANNOTATION].count(",") == 2


def test_state_removed_by_hand_from_known_nodes_still_ends_the_hold() -> None:
    """Memory stands in only for replaced nodes, not for nodes someone cleaned up on purpose."""
    snap, d = declared_pool()
    snap, d = step(snap, NOW + 5, d.memory)
    cleaned = tuple(make_nodes(POOL, ready_since=NOW - 3600))
    _, after = step(replace(snap, nodes=cleaned), NOW + 10, d.memory)
    status = after.pool("p")
    assert status is not None and status.state is PoolState.HEALTHY and after.actions == ()


def test_held_decision_remembers_nothing_new() -> None:
    nodes = list(make_nodes(POOL, ready_since=NOW - 3600))
    nodes[0] = fail_node(nodes[0], NOW - 100)
    d = decide(Snapshot(NOW, (POOL,), tuple(nodes)), Settings(max_bad_node_fraction=0.1))
    assert d.held and d.memory == PoolMemory()


def test_adapter_keeps_memory_while_leading_and_a_restart_rebuilds_from_nodes() -> None:
    api = FakeApi()
    for i in range(4):
        api.add("nodes", node_obj(f"a-{i}", "a", ready="Unknown" if i == 1 else "True", since=NOW - 20))
    clock = Clock(NOW)
    c = make_controller(api, clock)
    d = c.reconcile_once()
    assert d is not None and (status := d.pool("a")) is not None and status.declared_now
    assert c.memory == d.memory
    relist(c)
    d = c.reconcile_once()  # our writes are observed before the repair starts
    assert d is not None and d.actions == ()

    for i in range(4):  # GKE recreates the pool: new uids, Ready, no taint or annotations.
        fresh = node_obj(f"a-{i}", "a", since=NOW + 580)
        fresh["metadata"]["uid"] = f"uid-a-{i}-gen1"
        api.add("nodes", fresh)
    clock.t = NOW + 600
    relist(c)
    d = c.reconcile_once()
    assert d is not None and (status := d.pool("a")) is not None
    assert status.state is PoolState.RECOVERING
    assert all(
        any(
            t["key"] == constants.UNHEALTHY_TAINT_KEY
            for t in api.objects["nodes"][f"a-{i}"]["spec"]["taints"]
        )
        for i in range(4)
    )

    for i in range(4):  # Recreated again, and the controller restarts meanwhile: state is lost.
        fresh = node_obj(f"a-{i}", "a", since=NOW + 680)
        fresh["metadata"]["uid"] = f"uid-a-{i}-gen2"
        api.add("nodes", fresh)
    clock.t = NOW + 700
    restarted = make_controller(api, clock)
    d = restarted.reconcile_once()
    assert d is not None and (status := d.pool("a")) is not None and status.state is PoolState.HEALTHY


def test_dry_run_keeps_no_memory() -> None:
    api = FakeApi()
    for i in range(4):
        api.add("nodes", node_obj(f"a-{i}", "a", ready="Unknown" if i == 1 else "True", since=NOW - 20))
    c = make_controller(api, Clock(NOW), dry_run=True)
    d = c.reconcile_once()
    assert d is not None and d.memory != PoolMemory()
    assert c.memory is None


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def relist(c: Controller) -> None:
    for cache in c.caches:
        cache.relist()


def make_controller(api: FakeApi, clock: Clock, *, dry_run: bool = False) -> Controller:
    cfg = Config(Settings(), RuntimeConfig(dry_run=dry_run))
    c = Controller(api, cfg, identity="hotswap-0", metrics=Metrics(), clock=clock)
    relist(c)
    return c
