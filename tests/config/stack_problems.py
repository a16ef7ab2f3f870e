"""Helpers for validation tests: the problems a stack config map is rejected with."""

from __future__ import annotations

from typing import Any

import pytest

from tpu_platform.config import StackConfigError
from tpu_platform.plan import parse_stack_config


def problems_of(config: dict[str, Any]) -> list[str]:
    """Every problem line of a stack that must fail validation."""
    with pytest.raises(StackConfigError) as err:
        parse_stack_config(config)
    return err.value.problems


def only_problem(config: dict[str, Any]) -> str:
    """The single problem of a stack with exactly one mistake."""
    problems = problems_of(config)
    assert len(problems) == 1, problems
    return problems[0]
