"""The fleet stack, as a file and rendered once per module: shared by the fleet tests."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tpu_platform.plan import load_stack_config, render, stack_file


@pytest.fixture
def fleet_stack() -> dict[str, Any]:
    return copy.deepcopy(load_stack_config(stack_file("fleet")))


@pytest.fixture(scope="module")
def rendered() -> Any:
    from tpu_platform.components.program import stack_program

    return render(stack_program, load_stack_config(stack_file("fleet")), stack="fleet")
