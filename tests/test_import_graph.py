"""No import circle anywhere in the installed package: layers import downward only."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tests.import_graph import discover, import_cycles, import_graph, package_graph

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


def test_no_import_cycle_between_packages() -> None:
    """Within every package, its modules and sub-packages import one way: ``config`` does not use the
    queue plan built on it, nor ``plan`` the policy rules that read plans."""
    modules = discover(_package_roots())
    graph = import_graph(modules)
    packages = sorted(name for name, module in modules.items() if module.is_package)
    assert "tpu_platform" in packages and "tpu_platform.config.checks" in packages
    cycles = [cycle for package in packages for cycle in import_cycles(package_graph(graph, package))]
    assert not cycles, "package cycles:\n" + "\n".join(" -> ".join(cycle) for cycle in cycles)


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


def test_a_cycle_between_packages_is_found_without_a_module_cycle(tmp_path: Path) -> None:
    roots = _write(
        tmp_path,
        {
            "__init__.py": "",
            "low/__init__.py": "",
            "low/checks.py": "from pkg.high.build import plan\n",
            "low/model.py": "thing = 1\n",
            "high/__init__.py": "",
            "high/build.py": "from pkg.low.model import thing\nplan = thing\n",
        },
    )
    graph = import_graph(discover(roots))
    assert import_cycles(graph) == []
    assert import_cycles(package_graph(graph, "pkg")) == [["pkg.high", "pkg.low", "pkg.high"]]
    assert package_graph(graph, "pkg.low") == {"pkg.low.checks": set(), "pkg.low.model": set()}


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


_IMPORT_EACH_FIRST = """
import importlib, sys, traceback
failed = []
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m == "tpu_platform" or m.startswith("tpu_platform.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception:
        failed.append(name + ": " + traceback.format_exc(limit=-3))
print("\\n".join(failed))
sys.exit(1 if failed else 0)
"""


def test_every_module_imports_when_imported_first() -> None:
    """A circle through a package's ``__init__`` only shows at run time, in one import order."""
    import subprocess
    import sys

    names = sorted(n for n in discover(_package_roots()) if not n.endswith("__main__"))
    result = subprocess.run(
        [sys.executable, "-c", _IMPORT_EACH_FIRST, *names], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


CONFIG_LAYERS = {
    "problems": 0,
    "base": 1,
    "shapes": 1,
    "explain": 1,
    "decode": 1,
    "formats": 1,
    "kueue_gates": 1,
    "zones": 1,
    **dict.fromkeys(
        [
            *("cluster", "pools", "priorities", "kueue", "quota", "cohorts", "teams", "hotswap"),
            *("monitoring", "maintenance", "network", "fleet"),
        ],
        2,
    ),
    "platform": 3,
    "capacity": 4,  # whole slices the pools provide and the quotas claim, for the checks
    "checks": 4,
    "sizing": 4,  # derived from a whole stack, like the checks
    "partial": 4,  # the sections of a whole stack that validated, for the checks
    "google_identity": 4,  # the Google steps a kubeconfig-mode stack's controller needs, from the whole stack
    "loader": 5,
    "": 6,  # the package itself
}


def _config_layer(module: str) -> int | None:
    if module != "tpu_platform.config" and not module.startswith("tpu_platform.config."):
        return None
    part = module.removeprefix("tpu_platform.config").lstrip(".").split(".")[0]
    return CONFIG_LAYERS[part]


def test_config_layers_import_downward_only() -> None:
    """problems < formats < one model per section < the stack < checks < loader."""
    graph = import_graph(discover(_package_roots()))
    upward = [
        f"{source} -> {target}"
        for source, targets in graph.items()
        if (src := _config_layer(source)) is not None
        for target in targets
        if (dst := _config_layer(target)) is not None and dst > src
    ]
    assert not upward, "config modules importing a layer above their own:\n" + "\n".join(upward)
