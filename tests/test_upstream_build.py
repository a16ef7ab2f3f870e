"""``upstream/build.py``: what each pinned component builds and reports, read without building."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BUILD = Path(__file__).resolve().parents[1] / "upstream" / "build.py"


def load_build() -> ModuleType:
    spec = importlib.util.spec_from_file_location("upstream_build", BUILD)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module's annotations through it
    spec.loader.exec_module(module)
    return module


build = load_build()


def component(name: str) -> Any:
    return next(c for c in build.COMPONENTS if c.name == name)


def test_the_engine_and_the_provider_are_pinned_components() -> None:
    cli, provider = component("pulumi"), component("pulumi-kubernetes")
    assert cli.version() == "v3.274.0" and cli.release() == "v3.274.0"
    # The proxy serves the provider module only as a pseudo-version: its commit is tag v4.25.0.
    assert provider.version().endswith("-f47bc2d6f199") and provider.release() == "v4.25.0"
    assert "version.Version=4.25.0" in build.ldflags(provider)
    assert "version.Version=v3.274.0" in build.ldflags(cli)


def test_the_python_sdk_pin_is_the_provider_the_live_tier_builds() -> None:
    requirements = (BUILD.parents[1] / "requirements.txt").read_text()
    assert f"pulumi-kubernetes=={component('pulumi-kubernetes').release().lstrip('v')}" in requirements


def test_a_new_pseudo_version_without_its_tag_is_an_error_naming_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = "github.com/pulumi/pulumi-kubernetes/provider/v4"
    (tmp_path / "pulumi-kubernetes").mkdir()
    (tmp_path / "pulumi-kubernetes" / "go.mod").write_text(
        f"module x\n\nrequire {module} v4.0.0-20270101000000-abcdefabcdef\n"
    )
    monkeypatch.setattr(build, "HERE", tmp_path)
    stale = build.Component("pulumi-kubernetes", module, {}, tag=("f47bc2d6f199", "v4.25.0"))
    with pytest.raises(SystemExit, match=r"set Component\.tag to the new commit's tag"):
        stale.release()


def test_an_embedded_schema_carries_the_release_version(tmp_path: Path) -> None:
    module_dir, folder = tmp_path / "module", tmp_path / "ours"
    (module_dir / "cmd").mkdir(parents=True)
    folder.mkdir()
    (module_dir / "cmd" / "schema.json").write_text(json.dumps({"name": "kubernetes", "resources": {}}))
    build.Embed("cmd/schema.json", "schema-embed.json", set_version=True).write(module_dir, folder, "v4.25.0")
    assert json.loads((folder / "schema-embed.json").read_text()) == {
        "name": "kubernetes",
        "resources": {},
        "version": "4.25.0",
    }
