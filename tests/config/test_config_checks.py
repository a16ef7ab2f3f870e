"""Each section's validator on its own: problems with field paths, independent of the others."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import MINIMAL_STACK
from tpu_platform.config import PlatformConfig, Problem, StackConfigError, parse_platform
from tpu_platform.config.checks import CHECKS, check_stack
from tpu_platform.config.checks.capacity import check_quota_capacity
from tpu_platform.config.checks.cohorts import check_cohorts
from tpu_platform.config.checks.hotswap import check_hotswap
from tpu_platform.config.checks.priorities import check_priorities
from tpu_platform.config.checks.teams import check_teams
from tpu_platform.config.loader import name_items


def raw_stack(config: dict[str, Any]) -> dict[str, Any]:
    """The config map's values by stack key (``gcp:zone`` -> ``zone``), as ``read_stack`` assembles them."""
    return {key.split(":", 1)[1]: value for key, value in config.items()}


def _structural(overrides: dict[str, Any]) -> PlatformConfig:
    """A stack that passed pydantic but none of the cross-field checks."""
    config = copy.deepcopy(MINIMAL_STACK)
    config.update({f"tpu-platform:{k}": v for k, v in overrides.items()})
    return PlatformConfig.model_validate(raw_stack(config))


def test_every_check_passes_a_minimal_stack() -> None:
    cfg = _structural({})
    assert [list(check(cfg)) for check in CHECKS] == [[] for _ in CHECKS]


def test_priorities_check_returns_paths() -> None:
    cfg = _structural({"priorities": [{"name": "a", "value": 1}, {"name": "a", "value": 1}]})
    found = list(check_priorities(cfg))
    assert [p.loc for p in found] == [("priorities", 1, "name"), ("priorities", 1, "value")]
    assert found[0] == Problem(("priorities", 1, "name"), "priority 'a' is also priorities[0]")
    assert found[0].line == "tpu-platform:priorities[1].name: priority 'a' is also priorities[0]"


def test_capacity_check_stands_alone() -> None:
    teams = [
        {"name": "a", "quota": [{"topology": "4x4", "slices": 2}]},
        {"name": "b", "quota": [{"topology": "4x4", "slices": 1}]},
    ]
    cfg = _structural({"teams": teams})
    assert list(check_teams(cfg)) == []
    (problem,) = check_quota_capacity(cfg)
    assert problem.loc == ("teams",)
    assert "add up to 3 slices (48 chips: team a 2, team b 1) but the slice pools have 2" in problem.message
    assert list(check_quota_capacity(_structural({"teams": teams, "kueue": {"allowOvercommit": True}}))) == []


def test_cohort_cycle_is_reported_once_at_its_parent_name() -> None:
    cfg = _structural({"cohorts": [{"name": "x", "parentName": "y"}, {"name": "y", "parentName": "x"}]})
    (problem,) = check_cohorts(cfg)
    assert problem.loc == ("cohorts", 0, "parentName")
    assert problem.message.startswith("cohorts form a cycle (x -> y -> x)")


def test_hotswap_check_reads_the_teams() -> None:
    cfg = _structural({"teams": [{"name": "ml"}], "hotswap": {"namespace": "ml"}})
    locs = [p.loc for p in check_hotswap(cfg)]
    assert locs == [("hotswap", "namespace")]


def test_check_stack_is_the_checks_in_order() -> None:
    cfg = _structural(
        {
            "priorities": [{"name": "a", "value": 1}, {"name": "a", "value": 2}],
            "teams": [{"name": "t", "quota": [{"topology": "4x4", "slices": 3}]}],
            "hotswap": {"namespace": "kube-system"},
        }
    )
    expected = [problem for check in CHECKS for problem in check(cfg)]
    assert list(check_stack(cfg)) == expected
    assert [p.loc[0] for p in expected] == ["priorities", "teams", "hotswap"]


_ENTRY = st.fixed_dictionaries(
    {"topology": st.sampled_from(["4x4", "2x2", "8x8", "4x3"]), "slices": st.integers(0, 4)},
)


@settings(max_examples=60, deadline=None)
@given(
    teams=st.lists(
        st.fixed_dictionaries(
            {"name": st.sampled_from(["a", "b", "c"]), "quota": st.lists(_ENTRY, max_size=3)}
        ),
        max_size=3,
    )
)
def test_parse_platform_reports_exactly_what_the_checks_return(teams: list[dict[str, Any]]) -> None:
    """The loader adds nothing and drops nothing: its error is the checks' problems, in order, each
    ending with the name of the list item it is about."""
    raw = raw_stack({**copy.deepcopy(MINIMAL_STACK), "tpu-platform:teams": teams})
    cfg = PlatformConfig.model_validate(raw)
    lines = check_stack(cfg).lines
    if not lines:
        assert parse_platform(raw) == cfg
        return
    with pytest.raises(StackConfigError) as err:
        parse_platform(raw)
    assert err.value.problems == name_items(lines, raw)
    assert all(p.startswith(line) for p, line in zip(err.value.problems, lines, strict=True))


def test_capacity_counts_every_entry_of_a_stack_with_duplicate_names() -> None:
    """Two teams (or cohorts) with one name are reported as such, and both quotas still count."""
    teams = [
        {"name": "a", "quota": [{"topology": "4x4", "slices": 2}]},
        {"name": "a", "quota": [{"topology": "4x4", "slices": 1}]},
    ]
    cohorts = [
        {"name": "c", "quota": [{"topology": "4x4", "slices": 1}]},
        {"name": "c", "quota": [{"topology": "4x4", "slices": 1}]},
    ]
    (problem,) = check_quota_capacity(_structural({"teams": teams, "cohorts": cohorts}))
    assert "add up to 5 slices (80 chips: team a 2, team a 1, cohort c 1, cohort c 1)" in problem.message
