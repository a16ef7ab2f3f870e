"""The package's layers, as docs/development.md's "What is in the box" states them: nothing imports a
layer above it.

Read from the source with ``ast`` (every ``import`` and ``from ... import``, relative ones resolved,
including imports inside functions), so a late import cannot hide an upward edge.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

# A module belongs to the longest prefix listed: 0 pure logic, 1 tools over it, 2 I/O.
LAYERS: dict[str, int] = {
    # pure logic
    "tpu_platform": 0,
    "tpu_platform.catalog": 0,
    "tpu_platform.config": 0,
    "tpu_platform.slices": 0,
    "tpu_platform.queueplan": 0,
    "tpu_platform.constants": 0,
    "tpu_platform.kueue": 0,
    "tpu_platform.summary": 0,
    "tpu_platform.hotswap": 0,
    "tpu_platform.hotswap.core": 0,
    "tpu_platform.hotswap.deploy": 0,
    "tpu_platform.monitoring": 0,
    # the adapter's pure parts: its config-file format (rendered by deploy), its API protocol (no
    # client), and the table of its API calls (the RBAC deploy renders is built from it)
    "tpu_platform.hotswap.adapter.config": 0,
    "tpu_platform.hotswap.adapter.api": 0,
    "tpu_platform.hotswap.adapter.access": 0,
    # tools over the pure logic
    "tpu_platform.project": 1,
    "tpu_platform.terminal": 1,
    "tpu_platform.plan": 1,
    "tpu_platform.schema": 1,
    "tpu_platform.lint": 1,
    "tpu_platform.policy": 1,
    "tpu_platform.sim": 1,
    "tpu_platform.status": 1,
    "tpu_platform.testing": 1,
    # I/O
    "tpu_platform.components": 2,
    "tpu_platform.hotswap.adapter": 2,
    "tpu_platform.hotswap.__main__": 2,
    "tpu_platform.cli": 2,
    "tpu_platform.commands": 2,
    "tpu_platform.status.fetch": 2,
    "tpu_platform.__main__": 2,
}
NAMES = {0: "pure logic", 1: "tools", 2: "I/O"}


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for base, prefix in ((REPO_ROOT / "tpu_platform", "tpu_platform"), (REPO_ROOT / "components", None)):
        for path in base.rglob("*.py"):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            head = [prefix] if prefix else ["tpu_platform", "components"]
            found[".".join(head + parts)] = path
    return found


def layer_of(module: str) -> int | None:
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        layer = LAYERS.get(".".join(parts[:end]))
        if layer is not None:
            return layer
    return None


def imports_of(module: str, path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            out.add(target)
            out.update(f"{target}.{alias.name}" for alias in node.names)
    return {name for name in out if name.startswith("tpu_platform")}


def test_every_module_has_a_layer() -> None:
    unplaced = sorted(m for m in _modules() if layer_of(m) is None)
    assert not unplaced, f"place these modules in LAYERS (and docs/development.md's layer list): {unplaced}"


@pytest.mark.parametrize("module", sorted(_modules()))
def test_no_module_imports_a_layer_above_its_own(module: str) -> None:
    modules = _modules()
    mine = layer_of(module)
    assert mine is not None
    upward = sorted(
        name
        for name in imports_of(module, modules[module])
        if name in modules and (layer_of(name) or 0) > mine
    )
    assert not upward, f"{module} ({NAMES[mine]}) imports {upward} from a layer above it"


def test_the_checker_sees_relative_and_late_imports(tmp_path: Path) -> None:
    source = tmp_path / "mod.py"
    source.write_text("def f():\n    from ..components.program import x\n    from . import sibling\n")
    assert imports_of("tpu_platform.lint.mod", source) >= {
        "tpu_platform.components.program",
        "tpu_platform.lint.sibling",
    }
