"""Shared names have one home: no layer spells a namespace, label, annotation or taint key itself.

``tpu_platform/hotswap`` keeps its own (its image ships nothing else; ``tpu_platform.constants``
takes the controller's keys from it); the simulator imports them like every other layer.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tpu_platform import constants

ROOT = Path(__file__).resolve().parent.parent
EXEMPT = ("tpu_platform/constants.py", "tpu_platform/hotswap/")


def _shared_values() -> dict[str, str]:
    values: dict[str, str] = {}
    for name in dir(constants):
        value = getattr(constants, name)
        if not name.isupper():
            continue
        # Keys (``prefix/name``), the domain and namespaces; plain words such as "enabled" are no key.
        if isinstance(value, str) and ("/" in value or name == "DOMAIN" or name.endswith("NAMESPACE")):
            values[value] = name
        elif name == "RESERVED_NAMESPACES":
            values.update({ns: name for ns in value})
    return values


def _literals(path: Path) -> list[tuple[int, str]]:
    """String constants of a module, without docstrings."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_shared_keys_are_spelt_only_in_constants() -> None:
    shared = _shared_values()
    assert {"google.com/tpu", "kueue-system", "gmp-system", "tpu-platform.dev/team"} <= set(shared)
    found = []
    for folder in ("tpu_platform", "components"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative.startswith(EXEMPT):
                continue
            found += [
                f"{relative}:{line}: {value!r} is tpu_platform.constants.{shared[value]}"
                for line, value in _literals(path)
                if value in shared
            ]
    assert not found, "\n".join(found)


def test_the_controller_and_the_platform_agree_on_its_keys() -> None:
    from tpu_platform.hotswap.core import constants as controller

    assert (constants.HOTSWAP_OPT_IN_LABEL, constants.HOTSWAP_OPT_IN_VALUE) == (
        "tpu-platform.dev/hotswap",
        "enabled",
    )
    assert controller.OPT_IN_LABEL == constants.HOTSWAP_OPT_IN_LABEL
    assert controller.NODEPOOL_LABEL == constants.LABEL_NODEPOOL == "cloud.google.com/gke-nodepool"
    assert controller.TPU_RESOURCE == constants.TPU_RESOURCE == "google.com/tpu"


@pytest.mark.parametrize("namespace", sorted(constants.RESERVED_NAMESPACES | constants.BUILTIN_NAMESPACES))
def test_no_reserved_namespace_is_the_hotswap_controllers(namespace: str) -> None:
    from tests.config.stack_problems import only_problem
    from tests.conftest import MINIMAL_STACK

    config = {**MINIMAL_STACK, "tpu-platform:hotswap": {"enabled": True, "namespace": namespace}}
    assert only_problem(config) == (
        f"tpu-platform:hotswap.namespace: {namespace!r} is not ours to own; pick a dedicated namespace"
    )
