"""Quota math: guaranteed (nominal) and borrowable slices per team, following Kueue's cohort tree."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tpu_platform.plan import load_stack_config, parse_stack_config
from tpu_platform.plan.stacks import stack_file
from tpu_platform.quota import quota_layout, team_quotas, unassigned_slices
from tpu_platform.summary import summarize

POOLS = [
    {"name": "small", "topology": "4x4", "count": 6},
    {"name": "big", "topology": "8x8", "count": 2},
]


def build(
    stack: dict[str, Any], teams: list[dict[str, Any]], cohorts: list[dict[str, Any]] | None = None
) -> Any:
    config = copy.deepcopy(stack)
    config["tpu-platform:slicePools"] = copy.deepcopy(POOLS)
    config["tpu-platform:teams"] = teams
    if cohorts is not None:
        config["tpu-platform:cohorts"] = cohorts
    return parse_stack_config(config)


def q(slices: int, topology: str = "4x4", **limits: int) -> dict[str, Any]:
    return {"topology": topology, "slices": slices, **limits}


def by_team(cfg: Any) -> dict[str, dict[str, tuple[int, int]]]:
    """team -> topology -> (guaranteed slices, borrowable slices)."""
    return {
        t.team: {f.shape.topology: (f.guaranteed_slices, f.borrowable_slices) for f in t.flavors}
        for t in team_quotas(cfg)
    }


def test_no_cohort_means_nothing_to_borrow(stack: dict[str, Any]) -> None:
    cfg = build(stack, [{"name": "a", "quota": [q(2)]}, {"name": "b", "quota": [q(2)]}])
    assert by_team(cfg) == {"a": {"4x4": (2, 0)}, "b": {"4x4": (2, 0)}}


def test_flat_cohort_borrows_everything_idle(stack: dict[str, Any]) -> None:
    cfg = build(
        stack,
        [
            {"name": "a", "cohortName": "ml", "quota": [q(2)]},
            {"name": "b", "cohortName": "ml", "quota": [q(3)]},
            {"name": "c", "cohortName": "other", "quota": [q(1)]},
        ],
    )
    assert by_team(cfg) == {"a": {"4x4": (2, 3)}, "b": {"4x4": (3, 2)}, "c": {"4x4": (1, 0)}}


def test_borrowing_limit_caps_borrowable(stack: dict[str, Any]) -> None:
    cfg = build(
        stack,
        [
            {"name": "a", "cohortName": "ml", "quota": [q(2, borrowingLimitSlices=1)]},
            {"name": "b", "cohortName": "ml", "quota": [q(3, borrowingLimitSlices=0)]},
        ],
    )
    assert by_team(cfg) == {"a": {"4x4": (2, 1)}, "b": {"4x4": (3, 0)}}


def test_lending_limit_keeps_quota_back(stack: dict[str, Any]) -> None:
    cfg = build(
        stack,
        [
            {"name": "a", "cohortName": "ml", "quota": [q(2)]},
            {"name": "b", "cohortName": "ml", "quota": [q(3, lendingLimitSlices=1)]},
        ],
    )
    assert by_team(cfg) == {"a": {"4x4": (2, 1)}, "b": {"4x4": (3, 2)}}
    lendable = {t.team: t.flavors[0].lendable_slices for t in team_quotas(cfg)}
    assert lendable == {"a": 2, "b": 1}


def test_only_flavors_in_the_queue_can_be_borrowed(stack: dict[str, Any]) -> None:
    cfg = build(
        stack,
        [
            {"name": "a", "cohortName": "ml", "quota": [q(2)]},
            {"name": "b", "cohortName": "ml", "quota": [q(1), q(2, "8x8")]},
        ],
    )
    assert by_team(cfg) == {"a": {"4x4": (2, 1)}, "b": {"4x4": (1, 2), "8x8": (2, 0)}}


def test_zero_nominal_queue_only_borrows(stack: dict[str, Any]) -> None:
    cfg = build(
        stack,
        [
            {"name": "a", "cohortName": "ml", "quota": [q(4)]},
            {"name": "scavenger", "cohortName": "ml", "quota": [q(0)]},
        ],
    )
    assert by_team(cfg)["scavenger"] == {"4x4": (0, 4)}


def test_hierarchical_cohorts(stack: dict[str, Any]) -> None:
    cohorts: list[dict[str, Any]] = [
        {"name": "org"},
        {"name": "research", "parentName": "org"},
        {"name": "product", "parentName": "org", "quota": [q(1, lendingLimitSlices=0)]},
    ]
    teams = [
        {"name": "a", "cohortName": "research", "quota": [q(2)]},
        {"name": "b", "cohortName": "research", "quota": [q(1, borrowingLimitSlices=2)]},
        {"name": "c", "cohortName": "product", "quota": [q(2, lendingLimitSlices=1)]},
    ]
    cfg = build(stack, teams, cohorts)
    # product keeps its own slice and c's unlendable slice inside; research sees 3 + 1 lent by c.
    tree = quota_layout(cfg).tree
    four = quota_layout(cfg).queue_of("a").ordered()[0].shape
    assert tree.subtree(tree.cohorts["product"], four) == 2  # own 1 + c lends 1
    assert tree.subtree(tree.cohorts["org"], four) == 3 + 0  # research 3 + product lends nothing up
    assert by_team(cfg) == {
        "a": {"4x4": (2, 1)},  # b's slice; product lends nothing to the root
        "b": {"4x4": (1, 2)},
        "c": {"4x4": (2, 4)},  # c's kept slice + product's own + c's lent + research's 3 -> 6 total
    }


def test_cohort_borrowing_limit_caps_its_subtree(stack: dict[str, Any]) -> None:
    cohorts: list[dict[str, Any]] = [
        {"name": "org", "quota": [q(2)]},
        {"name": "research", "parentName": "org", "quota": [q(0, borrowingLimitSlices=1)]},
    ]
    teams = [{"name": "a", "cohortName": "research", "quota": [q(2)]}]
    cfg = build(stack, teams, cohorts)
    assert by_team(cfg) == {"a": {"4x4": (2, 1)}}


def test_chips_follow_slices(stack: dict[str, Any]) -> None:
    cfg = build(
        stack,
        [
            {"name": "a", "cohortName": "ml", "quota": [q(1), q(1, "8x8")]},
            {"name": "b", "cohortName": "ml", "quota": [q(2), q(1, "8x8")]},
        ],
    )
    a = team_quotas(cfg)[0]
    assert (a.guaranteed_chips, a.borrowable_chips) == (16 + 64, 32 + 64)


def test_unassigned_slices(stack: dict[str, Any]) -> None:
    cfg = build(stack, [{"name": "a", "quota": [q(2), q(1, "8x8")]}])
    assert {shape.topology: n for shape, n in unassigned_slices(cfg).items()} == {"4x4": 4, "8x8": 1}


def test_summary_has_teams_section(stack: dict[str, Any]) -> None:
    cfg = build(
        stack,
        [
            {"name": "a", "cohortName": "ml", "quota": [q(2, borrowingLimitSlices=1)]},
            {"name": "b", "cohortName": "ml", "quota": [q(3)]},
        ],
    )
    summary = summarize(cfg)
    doc = summary.as_dict()
    assert doc["teams"][0] == {
        "team": "a",
        "clusterQueue": "a-cq",
        "cohort": "ml",
        "guaranteedChips": 32,
        "borrowableChips": 16,
        "byFlavor": [
            {
                "topology": "4x4",
                "flavor": "tpu-v6e-4x4",
                "guaranteedSlices": 2,
                "guaranteedChips": 32,
                "borrowableSlices": 1,
                "borrowableChips": 16,
                "lendableSlices": 2,
            }
        ],
        "submitTo": ["a/a-queue"],
    }
    assert doc["unassigned"] == [
        {"topology": "4x4", "slices": 1, "chips": 16},
        {"topology": "8x8", "slices": 2, "chips": 128},
    ]
    text = summary.as_text()
    assert "teams (chips guaranteed / borrowable from the cohort):" in text
    assert "not in any nominal quota: 4x4 x1 (16 chips), 8x8 x2 (128 chips)" in text
    assert "submit to a/a-queue (namespace/LocalQueue)" in text


def test_summary_without_teams_is_unchanged(stack: dict[str, Any]) -> None:
    doc = summarize(parse_stack_config(stack)).as_dict()
    assert "teams" not in doc and "unassigned" not in doc


@pytest.mark.parametrize(
    ("team", "guaranteed", "borrowable"),
    [("llm-pretrain", 128, 128), ("llm-research", 112, 112), ("serving-eval", 48, 16), ("rl", 96, 160)],
)
def test_prod_stack_quotas(team: str, guaranteed: int, borrowable: int) -> None:
    cfg = parse_stack_config(load_stack_config(stack_file("prod")))
    quotas = {t.team: t for t in team_quotas(cfg)}
    assert (quotas[team].guaranteed_chips, quotas[team].borrowable_chips) == (guaranteed, borrowable)
    assert all(n == 0 for n in unassigned_slices(cfg).values())
