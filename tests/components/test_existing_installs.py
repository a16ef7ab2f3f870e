"""The local stack over a cluster that already runs Kueue and JobSet, under Pulumi's mocks: what the
program registers for each decision (``kueue.existingInstall``), and that a refusal stops it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.kueue.test_existing_installs import controller_at, kueue_at
from tpu_platform.kueue.found import ADOPTED_ANNOTATION, JOBSET, FoundInstalls, Version
from tpu_platform.plan import load_stack_config, stack_file

CHART = "kubernetes:helm.sh/v4:Chart"
NAMESPACE = "kubernetes:core/v1:Namespace"
POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"


@pytest.fixture
def local() -> dict[str, Any]:
    return load_stack_config(stack_file("local"))


def render_over(
    found: FoundInstalls,
    local: dict[str, Any],
    render_stack: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
) -> list[Any]:
    from tpu_platform.components import platform

    monkeypatch.setattr(platform, "existing_installs", lambda cfg: found)
    return list(render_stack(local, name="local").resources)


def test_under_mocks_nothing_is_read_and_both_charts_are_installed(
    local: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    """The offline plan has no cluster: the local stack's kubeconfig context names none here."""
    names = {r.name for r in render_stack(local, name="local").resources if r.type == CHART}
    assert names == {"tpu-kueue-jobset", "tpu-kueue-kueue"}


def test_outside_mocks_an_unreadable_cluster_stops_the_run_before_anything_changes(
    local: dict[str, Any], tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tpu_platform.components import cluster_installs

    from tpu_platform.config import parse_platform

    monkeypatch.setattr(cluster_installs, "under_mocks", lambda: False)  # as in `pulumi up`
    local["tpu-platform:cluster"]["kubeconfig"] = str(tmp_path / "missing")
    cfg = parse_platform({k.split(":", 1)[1]: v for k, v in local.items()})
    with pytest.raises(cluster_installs.UnreadableCluster, match="could not read which Kueue and JobSet"):
        cluster_installs.existing_installs(cfg)


def test_installs_that_serve_the_stack_are_used_and_left_alone(
    local: dict[str, Any], render_stack: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    found = FoundInstalls(controller_at(JOBSET, Version(0, 12, 0)), kueue_at("v0.19.2"))
    resources = render_over(found, local, render_stack, monkeypatch)
    assert not [r.name for r in resources if r.type == CHART]
    assert not {"kueue-system", "jobset-system"} & {
        r.inputs["metadata"]["name"] for r in resources if r.type == NAMESPACE
    }
    assert not {"kueue-system", "jobset-system"} & {
        r.inputs["metadata"]["namespace"] for r in resources if r.type == POLICY
    }
    assert any(
        r.type.endswith("ClusterQueue") or "ClusterQueue" in str(r.inputs.get("kind")) for r in resources
    )


def test_an_older_install_taken_over_gets_the_charts_over_it_and_its_origin_recorded(
    local: dict[str, Any], render_stack: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    local["tpu-platform:kueue"]["existingInstall"] = "upgrade"
    found = FoundInstalls(controller_at(JOBSET, Version(0, 10, 1)), kueue_at("v0.17.1"))
    resources = render_over(found, local, render_stack, monkeypatch)
    assert {r.name for r in resources if r.type == CHART} == {"tpu-kueue-jobset", "tpu-kueue-kueue"}
    origins = {
        r.inputs["metadata"]["name"]: r.inputs["metadata"].get("annotations", {}).get(ADOPTED_ANNOTATION)
        for r in resources
        if r.type == NAMESPACE and r.inputs["metadata"]["name"].endswith("-system")
    }
    assert origins == {"jobset-system": "JobSet 0.10.1", "kueue-system": "Kueue 0.17.1"}


def test_a_refusal_stops_the_program_with_the_fix(
    local: dict[str, Any], render_stack: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    local["tpu-platform:kueue"]["existingInstall"] = "refuse"
    found = FoundInstalls(controller_at(JOBSET, Version(0, 10, 1)), kueue_at("v0.17.1"))
    with pytest.raises(
        Exception, match=r"(?s)will not install a second Kueue or JobSet.*set kueue\.existingInstall: use"
    ):
        render_over(found, local, render_stack, monkeypatch)
