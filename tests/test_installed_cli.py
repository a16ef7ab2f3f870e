"""The built wheel in a fresh virtual environment that holds only what the package declares.

Each environment gets the wheel (installed by pip, so the ``tpu-platform`` console script exists)
and exactly the distributions its declared requirements reach, extras included or not, linked in
from this test run's own environment: no network, and a module imported but not declared fails
here. Every entry point runs from a folder outside the repository.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.test_reuse_package import wheel  # noqa: F401  (the module-scoped wheel fixture)

REPO_ROOT = Path(__file__).resolve().parents[1]
CRDS = Path(os.environ.get("TPU_PLATFORM_CRDS", REPO_ROOT.parent / "shared" / "crds"))


def _closure(requirements: Iterable[str]) -> dict[str, metadata.Distribution]:
    """Every installed distribution that ``requirements`` reach, markers and extras evaluated."""
    found: dict[str, metadata.Distribution] = {}
    todo = [(Requirement(r), frozenset[str]()) for r in requirements]
    while todo:
        req, _ = todo.pop()
        name = canonicalize_name(req.name)
        dist = metadata.distribution(req.name)
        first_visit = name not in found
        found[name] = dist
        for raw in dist.requires or []:
            sub = Requirement(raw)
            if sub.marker is None:
                wanted = first_visit
            else:
                environment = {str(k): str(v) for k, v in default_environment().items()}
                wanted = any(
                    sub.marker.evaluate({**environment, "extra": extra})
                    for extra in ("", *sorted(req.extras))
                )
            if wanted and canonicalize_name(sub.name) not in found:
                todo.append((sub, frozenset(sub.extras)))
    return found


def _link_into(site: Path, dists: dict[str, metadata.Distribution]) -> None:
    """Symlink each distribution's top-level files and folders, and its metadata, into ``site``."""
    for dist in dists.values():
        base = Path(str(dist.locate_file("")))
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in tops:
            source = base / top
            target = site / top
            if source.exists() and not target.exists():
                target.symlink_to(source)


def _declared(extras: tuple[str, ...]) -> list[str]:
    import tomllib

    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    optional = project["optional-dependencies"]
    return [*project["dependencies"], *(r for extra in extras for r in optional[extra])]


def _venv(root: Path, wheel_path: Path, extras: tuple[str, ...]) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, timeout=120)
    python = root / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    _link_into(Path(purelib), _closure(_declared(extras)))
    pip = [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index"]
    subprocess.run(
        [*pip, str(wheel_path)],
        check=True,
        timeout=120,
    )
    return root


@pytest.fixture(scope="module")
def full_env(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:  # noqa: F811
    return _venv(tmp_path_factory.mktemp("full") / "venv", wheel, ("lint", "sim", "controller"))


@pytest.fixture(scope="module")
def bare_env(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:  # noqa: F811
    return _venv(tmp_path_factory.mktemp("bare") / "venv", wheel, ())


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user's Pulumi project folder: a project file and the example stacks, nothing else."""
    root = tmp_path_factory.mktemp("project")
    shutil.copy2(REPO_ROOT / "Pulumi.yaml", root / "Pulumi.yaml")
    shutil.copytree(REPO_ROOT / "stacks", root / "stacks")
    shutil.copytree(REPO_ROOT / "examples" / "jobsets", root / "jobsets")
    return root


def _run(env: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    clean["PATH"] = f"{env / 'bin'}{os.pathsep}{clean.get('PATH', '')}"
    clean["TPU_PLATFORM_CRDS"] = str(CRDS)
    return subprocess.run(
        list(args), capture_output=True, text=True, cwd=cwd, env=clean, timeout=300, check=False
    )


def test_the_environment_holds_only_declared_distributions(full_env: Path) -> None:
    listed = _run(full_env, full_env, "python", "-m", "pip", "list", "--format=freeze").stdout
    names = {canonicalize_name(line.split("==")[0]) for line in listed.splitlines() if "==" in line}
    assert "pytest" not in names and "hypothesis" not in names
    assert {"tpu-platform", "pulumi", "jsonschema", "matplotlib", "kubernetes"} <= names


def test_console_script_version_and_help(bare_env: Path, project: Path) -> None:
    from tpu_platform import __version__

    version = _run(bare_env, project, "tpu-platform", "--version")
    assert (version.returncode, version.stdout.strip()) == (0, f"tpu-platform {__version__}")
    helped = _run(bare_env, project, "tpu-platform", "--help")
    assert helped.returncode == 0
    for command in ("plan", "validate", "lint", "whatif", "policy"):
        assert re.search(rf"^\s+{command}\s+\S", helped.stdout, re.M), f"{command} missing from --help"


def test_plan_from_the_wheel_matches_the_committed_plan(bare_env: Path, project: Path) -> None:
    """Same resources as the repository's plan; the image tag too, so the package data is complete."""
    result = _run(bare_env, project, "tpu-platform", "plan", "dev")
    assert result.returncode == 0, result.stderr
    rendered = yaml.safe_load((project / "plans" / "dev.yaml").read_text())
    committed = yaml.safe_load((REPO_ROOT / "plans" / "dev.yaml").read_text())
    assert [(r["type"], r["name"]) for r in rendered["resources"]] == [
        (r["type"], r["name"]) for r in committed["resources"]
    ]

    def image_tags(doc: dict[str, object]) -> list[object]:
        resources = doc["resources"]
        assert isinstance(resources, list)
        return [r["inputs"]["tags"] for r in resources if r["type"] == "docker-build:index:Image"]

    assert image_tags(rendered) == image_tags(committed)


def test_validate_takes_a_stack_file_path(bare_env: Path, project: Path) -> None:
    result = _run(bare_env, project, "tpu-platform", "validate", "stacks/Pulumi.prod.yaml")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("stack prod: ok")


def test_lint_without_its_extra_names_the_extra(bare_env: Path, project: Path) -> None:
    result = _run(
        bare_env, project, "tpu-platform", "lint", "jobsets/high-jax-trillium.yaml", "--stack", "seed"
    )
    assert result.returncode == 2
    assert "pip install 'tpu-platform[lint]'" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.skipif(not CRDS.is_dir(), reason=f"upstream CRDs not found at {CRDS}")
def test_lint_from_the_wheel(full_env: Path, project: Path) -> None:
    result = _run(
        full_env, project, "tpu-platform", "lint", "jobsets/high-jax-trillium.yaml", "--stack", "seed"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    broken = _run(
        full_env,
        project,
        "tpu-platform",
        "lint",
        "jobsets/seed-originals/high-jax-trillium.yaml",
        "--stack",
        "seed",
    )
    assert broken.returncode == 1
    assert "queue-as-annotation" in broken.stdout


def test_whatif_from_the_wheel(full_env: Path, project: Path, tmp_path: Path) -> None:
    result = _run(
        full_env, project, "tpu-platform", "whatif", "dev", "--after", "900", "--out", str(tmp_path)
    )
    assert result.returncode == 0, result.stderr
    assert "high-priority JobSets hit: pods Running" in result.stdout
    assert (tmp_path / "whatif-dev.png").stat().st_size > 0


def test_controller_entry_point_from_the_wheel(full_env: Path, project: Path) -> None:
    result = _run(full_env, project, "python", "-m", "tpu_platform.hotswap", "--help")
    assert result.returncode == 0, result.stderr
    assert "--kubeconfig" in result.stdout


def test_outside_a_project_a_stack_name_is_a_clear_error(bare_env: Path, tmp_path: Path) -> None:
    result = _run(bare_env, tmp_path, "tpu-platform", "plan", "dev")
    assert result.returncode == 2
    assert "no Pulumi.yaml in" in result.stderr and "Traceback" not in result.stderr
