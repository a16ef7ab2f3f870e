"""``hotswap.settings`` is the controller's own settings model, read when the stack file is read: typed
from there on, and each problem reported on its field's stack path, all at once."""

from __future__ import annotations

from typing import Any

from tests.config.stack_problems import only_problem, problems_of
from tpu_platform.config import HotswapConfig
from tpu_platform.hotswap.adapter.config import RuntimeConfig
from tpu_platform.hotswap.core.settings import Settings
from tpu_platform.plan import parse_stack_config


def test_the_section_holds_the_controllers_settings_typed() -> None:
    hot = HotswapConfig.model_validate({"settings": {"unhealthyAfterSeconds": "15s", "failFast": False}})
    assert isinstance(hot.settings, Settings)
    assert (hot.settings.unhealthy_after_seconds, hot.settings.fail_fast) == (15.0, False)
    assert hot.settings.compute_corroboration is True, "the section's switch, on by default"
    deployed = hot.controller_settings({"ml": ["ml-b", "ml-a"]})
    assert type(deployed) is Settings
    assert deployed == Settings(
        unhealthy_after_seconds=15,
        fail_fast=False,
        compute_corroboration=True,
        teams={"ml": ["ml-a", "ml-b"]},
    )
    assert hot.runtime() == RuntimeConfig()
    off = HotswapConfig.model_validate({"computeCorroboration": False, "dryRun": True})
    assert off.controller_settings() == Settings()
    assert off.runtime() == RuntimeConfig(dry_run=True)


def test_every_settings_problem_is_reported_on_its_path(stack: dict[str, Any]) -> None:
    stack["tpu-platform:hotswap"] = {
        "enabled": True,
        "settings": {"flapThreshold": 0, "failFast": "yes", "healthyAfterSeconds": "soon"},
    }
    problems = problems_of(stack)
    assert [p.split(": ", 1)[0] for p in problems] == [
        "tpu-platform:hotswap.settings.healthyAfterSeconds",
        "tpu-platform:hotswap.settings.flapThreshold",
        "tpu-platform:hotswap.settings.failFast",
    ]
    assert "expected seconds or a duration like '30s', '2m', got 'soon'" in problems[0]
    assert "must be >= 1, got 0" in problems[1] and "expected true or false" in problems[2]


def test_rules_between_settings_name_the_setting_they_refuse(stack: dict[str, Any]) -> None:
    stack["tpu-platform:hotswap"] = {
        "enabled": True,
        "settings": {"healthyAfterSeconds": 600, "flappingHealthyAfterSeconds": 300},
    }
    assert only_problem(stack).startswith(
        "tpu-platform:hotswap.settings.flappingHealthyAfterSeconds: must be >= healthy_after_seconds"
    )
    stack["tpu-platform:hotswap"]["settings"] = {"workloadSignalWindowSeconds": 0}
    assert only_problem(stack).startswith(
        "tpu-platform:hotswap.settings.workloadSignalWindowSeconds: must be > 0 with workload_signals on"
    )


def test_an_unknown_setting_lists_what_a_stack_sets_there(stack: dict[str, Any]) -> None:
    stack["tpu-platform:hotswap"] = {"enabled": True, "settings": {"failFats": False}}
    problem = only_problem(stack)
    assert problem.startswith(
        "tpu-platform:hotswap.settings.failFats: unknown key (did you mean 'failFast'?)"
    )
    assert "unhealthyAfterSeconds" in problem and problem.endswith(
        "see tpu_platform/hotswap/README.md for every setting"
    )
    listed = problem.split("valid keys here: ", 1)[1]
    assert "computeCorroboration" not in listed and "teams" not in listed, "set through keys of their own"


def test_an_unknown_setting_leaves_the_rest_of_the_section_checked(stack: dict[str, Any]) -> None:
    stack["tpu-platform:hotswap"] = {
        "enabled": True,
        "namespace": "kube-system",
        "settings": {"failFats": False, "unhealthyAfterSeconds": 1},
    }
    paths = sorted(p.split(": ", 1)[0] for p in problems_of(stack))
    assert paths == [
        "tpu-platform:hotswap.namespace",
        "tpu-platform:hotswap.settings.failFats",
        "tpu-platform:hotswap.settings.unhealthyAfterSeconds",
    ]


def test_a_valid_stack_deploys_the_settings_it_states(stack: dict[str, Any]) -> None:
    stack["tpu-platform:hotswap"] = {"enabled": True, "settings": {"leaseStaleSeconds": "20s"}}
    cfg = parse_stack_config(stack)
    assert cfg.controller_settings().lease_stale_seconds == 20.0
    assert cfg.controller_settings().compute_corroboration is True
