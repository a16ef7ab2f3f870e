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

# A module belongs to the longest prefix listed, and imports only its own layer and the ones below.
LAYERS: dict[str, int] = {
    # pure logic the stack model stands on
    "tpu_platform": 0,
    "tpu_platform.catalog": 0,
    "tpu_platform.constants": 0,
    "tpu_platform.hotswap": 0,
    "tpu_platform.hotswap.core": 0,
    "tpu_platform.hotswap.deploy": 0,
    # the adapter's pure parts: its config-file format (rendered by deploy), its API protocol (no
    # client), and the table of its API calls (the RBAC deploy renders is built from it)
    "tpu_platform.hotswap.adapter.config": 0,
    "tpu_platform.hotswap.adapter.client": 0,
    "tpu_platform.hotswap.adapter.access": 0,
    # the stack model, with its own checks: they use nothing built on it
    "tpu_platform.config": 1,
    # pure logic built on the stack model
    "tpu_platform.slices": 2,
    "tpu_platform.quota": 2,
    "tpu_platform.kueue": 2,
    "tpu_platform.summary": 2,
    "tpu_platform.monitoring": 2,
    # tools over the pure logic
    "tpu_platform.project": 3,
    "tpu_platform.kubeconfig_check": 3,
    "tpu_platform.terminal": 3,
    "tpu_platform.plan": 3,
    "tpu_platform.schema": 3,
    "tpu_platform.status": 3,
    "tpu_platform.testing": 3,
    # tools that read stack files and offline plans through ``plan``
    "tpu_platform.lint": 4,
    "tpu_platform.entry": 4,
    "tpu_platform.policy": 4,
    "tpu_platform.sim": 4,
    # I/O
    "tpu_platform.components": 5,
    "tpu_platform.hotswap.adapter": 5,
    "tpu_platform.hotswap.__main__": 5,
    "tpu_platform.cli": 5,
    "tpu_platform.commands": 5,
    "tpu_platform.status.fetch": 5,
    "tpu_platform.__main__": 5,
}
NAMES = {
    0: "pure logic below the stack model",
    1: "the stack model",
    2: "pure logic on the stack model",
    3: "tools",
    4: "tools over stack files and plans",
    5: "I/O",
}


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


@pytest.mark.parametrize(
    ("lower", "upper"),
    [
        ("tpu_platform.config.checks.capacity", "tpu_platform.quota.build"),  # a quota layout of the stack
        ("tpu_platform.plan.changes", "tpu_platform.policy.replacement"),  # a rule over plans
    ],
)
def test_what_is_built_on_a_layer_sits_above_it(lower: str, upper: str) -> None:
    """The stack's checks may not use the quota layout, nor the plan review the policy rules."""
    lower_layer, upper_layer = layer_of(lower), layer_of(upper)
    assert lower_layer is not None and upper_layer is not None and lower_layer < upper_layer


def test_the_checker_sees_relative_and_late_imports(tmp_path: Path) -> None:
    source = tmp_path / "mod.py"
    source.write_text("def f():\n    from ..components.program import x\n    from . import sibling\n")
    assert imports_of("tpu_platform.lint.mod", source) >= {
        "tpu_platform.components.program",
        "tpu_platform.lint.sibling",
    }
