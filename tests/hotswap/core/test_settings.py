"""Settings: defaults, loading from the ConfigMap formats, and errors that name the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from tpu_platform.hotswap.core import (
    Settings,
    SettingsError,
    settings_from_json,
    settings_from_mapping,
    settings_from_yaml,
    settings_schema,
)
from tpu_platform.hotswap.core.settings import GROUPS, about, setting_value
from tpu_platform.hotswap.settings_doc import COMMAND, DOC_PATH, render

ROOT = Path(__file__).resolve().parents[3]


def test_defaults_round_trip_through_yaml_and_json() -> None:
    defaults = Settings()
    assert settings_from_yaml(yaml.safe_dump(defaults.to_dict())) == defaults
    assert settings_from_json(json.dumps(defaults.to_dict())) == defaults
    assert settings_from_mapping(None) == defaults
    assert settings_from_yaml("") == defaults


def test_defaults_follow_the_failure_model() -> None:
    s = Settings()
    assert s.unhealthy_after_seconds + 40 <= 60, "detection within the 1-minute hotswap target"
    assert s.dead_node_confirm_seconds + 40 < 300, "stuck pods cleared well before the 300 s eviction"
    assert s.healthy_after_seconds < 600 <= s.flapping_healthy_after_seconds
    assert s.max_bad_node_fraction == 0.55


def test_yaml_with_durations_and_lists() -> None:
    s = settings_from_yaml(
        """
        unhealthy_after_seconds: 5s
        healthy_after_seconds: 3m
        dead_node_confirm_seconds: 45
        flapping_healthy_after_seconds: 1h
        problem_taint_keys: [example.com/ici-down]
        fail_fast: false
        """
    )
    assert s.unhealthy_after_seconds == 5.0
    assert s.healthy_after_seconds == 180.0
    assert s.dead_node_confirm_seconds == 45.0
    assert s.flapping_healthy_after_seconds == 3600.0
    assert s.problem_taint_keys == ("example.com/ici-down",)
    assert s.fail_fast is False


@pytest.mark.parametrize(
    ("doc", "field", "fragment"),
    [
        ({"unhealthy_after": 3}, "unhealthy_after", "unknown field"),
        ({"healthy_after_seconds": "soon"}, "healthy_after_seconds", "duration"),
        ({"healthy_after_seconds": -1}, "healthy_after_seconds", ">= 0"),
        ({"healthy_after_seconds": True}, "healthy_after_seconds", "duration"),
        ({"flap_threshold": 0}, "flap_threshold", ">= 1"),
        ({"flap_threshold": 2.5}, "flap_threshold", "integer"),
        ({"max_bad_node_fraction": 1.5}, "max_bad_node_fraction", "(0, 1]"),
        ({"fail_fast": "yes"}, "fail_fast", "true or false"),
        ({"problem_taint_keys": "a,b"}, "problem_taint_keys", "list of strings"),
        ({"problem_taint_keys": [""]}, "problem_taint_keys", "non-empty"),
        ({"managed_accelerators": []}, "managed_accelerators", "at least one"),
        ({"problem_taint_keys": ["tpu-platform.dev/unhealthy-pool"]}, "problem_taint_keys", "own taint"),
        (
            {"healthy_after_seconds": 600, "flapping_healthy_after_seconds": 300},
            "flapping_healthy_after_seconds",
            ">= healthy_after_seconds",
        ),
    ],
)
def test_errors_name_the_bad_field(doc: dict[str, Any], field: str, fragment: str) -> None:
    with pytest.raises(SettingsError) as err:
        settings_from_mapping(doc)
    assert err.value.field == field
    assert repr(field) in str(err.value)
    assert fragment in str(err.value)


def test_malformed_documents() -> None:
    with pytest.raises(SettingsError, match="invalid YAML"):
        settings_from_yaml("a: [1, 2")
    with pytest.raises(SettingsError, match="invalid JSON"):
        settings_from_json("{")
    with pytest.raises(SettingsError, match="must be a mapping"):
        settings_from_yaml("- 1\n- 2\n")


def test_direct_construction_is_validated_too() -> None:
    with pytest.raises(SettingsError) as err:
        Settings(max_bad_node_fraction=0.0)
    assert err.value.field == "max_bad_node_fraction"


def test_schema_documents_every_field() -> None:
    schema = settings_schema()
    assert list(schema) == list(Settings.model_fields)
    for name, entry in schema.items():
        assert len(entry["doc"]) > 40, name
        assert entry["default"] == Settings().to_dict()[name]
        assert entry["group"] in GROUPS and entry["unit"] and len(entry["source"]) > 10, name
        assert entry["key"] == Settings.model_fields[name].alias and entry["doc"] == about(name).doc
    assert {entry["group"] for entry in schema.values()} == set(GROUPS), "no group without a setting"


def test_camel_case_keys_read_as_the_stack_writes_them() -> None:
    """One model for both files: the stack's camelCase and the controller's snake_case read alike."""
    camel = settings_from_mapping(
        {"unhealthyAfterSeconds": "15s", "leaseStaleSeconds": 20, "failFast": False}
    )
    snake = settings_from_mapping(
        {"unhealthy_after_seconds": 15, "lease_stale_seconds": "20s", "fail_fast": False}
    )
    assert camel == snake == Settings(unhealthy_after_seconds=15, lease_stale_seconds=20, fail_fast=False)
    with pytest.raises(SettingsError) as err:
        settings_from_mapping({"unhealthyAfterSecs": 5})
    assert err.value.field == "unhealthyAfterSecs" and "did you mean 'unhealthy_after_seconds'" in str(
        err.value
    )
    with pytest.raises(SettingsError) as err:
        settings_from_mapping({"leaseStaleSeconds": 15})
    assert err.value.field == "lease_stale_seconds", "named as the controller's file names it"


def test_every_problem_of_a_document_is_found_at_once() -> None:
    with pytest.raises(ValidationError) as err:
        Settings.model_validate({"flapThreshold": 0, "failFast": "yes", "healthyAfterSeconds": "soon"})
    assert [e["loc"] for e in err.value.errors()] == [
        ("healthyAfterSeconds",),
        ("flapThreshold",),
        ("failFast",),
    ]


def test_teams_read_as_sorted_pairs_and_written_as_a_mapping() -> None:
    s = Settings(teams={"b": ["y", "x", "x"], "a": ["z"]})
    assert s.teams == (("a", ("z",)), ("b", ("x", "y")))
    assert s.to_dict()["teams"] == {"a": ["z"], "b": ["x", "y"]}
    assert settings_from_mapping(s.to_dict()) == s
    for teams, words in (
        ({"A": ["x"]}, "not a DNS label"),
        ({"a": ["X"]}, "namespace 'X'"),
        ({"a": "x"}, "list"),
    ):
        with pytest.raises(SettingsError, match=words) as err:
            settings_from_mapping({"teams": teams})
        assert err.value.field == "teams"


def test_one_value_reads_as_the_model_reads_it() -> None:
    assert setting_value("healthy_after_seconds", "2m") == 120.0
    assert setting_value("leaseStaleSeconds", 20) == 20.0
    with pytest.raises(SettingsError, match="two kubelet renewals") as err:
        setting_value("leaseStaleSeconds", 15)
    assert err.value.field == "lease_stale_seconds"


def test_the_settings_reference_is_written_from_the_model() -> None:
    committed = (ROOT / DOC_PATH).read_text(encoding="utf-8")
    assert committed == render(), f"{DOC_PATH} is stale: run {COMMAND}"
    for name, entry in settings_schema().items():
        assert f"| `{entry['key']}` | `{name}` | " in committed, name
