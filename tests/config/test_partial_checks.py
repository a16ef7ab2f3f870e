"""The checks that run on a stack whose structure failed: each reads only the sections it declares
(``checks.READS``), so leaving a broken section out can hide a problem but never invent one."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.conftest import MINIMAL_STACK
from tpu_platform.config import PlatformConfig
from tpu_platform.config.checks import CHECKS, READS, Check, check_stack
from tpu_platform.config.loader import stack_keys
from tpu_platform.config.partial import without
from tpu_platform.plan import list_stacks, load_stack_config, parse_stack_config, stack_file


def _raw(config: dict[str, Any]) -> dict[str, Any]:
    return {key.split(":", 1)[1]: value for key, value in config.items()}


# Structurally valid stacks that fail many checks, so each check reaches its deeper branches.
TROUBLED: dict[str, dict[str, Any]] = {
    "crowded": {
        **MINIMAL_STACK,
        "gcp:zone": "us-east5-z",
        "tpu-platform:cluster": {"name": "tpu-test", "location": "us-east5-a", "privateNodes": True},
        "tpu-platform:slicePools": [
            {"name": "train", "topology": "4x4", "count": 2, "zone": "us-east5-b", "team": "reserch"},
            {"name": "train", "topology": "2x4", "capacity": {"type": "flexStart"}, "autoUpgrade": False},
        ],
        "tpu-platform:priorities": [{"name": "a", "value": 1}, {"name": "a", "value": 1}],
        "tpu-platform:kueue": {
            "flavors": [{"topology": "8x8", "name": "big"}],
            "controller": {"requests": {"cpu": "64"}},
        },
        "tpu-platform:cohorts": [
            {"name": "x", "parentName": "y", "fairSharingWeight": 2},
            {"name": "y", "parentName": "x"},
        ],
        "tpu-platform:teams": [
            {
                "name": "research",
                "cohortName": "z",
                "fairSharingWeight": 1,
                "quota": [{"topology": "4x4", "slices": 5, "lendingLimitSlices": 9}],
                "preemption": {
                    "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": "b"}
                },
            },
            {"name": "research", "quota": [{"topology": "2x2", "chips": 3}]},
        ],
        "tpu-platform:hotswap": {"namespace": "research", "settings": {"optOutNamespaces": ["nobody"]}},
        "tpu-platform:monitoring": {
            "alertRules": False,
            "notificationChannels": [{"name": "n", "type": "email", "address": "nope"}],
        },
    },
    "kubeconfig": {
        **MINIMAL_STACK,
        "tpu-platform:cluster": {"name": "tpu-test", "mode": "kubeconfig", "kubeconfig": "~/.kube/config"},
        "tpu-platform:hotswap": {"computeCorroboration": True},
        "tpu-platform:monitoring": {
            "notificationChannels": [{"name": "n", "type": "email", "address": "a@b.c"}]
        },
    },
}


def _stacks() -> dict[str, PlatformConfig]:
    """Every example stack, and the troubled ones (built without the checks they fail)."""
    found = {name: parse_stack_config(load_stack_config(stack_file(name))) for name in list_stacks()}
    found.update(
        {name: PlatformConfig.model_validate(_raw(copy.deepcopy(c))) for name, c in TROUBLED.items()}
    )
    return found


STACKS = _stacks()


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__)
@pytest.mark.parametrize("name", sorted(STACKS))
def test_a_check_reads_only_the_sections_it_declares(check: Check, name: str) -> None:
    """With any undeclared section gone (``None``), the check neither fails nor says anything else."""
    cfg = STACKS[name]
    expected = check(cfg).lines
    for key in sorted(set(stack_keys()) - READS[check]):
        assert check(without(cfg, [key])).lines == expected, f"{check.__name__} reads {key}"


def test_every_check_declares_what_it_reads() -> None:
    assert set(READS) == set(CHECKS)
    assert all(READS[check] <= set(stack_keys()) for check in CHECKS)


@pytest.mark.parametrize("name", sorted(STACKS))
def test_a_left_out_section_hides_problems_but_invents_none(name: str) -> None:
    cfg = STACKS[name]
    everything = set(check_stack(cfg).lines)
    for key in stack_keys():
        assert set(check_stack(without(cfg, [key]), [key]).lines) <= everything, key
