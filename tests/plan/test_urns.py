"""URNs of the example stacks' node pools and clusters are pinned: a changed URN is a replaced slice.

Pulumi identifies a resource by its URN (stack, project, the parent chain's types, name).
A refactor that renames or regroups a component changes the URNs of everything under it,
and Pulumi then deletes and re-creates those resources: for a node pool that means a TPU
slice (often a reservation) torn down. ``aliases`` carry the old identity over; these
tests pin today's URNs and show that aliases keep them through a regrouping.

Regenerate the pins (only when a replacement is intended):  .venv/bin/python tests/plan/test_urns.py --write
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from pulumi.runtime.settings import reset_options
from pulumi.runtime.stack import run_pulumi_func
from tpu_platform.components import (
    GkeCluster,
    GkeClusterArgs,
    TpuPlatform,
    TpuPlatformArgs,
    TpuSlicePool,
    TpuSlicePoolArgs,
)
from tpu_platform.components.program import PLATFORM_NAME, read_platform_config, stack_program

from tpu_platform.plan import list_stacks, load_stack_config, parse_stack_config, render, stack_file
from tpu_platform.plan.harness import PlatformMocks, RecordingMonitor, config_values
from tpu_platform.slices import expand_slices

REPO_ROOT = Path(__file__).resolve().parents[2]

PINS_DIR = REPO_ROOT / "tests" / "data" / "urns"
PROJECT = yaml.safe_load((REPO_ROOT / "Pulumi.yaml").read_text())["name"]
ROOT_STACK_TYPE = "pulumi:pulumi:Stack"
# Resources whose replacement destroys capacity or the cluster itself.
PINNED_TYPES = ("gcp:container/cluster:Cluster", "gcp:container/nodePool:NodePool")
REGENERATE = ".venv/bin/python tests/plan/test_urns.py --write"


@dataclass(frozen=True)
class Registration:
    """What the engine needs to name a resource: type, name, parent, and the aliases sent with it."""

    urn: str
    type: str
    name: str
    parent: str | None
    aliases: tuple[Any, ...] = ()


def engine_urns(registrations: Iterable[Any], stack: str, project: str = PROJECT) -> dict[str, str]:
    """The URN the Pulumi engine gives each registration, keyed by the mock monitor's URN.

    The engine qualifies a type with the *whole* parent chain (``A$B$C``) and leaves out the
    root stack; Pulumi's mock monitor only prefixes the immediate parent's type, so its URNs
    are not the ones a real deployment stores.
    """
    by_urn = {r.urn: r for r in registrations}
    qualified: dict[str, str] = {}

    def chain(res: Any) -> str:
        if res.urn not in qualified:
            parent = by_urn.get(res.parent) if res.parent else None
            qualified[res.urn] = res.type if parent is None else f"{chain(parent)}${res.type}"
        return qualified[res.urn]

    return {urn: f"urn:pulumi:{stack}::{project}::{chain(res)}::{res.name}" for urn, res in by_urn.items()}


def child_urn(parent_urn: str | None, type_: str, name: str, stack: str, project: str = PROJECT) -> str:
    """The engine's URN for ``type_``/``name`` under ``parent_urn`` (None or the root stack: top level)."""
    if parent_urn is None or parent_urn.split("::")[2] == ROOT_STACK_TYPE:
        return f"urn:pulumi:{stack}::{project}::{type_}::{name}"
    return f"{parent_urn[: parent_urn.rfind('::')]}${type_}::{name}"


def _urn_type_and_name(urn: str) -> tuple[str, str]:
    parts = urn.split("::", 3)
    return parts[2].split("$")[-1], parts[3]


def alias_urns(registrations: list[Registration], stack: str) -> dict[str, set[str]]:
    """Every old URN the engine accepts for each resource, from the alias specs it was sent.

    Same rules as the engine (and the SDK's ``all_aliases``): a resource's own aliases, plus
    for each alias of its parent the child re-parented under it, renaming a child whose name
    starts with the parent's name.
    """
    by_urn = {r.urn: r for r in registrations}
    current = engine_urns(registrations, stack)
    memo: dict[str, set[str]] = {}

    def of(res: Registration) -> set[str]:
        if res.urn in memo:
            return memo[res.urn]
        parent = by_urn.get(res.parent) if res.parent else None
        own: set[str] = set()
        for alias in res.aliases:
            if alias.HasField("urn"):
                own.add(alias.urn)
                continue
            spec = alias.spec
            old_parent = (
                None if spec.noParent else (spec.parentUrn or (current[parent.urn] if parent else None))
            )
            own.add(
                child_urn(
                    old_parent,
                    spec.type or res.type,
                    spec.name or res.name,
                    spec.stack or stack,
                    spec.project or PROJECT,
                )
            )
        found = set(own)
        if parent is not None:
            for parent_alias in of(parent):
                old_parent_name = parent_alias.rsplit("::", 1)[-1]
                for type_, name in [(res.type, res.name), *map(_urn_type_and_name, own)]:
                    renamed = (
                        old_parent_name + name[len(parent.name) :] if name.startswith(parent.name) else name
                    )
                    found.add(child_urn(parent_alias, type_, renamed, stack))
        memo[res.urn] = found
        return found

    return {urn: of(res) for urn, res in by_urn.items()}


class AliasRecordingMonitor(RecordingMonitor):
    """The plan's recording monitor, also keeping the alias specs each registration carried."""

    def __init__(self, mocks: pulumi.runtime.Mocks) -> None:
        super().__init__(mocks)
        self.registrations: list[Registration] = []

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        if request.type != ROOT_STACK_TYPE:
            self.registrations.append(
                Registration(
                    urn=response.urn,
                    type=request.type,
                    name=request.name,
                    parent=request.parent or None,
                    aliases=tuple(request.aliases),
                )
            )
        return response


def register(program: Callable[[], None], config: Mapping[str, Any], stack: str) -> list[Registration]:
    """Run ``program`` under the plan's mocks and return every registration with its aliases."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        reset_options(project=PROJECT, stack=stack)
        monitor = AliasRecordingMonitor(PlatformMocks())
        pulumi.runtime.set_all_config(config_values(config))
        pulumi.runtime.set_mocks(
            PlatformMocks(), project=PROJECT, stack=stack, preview=False, monitor=monitor
        )
        loop.run_until_complete(run_pulumi_func(program))
    finally:
        loop.close()
        asyncio.set_event_loop(None)
    return monitor.registrations


def pinned_urns(stack: str) -> list[str]:
    """Engine URNs of the stack's clusters and node pools, as ``pulumi up`` would record them."""
    rendering = render(stack_program, load_stack_config(stack_file(stack)), project=PROJECT, stack=stack)
    urns = engine_urns(rendering.resources, stack)
    return sorted(urns[r.urn] for r in rendering.resources if r.type in PINNED_TYPES)


def pin_text(stack: str, urns: list[str]) -> str:
    header = (
        f"# URNs of stack `{stack}`'s GKE cluster and node pools (one node pool = one TPU slice).\n"
        "# A URN that changes makes Pulumi DELETE and RE-CREATE that resource. Keep URNs with\n"
        f"# `aliases`; regenerate only when a replacement is intended: {REGENERATE}\n"
    )
    return header + "".join(f"{urn}\n" for urn in urns)


def read_pins(stack: str) -> list[str]:
    path = PINS_DIR / f"{stack}.txt"
    return [line for line in path.read_text().splitlines() if line and not line.startswith("#")]


STACKS = list_stacks()


def test_every_stack_has_pins_and_every_pin_a_stack() -> None:
    pinned = sorted(p.stem for p in PINS_DIR.glob("*.txt"))
    assert pinned == STACKS, (
        f"stacks {STACKS} but URN pins for {pinned}: "
        f"run `{REGENERATE}` and review the diff of tests/data/urns/"
    )


def drift_message(stack: str, pinned: Iterable[str], current: Iterable[str]) -> str | None:
    """Why the current URNs differ from the pins, or None when they match."""
    gone = sorted(set(pinned) - set(current))
    new = sorted(set(current) - set(pinned))
    if gone:
        return (
            f"stack {stack}: these resources would get new URNs, so `pulumi up` would REPLACE them "
            "(delete and re-create: a TPU slice and everything running on it, a reservation's "
            "capacity, or the cluster):\n  "
            + "\n  ".join(gone)
            + "\nnew URNs:\n  "
            + ("\n  ".join(new) or "(none)")
            + "\nIf this is a rename or regrouping, pass the old identity in `aliases` "
            "(pulumi.Alias(name=..., type_=..., parent=...)) on the component you moved. "
            f"If the replacement is intended, run `{REGENERATE}` and say so in the pull request."
        )
    if new:
        return (
            f"stack {stack} has clusters or node pools without a pinned URN: {new}; "
            f"run `{REGENERATE}` and commit tests/data/urns/{stack}.txt"
        )
    return None


@pytest.mark.parametrize("stack", STACKS)
def test_node_pool_urns_are_unchanged(stack: str) -> None:
    path = PINS_DIR / f"{stack}.txt"
    assert path.exists(), f"no URN pins for stack {stack}: run `{REGENERATE}`"
    problem = drift_message(stack, read_pins(stack), pinned_urns(stack))
    assert problem is None, problem


def test_engine_urns_qualify_the_whole_parent_chain() -> None:
    registrations = [
        Registration("m:stack", ROOT_STACK_TYPE, "proj-dev", None),
        Registration("m:a", "tpu-platform:index:Platform", "tpu", "m:stack"),
        Registration("m:b", "tpu-platform:gke:TpuSlicePool", "tpu-x", "m:a"),
        Registration("m:c", "gcp:container/nodePool:NodePool", "tpu-x-0", "m:b"),
    ]
    urns = engine_urns(registrations[1:], "dev", "proj")
    assert urns["m:c"] == (
        "urn:pulumi:dev::proj::tpu-platform:index:Platform$tpu-platform:gke:TpuSlicePool"
        "$gcp:container/nodePool:NodePool::tpu-x-0"
    )
    assert urns["m:a"] == "urn:pulumi:dev::proj::tpu-platform:index:Platform::tpu"


def test_pins_cover_every_tpu_slice_of_the_stack() -> None:
    config = load_stack_config(stack_file("dev"))
    slices = expand_slices(parse_stack_config(config))
    pool_urns = [u for u in read_pins("dev") if "gcp:container/nodePool:NodePool::" in u]
    names = {u.rsplit("::", 1)[-1] for u in pool_urns}
    assert {f"{PLATFORM_NAME}-{spec.pool_name}" for spec in slices} <= names


def _old_platform_urn(stack: str) -> str:
    return child_urn(None, "tpu-platform:index:Platform", PLATFORM_NAME, stack)


def _regrouped_program(with_aliases: bool) -> Callable[[], None]:
    """A refactor: the cluster and slice pools move out of ``TpuPlatform`` to the top level."""

    def program() -> None:
        cfg = read_platform_config()
        old = _old_platform_urn(pulumi.get_stack())
        opts = pulumi.ResourceOptions(aliases=[pulumi.Alias(parent=old)] if with_aliases else None)
        cluster = GkeCluster(
            f"{PLATFORM_NAME}-cluster",
            GkeClusterArgs(
                project=cfg.project, location=cfg.cluster_location, system_zone=cfg.zone, cluster=cfg.cluster
            ),
            opts=opts,
        )
        for group, specs in groupby(expand_slices(cfg), key=lambda spec: spec.group):
            TpuSlicePool(
                f"{PLATFORM_NAME}-{group}",
                TpuSlicePoolArgs(
                    project=cfg.project,
                    cluster_name=cluster.name,
                    cluster_location=cluster.location,
                    slices=list(specs),
                    node_service_account=cluster.node_service_account,
                ),
                opts=opts,
            )

    return program


def test_regrouping_without_aliases_would_replace_every_slice() -> None:
    config = load_stack_config(stack_file("dev"))
    registrations = register(_regrouped_program(with_aliases=False), config, "dev")
    current = engine_urns(registrations, "dev")
    aliases = alias_urns(registrations, "dev")
    assert not [r for r in registrations if r.type.startswith("tpu-platform:") and r.aliases]
    known = set(current.values()).union(*aliases.values())
    pins = read_pins("dev")
    assert not set(pins) & known
    moved = [current[r.urn] for r in registrations if r.type in PINNED_TYPES]
    message = drift_message("dev", pins, moved)
    assert message is not None
    assert "REPLACE" in message
    assert "NodePool::tpu-dev-4x4-0" in message
    assert "aliases" in message


def test_regrouping_with_aliases_keeps_every_pinned_urn() -> None:
    config = load_stack_config(stack_file("dev"))
    registrations = register(_regrouped_program(with_aliases=True), config, "dev")
    pools = [r for r in registrations if r.type == "tpu-platform:gke:TpuSlicePool"]
    assert pools
    old_parent = _old_platform_urn("dev")
    for pool in pools:
        specs = [a.spec for a in pool.aliases]
        assert [s.parentUrn for s in specs] == [old_parent], "the alias spec must name the old parent"
        assert all(s.name in ("", pool.name) and s.type in ("", pool.type) for s in specs)
    aliases = alias_urns(registrations, "dev")
    covered = {u for urns in aliases.values() for u in urns}
    missing = sorted(set(read_pins("dev")) - covered)
    assert not missing, f"aliases do not reach these pinned URNs: {missing}"


def test_renaming_the_platform_keeps_urns_through_an_alias() -> None:
    """Children named after their parent follow a renamed parent (``tpu-*`` -> ``fleet-*``)."""

    def program() -> None:
        cfg = read_platform_config()
        TpuPlatform(
            "fleet",
            TpuPlatformArgs(config=cfg),
            opts=pulumi.ResourceOptions(aliases=[pulumi.Alias(name=PLATFORM_NAME)]),
        )

    registrations = register(program, load_stack_config(stack_file("dev")), "dev")
    platform = next(r for r in registrations if r.type == "tpu-platform:index:Platform")
    assert [(a.spec.name, a.spec.type or platform.type) for a in platform.aliases] == [
        (PLATFORM_NAME, "tpu-platform:index:Platform")
    ]
    current = engine_urns(registrations, "dev")
    aliases = alias_urns(registrations, "dev")
    pins = read_pins("dev")
    assert not set(pins) & set(current.values()), "renaming alone changes every URN"
    covered = {u for urns in aliases.values() for u in urns}
    assert set(pins) <= covered


def write_pins() -> list[Path]:
    """Regenerate tests/data/urns/<stack>.txt for every stack; drop pins of removed stacks."""
    PINS_DIR.mkdir(parents=True, exist_ok=True)
    written = []
    for stack in list_stacks():
        path = PINS_DIR / f"{stack}.txt"
        path.write_text(pin_text(stack, pinned_urns(stack)))
        written.append(path)
    for stale in PINS_DIR.glob("*.txt"):
        if stale not in written:
            stale.unlink()
    return written


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(f"usage: {REGENERATE}\n{__doc__}")
    for written_path in write_pins():
        print(f"wrote {written_path.relative_to(REPO_ROOT)}")
