"""A committed plan holds no machine's path: the controller image's build paths read the same from a
checkout and from an installed wheel."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

import pytest

from tpu_platform.plan.document import IMAGE_TYPE, _portable_build_paths

ROOT = Path(str(resources.files("tpu_platform"))).resolve().parent


@pytest.mark.parametrize("cwd", ["/", "/tmp", str(ROOT)])
def test_the_build_paths_are_relative_to_the_build_context_wherever_the_program_ran(
    cwd: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(cwd)
    inputs = {
        "context": {"location": os.path.relpath(ROOT)},
        "dockerfile": {"location": os.path.relpath(ROOT / "tpu_platform" / "hotswap" / "Dockerfile")},
        "push": True,
    }
    out = _portable_build_paths(IMAGE_TYPE, inputs)
    assert out == {
        "context": {"location": "."},
        "dockerfile": {"location": "tpu_platform/hotswap/Dockerfile"},
        "push": True,
    }


def test_other_resources_and_paths_outside_the_package_are_left_as_they_are() -> None:
    inputs = {"context": {"location": "/elsewhere"}}
    assert _portable_build_paths(IMAGE_TYPE, inputs) == inputs
    assert _portable_build_paths("gcp:container/cluster:Cluster", {"location": "."}) == {"location": "."}
