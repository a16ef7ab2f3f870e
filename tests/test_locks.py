"""The locks: each environment the project installs is its *.in file resolved whole, with hashes.

These read the committed files and this test run's own environment (which ``./dev`` installed from
requirements-dev.txt), never a registry: what passes here passes on any day.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
HOTSWAP = ROOT / "tpu_platform" / "hotswap"
# Each lock and the file it is made from (./dev lock).
LOCKS = {
    "requirements-dev.txt": "requirements-dev.in",
    "requirements.txt": "requirements.in",
    "tpu_platform/hotswap/requirements.txt": "tpu_platform/hotswap/requirements.in",
}


@dataclass(frozen=True)
class Pin:
    name: str
    version: str
    extras: frozenset[str]
    hashes: frozenset[str]


def read_lock(path: Path) -> dict[str, Pin]:
    """A lock as ``uv pip compile --generate-hashes`` writes it: ``name[extras]==version \\`` lines."""
    pins: dict[str, Pin] = {}
    body = re.sub(r"\\\n\s*", " ", path.read_text())
    for line in body.splitlines():
        if not line or line.startswith((" ", "#")):
            continue
        spec, *options = line.split(" --hash=")
        req = Requirement(spec.strip())
        (specifier,) = req.specifier
        assert specifier.operator == "==", f"{path.name}: {line} is not pinned with =="
        name = canonicalize_name(req.name)
        pins[name] = Pin(
            name, specifier.version, frozenset(req.extras), frozenset(o.strip() for o in options)
        )
    return pins


def read_inputs(path: Path) -> list[Requirement]:
    """The direct requirements of a *.in file, following its ``-r`` includes."""
    found: list[Requirement] = []
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("-r "):
            found += read_inputs(path.parent / line[3:].strip())
        else:
            found.append(Requirement(line))
    return found


def _environment(extra: str = "") -> dict[str, str]:
    """The environment the locks are made for: CPython 3.11 on Linux (./dev lock)."""
    env = {str(k): str(v) for k, v in default_environment().items()}
    env.update(python_version="3.11", sys_platform="linux", platform_system="Linux", extra=extra)
    return env


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_every_package_is_pinned_with_a_hash(lock: str) -> None:
    pins = read_lock(ROOT / lock)
    assert pins, lock
    assert [p.name for p in pins.values() if not p.hashes] == [], f"{lock}: a package without --hash"
    assert all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for p in pins.values() for h in p.hashes)
    assert (ROOT / lock).read_text().splitlines()[1].strip() == "#    ./dev lock", "made by ./dev lock"


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_the_lock_satisfies_its_declared_requirements(lock: str) -> None:
    """Every direct requirement of the *.in file, extras included, at a version it admits."""
    pins = read_lock(ROOT / lock)
    for req in read_inputs(ROOT / LOCKS[lock]):
        pin = pins.get(canonicalize_name(req.name))
        assert pin is not None, f"{lock} lacks {req.name}: run ./dev lock"
        assert req.specifier.contains(pin.version), f"{lock}: {pin.name}=={pin.version} but {req}"
        assert req.extras <= pin.extras, f"{lock}: {req.name} without its extras {sorted(req.extras)}"


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_the_lock_is_closed(lock: str) -> None:
    """Each locked package's own requirements (markers for CPython 3.11 on Linux, extras followed)
    are locked too, at versions they admit: pip --require-hashes would refuse the install otherwise."""
    pins = read_lock(ROOT / lock)
    missing: list[str] = []
    for pin in pins.values():
        for raw in metadata.distribution(pin.name).requires or []:
            sub = Requirement(raw)
            if sub.marker and not any(sub.marker.evaluate(_environment(x)) for x in ("", *pin.extras)):
                continue
            got = pins.get(canonicalize_name(sub.name))
            if got is None or not sub.specifier.contains(got.version, prereleases=True):
                missing.append(f"{pin.name} needs {sub}, locked {got.version if got else 'nothing'}")
    assert missing == []


def test_the_image_and_the_tools_run_the_versions_the_tests_run() -> None:
    """The image's and the tools' locks are made under the dev lock's constraints: the same version
    of every package, and each of their hashes is one the dev lock accepts."""
    dev = read_lock(ROOT / "requirements-dev.txt")
    for lock in ("requirements.txt", "tpu_platform/hotswap/requirements.txt"):
        for pin in read_lock(ROOT / lock).values():
            assert pin.name in dev, f"{lock}: {pin.name} is not in the dev lock"
            assert (pin.version, pin.hashes <= dev[pin.name].hashes) == (dev[pin.name].version, True), pin


def test_the_test_environment_is_the_dev_lock() -> None:
    """./dev installed exactly the dev lock (with --require-hashes), so the tests ran its versions."""
    dev = read_lock(ROOT / "requirements-dev.txt")
    installed = {name: metadata.version(name) for name in dev}
    assert {n: v for n, v in installed.items() if v != dev[n].version} == {}


def test_the_image_lock_holds_the_controllers_closure() -> None:
    image = read_lock(HOTSWAP / "requirements.txt")
    assert {"kubernetes", "prometheus-client", "pyyaml", "pydantic", "google-cloud-compute"} <= set(image)
    assert {"grpcio", "protobuf", "proto-plus", "google-auth", "urllib3", "certifi"} <= set(image)
    assert image["google-api-core"].extras == {"grpc"}
    assert not {"pytest", "mypy", "pulumi", "uv"} & set(image), "no test or deployment tool in the image"


def test_pyproject_ranges_admit_the_locked_versions() -> None:
    """What a consumer's pip may choose from includes what this repository is tested with."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = [
        *project["dependencies"],
        *(r for rs in project["optional-dependencies"].values() for r in rs),
    ]
    dev = read_lock(ROOT / "requirements-dev.txt")
    for raw in declared:
        req = Requirement(raw)
        if canonicalize_name(req.name) == "tpu-platform":
            continue
        pin = dev[canonicalize_name(req.name)]
        assert req.specifier.contains(pin.version), f"pyproject.toml: {req} excludes the lock's {pin.version}"


def test_the_constraints_are_the_tools_lock_without_hashes() -> None:
    """The policy pack, the component provider and the example consumer install this checkout (pip
    hashes no folder), so they take the tools lock's versions as constraints."""
    tools = {p.name: p.version for p in read_lock(ROOT / "requirements.txt").values()}
    constraints = dict(
        (canonicalize_name(Requirement(line).name), str(Requirement(line).specifier)[2:])
        for line in (ROOT / "constraints.txt").read_text().splitlines()
        if line and not line.startswith("#")
    )
    assert constraints == tools
    for folder in ("policy", "provider", "examples/consumer"):
        lines = (ROOT / folder / "requirements.txt").read_text().splitlines()
        up = "/".join([".."] * len(Path(folder).parts))
        assert f"-c {up}/constraints.txt" in lines and up in lines, folder
