"""Settings: defaults, loading from the ConfigMap formats, and errors that name the field."""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

import pytest
import yaml

from tpu_platform.hotswap.core import (
    Settings,
    SettingsError,
    settings_from_json,
    settings_from_mapping,
    settings_from_yaml,
    settings_schema,
)


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
    assert list(schema) == [f.name for f in fields(Settings)]
    for name, entry in schema.items():
        assert len(entry["doc"]) > 40, name
        assert entry["default"] == Settings().to_dict()[name]
