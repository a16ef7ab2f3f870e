"""The event engine and the failure trace: time order, cancellation, and same seed -> same run."""

from __future__ import annotations

import pytest

from tpu_platform.sim.engine import Engine
from tpu_platform.sim.model import Pool
from tpu_platform.sim.policies import Hotswap
from tpu_platform.sim.run import compare, run
from tpu_platform.sim.scenarios import seed_scenario
from tpu_platform.sim.traces import random_trace


def test_events_fire_in_time_order_and_ties_in_scheduling_order() -> None:
    e = Engine(record=True)
    fired: list[str] = []
    e.at(5.0, "c", fired.append, "c")
    e.at(1.0, "a", fired.append, "a")
    e.at(5.0, "d", fired.append, "d")
    e.after(2.0, "b", fired.append, "b")
    e.run(10.0)
    assert fired == ["a", "b", "c", "d"]
    assert e.now == 10.0
    assert e.log == [(1.0, "a"), (2.0, "b"), (5.0, "c"), (5.0, "d")]


def test_cancelled_events_do_not_fire_and_the_past_is_refused() -> None:
    e = Engine()
    fired: list[str] = []
    handle = e.at(3.0, "x", fired.append, "x")
    e.at(4.0, "y", fired.append, "y")
    handle.cancel()
    e.run(3.5)
    assert fired == []
    assert len(e) == 1
    with pytest.raises(ValueError, match="past"):
        e.at(1.0, "late", fired.append, "late")
    e.run(5.0)
    assert fired == ["y"]


def test_events_scheduled_while_running_are_honoured_up_to_the_horizon() -> None:
    e = Engine()
    seen: list[float] = []

    def tick() -> None:
        seen.append(e.now)
        e.after(1.0, "tick", tick)

    e.at(0.0, "tick", tick)
    e.run(3.0)
    assert seen == [0.0, 1.0, 2.0, 3.0]


def test_random_trace_depends_only_on_the_seed() -> None:
    pools = [Pool("p-0", "4x4", 16, 4), Pool("p-1", "8x8", 64, 16)]
    kw = dict(start=0.0, end=30 * 86400.0, node_mtbf_s=5 * 86400.0, transient_fraction=0.3)
    a = random_trace(pools, seed=7, **kw)  # type: ignore[arg-type]
    b = random_trace(pools, seed=7, **kw)  # type: ignore[arg-type]
    c = random_trace(pools, seed=8, **kw)  # type: ignore[arg-type]
    assert a == b
    assert a != c
    assert [f.at for f in a] == sorted(f.at for f in a)
    assert {f.node.rsplit("-n", 1)[0] for f in a} == {"p-0", "p-1"}
    assert any(f.back_after is not None for f in a) and any(f.back_after is None for f in a)
    # 20 VMs for 30 days at a 5-day MTBF: 120 failures expected; a Poisson count stays well within 60-180.
    assert 60 < len(a) < 180


def test_same_seed_same_run_for_both_policies() -> None:
    scenario = seed_scenario(spare=False, restart_strategy="Recreate", pod_failure_policy=False, seed=3)
    first = [run(scenario, Hotswap(), record=True) for _ in range(2)]
    assert first[0].log == first[1].log
    assert first[0].summary == first[1].summary
    base_a, hot_a = compare(scenario)
    base_b, hot_b = compare(scenario)
    assert base_a.summary == base_b.summary and hot_a.summary == hot_b.summary
    assert [(i.lane, i.key, i.start, i.end) for i in base_a.metrics.occupancy] == [
        (i.lane, i.key, i.start, i.end) for i in base_b.metrics.occupancy
    ]


def test_the_infrastructure_timeline_is_the_same_under_both_policies() -> None:
    scenario = seed_scenario(spare=True, seed=5)
    base, hot = compare(scenario)
    assert base.metrics.failures == hot.metrics.failures
    assert base.metrics.repairs == hot.metrics.repairs
