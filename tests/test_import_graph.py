"""No import circle anywhere in the installed package: layers import downward only."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tests.import_graph import discover, import_cycles, import_graph

ROOT = Path(__file__).resolve().parent.parent


def _package_roots() -> dict[str, Path]:
    """``tpu_platform`` and every folder pyproject.toml installs under another name (components/)."""
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    roots = {"tpu_platform": ROOT / "tpu_platform"}
    roots.update({name: ROOT / folder for name, folder in tool.get("package-dir", {}).items()})
    return roots


def test_no_import_cycle_in_the_package() -> None:
    modules = discover(_package_roots())
    assert "tpu_platform.config.loader" in modules and "tpu_platform.components.program" in modules
    cycles = import_cycles(import_graph(modules))
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(cycle) for cycle in cycles)


def _write(root: Path, files: dict[str, str]) -> dict[str, Path]:
    for relative, text in files.items():
        path = root / "pkg" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return {"pkg": root / "pkg"}


@pytest.mark.parametrize(
    ("a_imports", "why"),
    [
        ("from . import b\n", "a relative import of a sibling"),
        ("from pkg.b import thing\n", "an absolute import of a name"),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import thing\n", "TYPE_CHECKING"),
        ("def late():\n    import pkg.b\n", "an import inside a function"),
    ],
)
def test_a_cycle_is_found_and_named(tmp_path: Path, a_imports: str, why: str) -> None:
    roots = _write(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": a_imports,
            "b.py": "from .c import other\nthing = 1\n",
            "c.py": "from pkg.a import late\nother = 2\n",
        },
    )
    assert import_cycles(import_graph(discover(roots))) != [], why


def test_the_cycle_is_named_as_a_path(tmp_path: Path) -> None:
    roots = _write(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from . import b\n",
            "b.py": "from .c import x\n",
            "c.py": "import pkg.a\n",
        },
    )
    assert import_cycles(import_graph(discover(roots))) == [["pkg.a", "pkg.b", "pkg.c", "pkg.a"]]


def test_a_relative_import_through_the_parent_package(tmp_path: Path) -> None:
    roots = _write(
        tmp_path,
        {
            "__init__.py": "",
            "sub/__init__.py": "",
            "sub/a.py": "from ..b import thing\n",
            "b.py": "from .sub import a\nthing = 1\n",
        },
    )
    assert import_cycles(import_graph(discover(roots))) == [["pkg.b", "pkg.sub.a", "pkg.b"]]


def test_a_package_importing_its_own_submodules_is_no_cycle(tmp_path: Path) -> None:
    roots = _write(
        tmp_path,
        {
            "__init__.py": "from . import a\nfrom .b import thing\n",
            "a.py": "from pkg import b\n",
            "b.py": "import os\nthing = os.sep\n",
        },
    )
    graph = import_graph(discover(roots))
    assert graph == {"pkg": {"pkg.a", "pkg.b"}, "pkg.a": {"pkg.b"}, "pkg.b": set()}
    assert import_cycles(graph) == []
