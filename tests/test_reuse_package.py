"""The package other Pulumi projects install: its wheel, its import name, and a consumer stack on it.

The wheel is built offline from a copy of the sources (as ``pip install git+https://...``
builds it), unpacked into a fresh folder and imported from a process that cannot see this
repository, so a component importing ``components.*`` instead of a relative or
``tpu_platform.*`` import fails here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

from tpu_platform.policy import Resource, evaluate

REPO_ROOT = Path(__file__).resolve().parents[1]
CONSUMER = REPO_ROOT / "examples" / "consumer"
PROVIDER = REPO_ROOT / "provider"
SOURCES = ("pyproject.toml", "README.md", "tpu_platform", "components")


def _copy_sources(target: Path) -> Path:
    """Only what the wheel is built from, so the build writes nothing into the repository."""
    target.mkdir()
    for name in SOURCES:
        source = REPO_ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, target / name)
    return target


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    source = _copy_sources(work / "src")
    dist = work / "dist"
    result = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index"),
            *("-q", "--disable-pip-version-check", str(source), "-w", str(dist)),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"building the wheel failed:\n{result.stdout}\n{result.stderr}"
    (built,) = dist.glob("tpu_platform-*.whl")
    return built


@pytest.fixture(scope="module")
def site(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel installed into its own folder (a pure-Python wheel installs by unpacking)."""
    target = tmp_path_factory.mktemp("site")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(target)
    return target


def run_installed(
    site: Path, code: str, *args: str, path: tuple[Path, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` where only the installed package (and the venv's dependencies) is importable."""
    elsewhere = site.parent / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    pythonpath = os.pathsep.join(str(p) for p in (site, *path))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": pythonpath}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        cwd=elsewhere,
        env=env,
        timeout=120,
        check=False,
    )


def _python_files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*.py") if "__pycache__" not in p.parts}


def test_wheel_holds_every_module_under_one_import_name(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {f"tpu_platform/{p}" for p in _python_files(REPO_ROOT / "tpu_platform")}
    expected |= {f"tpu_platform/components/{p}" for p in _python_files(REPO_ROOT / "components")}
    missing = sorted(expected - names)
    assert not missing, (
        f"the wheel leaves out {missing}: add their packages to [tool.setuptools] packages in pyproject.toml"
    )
    top_level = {n.split("/", 1)[0] for n in names}
    assert top_level == {"tpu_platform", wheel.name.split("-py3")[0] + ".dist-info"}
    assert not any(n.startswith("components/") for n in names)


def test_declared_dependencies_admit_the_pinned_versions(wheel: Path) -> None:
    """What a consumer's pip resolves must include what this repository is tested with."""
    declared = {
        Requirement(r).name: Requirement(r)
        for r in tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    }
    pins = {
        Requirement(line).name: Requirement(line)
        for line in (REPO_ROOT / "requirements.in").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert set(declared) <= set(pins)
    pins = {name: pins[name] for name in declared}
    for name, pin in pins.items():
        (spec,) = pin.specifier
        assert declared[name].specifier.contains(spec.version), f"{name}: {declared[name]} excludes {pin}"
    metadata = zipfile.ZipFile(wheel).read(f"{wheel.name.split('-py3')[0]}.dist-info/METADATA").decode()
    required = [
        Requirement(line.split(": ", 1)[1])
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist")
    ]
    assert {r.name for r in required if r.marker is None} == set(declared)
    extras = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for extra, requirements in extras.items():
        wanted = {Requirement(r).name for r in requirements}
        assert {r.name for r in required if r.marker and r.marker.evaluate({"extra": extra})} == wanted, extra


def test_installed_package_imports_without_the_repository(site: Path) -> None:
    result = run_installed(
        site,
        """
        import importlib.util, json
        import tpu_platform.components as c
        print(json.dumps({
            "components": c.__file__,
            "public": sorted(c.__all__),
            "bare_components": importlib.util.find_spec("components") is not None,
        }))
        """,
    )
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["components"].startswith(str(site))
    assert not found["bare_components"], "a top-level `components` package would collide in consumer projects"
    assert {"GkeCluster", "TpuPlatform", "TpuSlicePool", "KueueInstall", "KueueQueues"} <= set(
        found["public"]
    )


RENDER_CONSUMER = """
import dataclasses, json, runpy, sys
import yaml
import tpu_platform
from tpu_platform.plan import render

program, stack_file = sys.argv[1], sys.argv[2]
config = yaml.safe_load(open(stack_file))["config"]
rendering = render(
    lambda: runpy.run_path(program, run_name="__main__"), config, project="tpu-research", stack="research"
)
print(json.dumps({
    "package": tpu_platform.__file__,
    "resources": [dataclasses.asdict(r) for r in rendering.resources],
    "outputs": rendering.outputs,
}))
"""


@pytest.fixture(scope="module")
def consumer(site: Path) -> dict[str, Any]:
    """The example consumer stack, rendered under mocks against the installed package."""
    result = run_installed(
        site, RENDER_CONSUMER, str(CONSUMER / "__main__.py"), str(CONSUMER / "Pulumi.research.yaml")
    )
    assert result.returncode == 0, result.stderr
    rendered: dict[str, Any] = json.loads(result.stdout)
    assert rendered["package"].startswith(str(site))
    return rendered


def _of_type(consumer: dict[str, Any], type_: str) -> list[dict[str, Any]]:
    return [r for r in consumer["resources"] if r["type"] == type_]


def test_consumer_adopts_its_cluster_and_adds_its_own_slices(consumer: dict[str, Any]) -> None:
    assert _of_type(consumer, "gcp:container/cluster:Cluster") == []
    pools = {p["inputs"]["name"]: p["inputs"] for p in _of_type(consumer, "gcp:container/nodePool:NodePool")}
    assert sorted(pools) == ["rs-2x4-0", "rs-2x4-1", "rs-4x4"]
    assert {p["cluster"] for p in pools.values()} == {"research-gke"}
    assert pools["rs-4x4"]["nodeConfig"]["reservationAffinity"]["values"] == ["research-v6e-4x4"]
    assert pools["rs-2x4-0"]["nodeConfig"]["machineType"] == "ct6e-standard-8t"
    assert consumer["outputs"]["nodePools"] == ["rs-2x4-0", "rs-2x4-1", "rs-4x4"]
    assert consumer["outputs"]["summary"]["chips"] == 32


def test_consumer_queues_cover_exactly_its_slices(consumer: dict[str, Any]) -> None:
    queues = {
        q["inputs"]["metadata"]["name"]: q
        for q in _of_type(consumer, "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue")
    }
    assert sorted(queues) == ["language-cq", "vision-cq"]
    charts = {c["urn"] for c in _of_type(consumer, "kubernetes:helm.sh/v4:Chart")}
    assert all(set(q["dependencies"]) & charts for q in queues.values())


def test_policy_pack_passes_the_consumer_stack(consumer: dict[str, Any]) -> None:
    resources = [
        Resource(r["urn"], r["type"], r["name"], r["inputs"], r["parent"], tuple(r["dependencies"]))
        for r in consumer["resources"]
    ]
    violations = evaluate(resources)
    assert violations == [], "\n".join(map(str, violations))


PROVIDER_SCHEMA = """
from pulumi.provider.experimental.component import ComponentProvider
import tpu_platform_provider as p
print(ComponentProvider([p.SlicePools, p.StackPlatform], p.PACKAGE, None, "0.1.0").schema)
"""


def test_component_package_schema_is_inferred_offline(site: Path) -> None:
    """What ``pulumi package add`` would read: every input typed, plain where it must be known."""
    result = run_installed(site, PROVIDER_SCHEMA, path=(PROVIDER,))
    assert result.returncode == 0, result.stderr
    schema = json.loads(result.stdout)
    assert schema["name"] == "tpu-platform"
    assert sorted(schema["resources"]) == [
        "tpu-platform:index:SlicePools",
        "tpu-platform:index:StackPlatform",
    ]
    pools = schema["resources"]["tpu-platform:index:SlicePools"]
    assert pools["isComponent"] is True
    assert sorted(pools["requiredInputs"]) == ["clusterName", "project", "region", "slicePools", "zone"]
    assert (
        pools["inputProperties"]["slicePools"]["items"]["$ref"] == "#/types/tpu-platform:index:SlicePoolArgs"
    )
    assert pools["inputProperties"]["nodeServiceAccount"].get("plain") is None, "an Input may be an Output"
    assert pools["properties"]["poolNames"]["items"]["type"] == "string"
    slice_pool = schema["types"]["tpu-platform:index:SlicePoolArgs"]
    assert sorted(slice_pool["required"]) == ["name", "topology"]
    assert slice_pool["properties"]["capacity"]["$ref"] == "#/types/tpu-platform:index:CapacityArgs"
    platform = schema["resources"]["tpu-platform:index:StackPlatform"]
    assert {"cluster", "slicePools", "teams", "kueue"} <= set(platform["inputProperties"])
    assert set(platform["properties"]) == {"clusterName", "clusterLocation", "kubeconfig", "poolNames"}


PROVIDER_CONSTRUCT = """
import json, sys
from pulumi.provider.experimental.component import ComponentProvider
import tpu_platform_provider as p
from tpu_platform.plan import render

prov = ComponentProvider([p.SlicePools, p.StackPlatform], p.PACKAGE, None, "0.1.0")
inputs = json.loads(sys.argv[1])
seen = {}

def program():
    result = prov.construct("research", "tpu-platform:index:SlicePools", inputs, None)
    for key, output in result.state.items():
        output.apply(lambda value, key=key: seen.__setitem__(key, value))

try:
    rendering = render(program, {}, project="consumer", stack="dev")
except Exception as err:
    print(json.dumps({"error": str(err)}))
    sys.exit(0)
pools = [r for r in rendering.resources if r.type == "gcp:container/nodePool:NodePool"]
print(json.dumps({"state": seen, "pools": {r.inputs["name"]: r.inputs for r in pools}}))
"""

SLICE_POOLS_INPUTS = {
    "project": "research-project",
    "region": "us-east5",
    "zone": "us-east5-b",
    "clusterName": "research-gke",
    "slicePools": [
        {"name": "rs", "topology": "4x4", "count": 2, "capacity": {"type": "spot"}},
        {"name": "pair", "topology": "2x4", "multiHost": True, "team": "vision"},
    ],
}


def test_component_package_builds_slices_from_camel_case_inputs(site: Path) -> None:
    """Inputs as another language sends them (schema names) reach the same node pools."""
    result = run_installed(site, PROVIDER_CONSTRUCT, json.dumps(SLICE_POOLS_INPUTS), path=(PROVIDER,))
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["state"] == {"poolNames": ["rs-0", "rs-1", "pair"], "chips": 40}
    pools = found["pools"]
    assert {name: pool["nodeCount"] for name, pool in pools.items()} == {"rs-0": 4, "rs-1": 4, "pair": 2}
    assert {pool["cluster"] for pool in pools.values()} == {"research-gke"}
    assert pools["pair"]["nodeConfig"]["labels"]["tpu-platform.dev/team"] == "vision"
    assert pools["rs-0"]["nodeConfig"]["spot"] is True


def test_component_package_rejects_bad_inputs_with_the_stack_models_message(site: Path) -> None:
    bad = {**SLICE_POOLS_INPUTS, "slicePools": [{"name": "x", "topology": "5x5"}]}
    result = run_installed(site, PROVIDER_CONSTRUCT, json.dumps(bad), path=(PROVIDER,))
    assert result.returncode == 0, result.stderr
    error = json.loads(result.stdout)["error"]
    assert "slicePools[0].topology" in error
    assert "TPU v6e has no slice topology '5x5'" in error
