"""The chaos bench's definition of a missed action (``bench/chaos.py``): an untainted episode is a
miss only if one leader could act through it for longer than T_bad + one reconcile + one retry."""

from __future__ import annotations

from bench.chaos import ACT_NEEDS, RECONCILE_INTERVAL, RETRY_PERIOD, T_BAD, Episode, Stretch, judge


def episode(failed: float, ended: float | None, tainted: float | None = None) -> Episode:
    return Episode("p00", "p00-0", failed, failed + 15, tainted_at=tainted, ended_at=ended)


def test_the_threshold_is_the_documented_timings() -> None:
    assert ACT_NEEDS == T_BAD + RECONCILE_INTERVAL + RETRY_PERIOD == 3.5


def test_an_untainted_episode_with_a_long_enough_stretch_is_missed() -> None:
    e = episode(100.0, 115.0)
    missed, excluded = judge([e], [Stretch("hotswap-0", 90.0, 103.6)], end=200.0)
    assert missed == [e] and excluded == []


def test_short_stretches_do_not_add_up() -> None:
    """Two leaders of 3 s each (a handover between) are not one leader of 6 s."""
    e = episode(100.0, 115.0)
    stretches = [Stretch("hotswap-0", 100.0, 103.0), Stretch("hotswap-1", 106.0, 109.0)]
    missed, excluded = judge([e], stretches, end=200.0)
    assert missed == [] and excluded == [e]


def test_only_the_part_inside_the_episode_counts() -> None:
    e = episode(100.0, 110.0)
    stretches = [Stretch("hotswap-0", 50.0, 103.0), Stretch("hotswap-1", 108.0, 150.0)]
    assert judge([e], stretches, end=200.0) == ([], [e])


def test_an_episode_still_open_at_the_end_is_judged_up_to_the_end() -> None:
    e = episode(100.0, None)
    assert judge([e], [Stretch("hotswap-0", 101.0, 300.0)], end=104.0) == ([], [e])
    assert judge([e], [Stretch("hotswap-0", 101.0, 300.0)], end=105.0) == ([e], [])


def test_tainted_episodes_are_neither() -> None:
    e = episode(100.0, 115.0, tainted=101.0)
    assert judge([e], [Stretch("hotswap-0", 0.0, 300.0)], end=300.0) == ([], [])
