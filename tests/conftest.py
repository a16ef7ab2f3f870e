"""Shared test helpers: minimal valid stacks and offline rendering."""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from typing import Any

import pytest

MINIMAL_STACK: dict[str, Any] = {
    "gcp:project": "test-project",
    "gcp:region": "us-east5",
    "gcp:zone": "us-east5-b",
    "tpu-platform:cluster": {"name": "tpu-test"},
    "tpu-platform:slicePools": [{"name": "train", "topology": "4x4", "count": 2}],
}


@pytest.fixture
def stack() -> dict[str, Any]:
    """A fresh, minimal, valid stack config map that a test may change."""
    return copy.deepcopy(MINIMAL_STACK)


@pytest.fixture
def render_stack() -> Callable[..., Any]:
    """Render a stack config map under Pulumi's mocks with the real program."""
    from tpu_platform.components.program import stack_program

    from tpu_platform.plan import render

    def _render(config: dict[str, Any], name: str = "test") -> Any:
        return render(stack_program, config, stack=name)

    return _render


# Tests never reach the internet: the linter's first-use download of the pinned CRDs is off.
os.environ.setdefault("TPU_PLATFORM_OFFLINE", "1")
