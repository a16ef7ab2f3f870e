"""End-to-end scenarios from the seed guide and the failure model, driven over time in a toy cluster.

Every reconcile in these runs is also checked for idempotency (see ``World.control``).
"""

from __future__ import annotations

from tests.hotswap.hotswap_world import World
from tpu_platform.hotswap.core import (
    EvictionCause,
    EvictPod,
    ForceDeletePod,
    PatchNode,
    PoolState,
    Settings,
    constants,
)
from tpu_platform.testing.hotswap_builders import make_jobset, make_pool, make_pools

HIGH = 2_000_000
LOW = 1_000_000


def seed_world(n_pools: int, *, settings: Settings | None = None, termination_seconds: float = 0.0) -> World:
    return World(make_pools("p", n_pools), settings=settings, termination_seconds=termination_seconds)


def test_high_priority_pool_fails_with_spare_pool_restarts_on_spare_without_preempting() -> None:
    w = seed_world(3)
    w.add(make_jobset("high", priority=HIGH), ["p-0"])
    w.add(make_jobset("low", priority=LOW), ["p-1"])
    t0 = w.now
    w.fail("p-0-n1")

    w.run(9)
    assert w.tainted_pools() == set(), "nothing happens before T_bad"
    w.run(2)
    assert w.tainted_pools() == {"p-0"}, "the whole pool is tainted, not just the dead node"
    status = w.decisions[-1].pool("p-0")
    assert status is not None and status.state is PoolState.UNHEALTHY

    w.run(25)
    assert w.placement("default/high") == {"p-2"}, "high restarted on the spare before the 300 s eviction"
    assert w.now - t0 < 40
    assert w.placement("default/low") == {"p-1"}
    assert w.preemptions == []


def test_without_spare_low_priority_is_preempted_then_returns_to_the_recovered_pool() -> None:
    w = seed_world(2)
    w.add(make_jobset("high", priority=HIGH), ["p-0"])
    w.add(make_jobset("low", priority=LOW), ["p-1"])
    t0 = w.now
    w.fail("p-0-n1")

    w.run(50)
    assert w.placement("default/high") == {"p-1"}
    assert [(p.beneficiary, p.victims, p.pools) for p in w.preemptions] == [
        ("default/high", ("default/low",), ("p-1",))
    ]
    low = w.jobsets["default/low"]
    assert low.annotations[constants.PREEMPTED_FOR_ANNOTATION] == "default/high"
    assert low.annotations[constants.PREEMPTED_POOLS_ANNOTATION] == "p-1"
    assert low.annotations[constants.PREEMPTION_COUNT_ANNOTATION] == "1"
    assert w.placement("default/low") == set(), "low waits: the broken pool is still tainted"

    w.heal("p-0-n1")
    healed = w.now
    w.run(119)
    assert w.tainted_pools() == {"p-0"}, "T_good not yet elapsed"
    w.run(3)
    assert w.tainted_pools() == set()
    assert w.placement("default/low") == {"p-0"}, "low gets the recovered pool back"
    assert w.placement("default/high") == {"p-1"}, "never preempted back"
    assert len(w.preemptions) == 1
    recovered = [d for d in w.decisions if any(p.recovered_now for p in d.pools)]
    assert len(recovered) == 1
    assert recovered[0].now - healed >= 120
    assert t0 < healed


def test_blip_shorter_than_t_bad_does_nothing() -> None:
    w = seed_world(2)
    w.add(make_jobset("high", priority=HIGH), ["p-0"])
    w.fail("p-0-n0")
    w.run(5)
    w.heal("p-0-n0")
    w.run(30)
    assert all(d.actions == () for d in w.decisions)
    assert w.placement("default/high") == {"p-0"}


def test_node_back_mid_preemption_causes_no_second_preemption() -> None:
    w = seed_world(2, termination_seconds=60.0)
    w.add(make_jobset("high", priority=HIGH), ["p-0"])
    w.add(make_jobset("low", priority=LOW), ["p-1"])
    w.fail("p-0-n2")
    w.run(85)  # high's own pods need 60 s to terminate before it restarts and waits 10 s
    assert len(w.preemptions) == 1
    w.heal("p-0-n2")
    w.run(60)
    assert w.placement("default/high") == {"p-1"}
    assert len(w.preemptions) == 1, "the draining victim's pool stays reserved for high"
    w.run(130)
    assert w.placement("default/low") == {"p-0"}
    assert len(w.preemptions) == 1


def test_two_failures_at_once_preempt_two_distinct_victims() -> None:
    w = seed_world(4)
    w.add(make_jobset("high-a", priority=HIGH), ["p-0"])
    w.add(make_jobset("high-b", priority=HIGH + 1), ["p-1"])
    w.add(make_jobset("low-a", priority=LOW), ["p-2"])
    w.add(make_jobset("low-b", priority=LOW + 1), ["p-3"])
    w.fail("p-0-n0")
    w.fail("p-1-n3")
    w.run(60)
    victims = sorted(v for p in w.preemptions for v in p.victims)
    assert victims == ["default/low-a", "default/low-b"]
    assert w.placement("default/high-a") | w.placement("default/high-b") == {"p-2", "p-3"}
    assert w.tainted_pools() == {"p-0", "p-1"}


def test_two_failures_one_victim_goes_to_the_higher_priority() -> None:
    w = seed_world(3)
    w.add(make_jobset("high-a", priority=HIGH), ["p-0"])
    w.add(make_jobset("high-b", priority=HIGH + 5), ["p-1"])
    w.add(make_jobset("low", priority=LOW), ["p-2"])
    w.fail("p-0-n0")
    w.fail("p-1-n0")
    w.run(60)
    assert [(p.beneficiary, p.victims) for p in w.preemptions] == [("default/high-b", ("default/low",))]
    assert w.placement("default/high-b") == {"p-2"}
    assert w.placement("default/high-a") == set()


def test_equal_priority_is_never_preempted() -> None:
    w = seed_world(2)
    w.add(make_jobset("high", priority=HIGH), ["p-0"])
    w.add(make_jobset("peer", priority=HIGH), ["p-1"])
    w.fail("p-0-n0")
    w.run(90)
    assert w.preemptions == []
    assert w.placement("default/peer") == {"p-1"}
    assert any("too few" in note for d in w.decisions for note in d.notes)


def test_a_different_slice_shape_is_never_preempted() -> None:
    pools = [make_pool("a-0"), make_pool("a-1"), make_pool("b-0", "2x4")]
    w = World(pools)
    w.add(make_jobset("high", priority=HIGH), ["a-0"])
    w.add(make_jobset("peer", priority=HIGH), ["a-1"])
    w.add(make_jobset("small", priority=1, topology="2x4"), ["b-0"])
    w.fail("a-0-n0")
    w.run(90)
    assert w.preemptions == []
    assert w.placement("default/small") == {"b-0"}


def test_multi_slice_high_priority_preempts_only_what_it_lacks() -> None:
    w = seed_world(4)
    w.add(make_jobset("high", priority=HIGH, slices=2), ["p-0", "p-1"])
    w.add(make_jobset("low-a", priority=LOW), ["p-2"])
    w.add(make_jobset("low-b", priority=LOW), ["p-3"])
    w.fail("p-0-n0")
    w.run(60)
    # p-1 drains when high restarts, so high needs exactly one more slice.
    assert len(w.preemptions) == 1
    assert len(w.preemptions[0].victims) == 1
    assert w.preemptions[0].slices_needed == 1
    assert len(w.placement("default/high")) == 2


def test_flapping_pool_needs_the_longer_clean_time() -> None:
    w = seed_world(1, settings=Settings(max_bad_node_fraction=1.0, force_delete_unconfirmed=True))
    for _ in range(2):
        w.fail("p-0-n0")
        w.run(15)
        w.heal("p-0-n0")
        w.run(125)
        assert w.tainted_pools() == set()
    w.fail("p-0-n0")
    w.run(15)
    status = w.decisions[-1].pool("p-0")
    assert status is not None and status.flapping
    w.heal("p-0-n0")
    w.run(600)
    assert w.tainted_pools() == {"p-0"}, "a flapping pool stays unhealthy past T_good"
    w.run(310)
    assert w.tainted_pools() == set()
    history = w.nodes["p-0-n0"].annotations[constants.UNHEALTHY_HISTORY_ANNOTATION]
    assert len(history.split(",")) == 3


def test_mass_outage_holds_every_action() -> None:
    w = seed_world(3)
    w.add(make_jobset("high", priority=HIGH), ["p-0"])
    w.add(make_jobset("low", priority=LOW), ["p-1"])
    for pool in ("p-0", "p-1"):
        for i in range(4):
            w.fail(f"{pool}-n{i}")
    w.run(60)
    assert all(d.held and d.actions == () for d in w.decisions[-40:])
    assert w.tainted_pools() == set()


def test_fail_fast_evicts_then_force_deletes_the_pod_on_the_dead_node() -> None:
    w = seed_world(2)
    w.add(make_jobset("high", priority=HIGH), ["p-0"])
    w.fail("p-0-n1")
    w.run(10)
    evictions = [a for a in w.decisions[-1].actions if isinstance(a, EvictPod)]
    assert {a.name for a in evictions} == {f"high-slice-0-{i}-a1" for i in range(4)}
    assert all(a.cause is EvictionCause.FAIL_FAST and a.pool == "p-0" for a in evictions)
    w.run(19)
    assert not any(isinstance(a, ForceDeletePod) for d in w.decisions for a in d.actions)
    w.run(1)
    deletes = [a for a in w.decisions[-1].actions if isinstance(a, ForceDeletePod)]
    assert [(a.name, a.node) for a in deletes] == [("high-slice-0-1-a1", "p-0-n1")]


def test_node_patches_keep_foreign_taints_and_only_touch_own_keys() -> None:
    w = seed_world(1, settings=Settings(max_bad_node_fraction=1.0, force_delete_unconfirmed=True))
    w.fail("p-0-n0")
    w.run(10)
    patches = [a for a in w.decisions[-1].actions if isinstance(a, PatchNode)]
    assert {p.node for p in patches} == {f"p-0-n{i}" for i in range(4)}
    for p in patches:
        assert [t.key for t in p.add_taints] == [constants.UNHEALTHY_TAINT_KEY]
        assert p.remove_taints == ()
        assert all(key.startswith("tpu-platform.dev/") for key, _ in p.set_annotations)
    assert w.nodes["p-0-n1"].has_taint(constants.TPU_RESOURCE)
