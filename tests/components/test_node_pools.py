"""Node pool inputs for each capacity mode and slice shape, as ``pulumi up`` would send them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from tpu_platform.plan import parse_stack_config
from tpu_platform.plan.document import normalize
from tpu_platform.slices import expand_slices

NODE_POOL = "gcp:container/nodePool:NodePool"


def tpu_pools(rendering: Any) -> dict[str, dict[str, Any]]:
    return {
        r.inputs["name"]: normalize(r.inputs)
        for r in rendering.resources
        if r.type == NODE_POOL and r.inputs["name"] != "system"
    }


def pool_with(stack: dict[str, Any], render_stack: Callable[..., Any], **pool: Any) -> dict[str, Any]:
    stack["tpu-platform:slicePools"] = [{"name": "p", **pool}]
    pools = tpu_pools(render_stack(stack))
    assert list(pools) == ["p"]
    return pools["p"]


def test_multi_host_slice(stack: dict[str, Any], render_stack: Callable[..., Any]) -> None:
    inputs = pool_with(stack, render_stack, topology="8x8")
    assert inputs["nodeCount"] == 16
    assert inputs["placementPolicy"] == {"type": "COMPACT", "tpuTopology": "8x8"}
    assert inputs["nodeLocations"] == ["us-east5-b"]
    assert inputs["location"] == "us-east5"
    assert inputs["nodeConfig"]["machineType"] == "ct6e-standard-4t"
    assert inputs["management"] == {"autoRepair": True, "autoUpgrade": True}
    assert inputs["upgradeSettings"] == {"strategy": "SURGE", "maxSurge": 0, "maxUnavailable": 1}
    assert inputs["maxPodsPerNode"] == 15
    assert inputs["nodeConfig"]["gvnic"] == {"enabled": True}
    assert "reservationAffinity" not in inputs["nodeConfig"]
    assert "autoscaling" not in inputs


@pytest.mark.parametrize(
    ("topology", "multi_host", "machine", "nodes"),
    [
        ("2x2", None, "ct6e-standard-4t", 1),
        ("2x4", None, "ct6e-standard-8t", 1),
        ("1x1", None, "ct6e-standard-1t", 1),
    ],
)
def test_single_host_slice_has_no_compact_placement(
    stack: dict[str, Any],
    render_stack: Callable[..., Any],
    topology: str,
    multi_host: bool | None,
    machine: str,
    nodes: int,
) -> None:
    inputs = pool_with(stack, render_stack, topology=topology)
    assert "placementPolicy" not in inputs
    assert "maxPodsPerNode" not in inputs
    assert inputs["nodeConfig"]["machineType"] == machine
    assert inputs["nodeCount"] == nodes


def test_two_vm_2x4(stack: dict[str, Any], render_stack: Callable[..., Any]) -> None:
    inputs = pool_with(stack, render_stack, topology="2x4", multiHost=True)
    assert inputs["nodeCount"] == 2
    assert inputs["placementPolicy"] == {"type": "COMPACT", "tpuTopology": "2x4"}
    assert inputs["nodeConfig"]["machineType"] == "ct6e-standard-4t"


def test_specific_reservation(stack: dict[str, Any], render_stack: Callable[..., Any]) -> None:
    inputs = pool_with(
        stack,
        render_stack,
        topology="4x4",
        capacity={"type": "reservation", "reservation": "trillium-res", "reservationProject": "shared-proj"},
    )
    assert inputs["nodeConfig"]["reservationAffinity"] == {
        "consumeReservationType": "SPECIFIC_RESERVATION",
        "key": "compute.googleapis.com/reservation-name",
        "values": ["projects/shared-proj/reservations/trillium-res"],
    }
    assert "spot" not in inputs["nodeConfig"]
    assert inputs["nodeCount"] == 4


def test_local_reservation_name(stack: dict[str, Any], render_stack: Callable[..., Any]) -> None:
    inputs = pool_with(
        stack, render_stack, topology="4x4", capacity={"type": "reservation", "reservation": "r1"}
    )
    assert inputs["nodeConfig"]["reservationAffinity"]["values"] == ["r1"]


def test_spot(stack: dict[str, Any], render_stack: Callable[..., Any]) -> None:
    inputs = pool_with(stack, render_stack, topology="4x4", capacity={"type": "spot"})
    assert inputs["nodeConfig"]["spot"] is True
    assert inputs["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    assert inputs["nodeCount"] == 4
    assert inputs["nodeConfig"]["labels"]["tpu-platform.dev/capacity"] == "spot"


def test_flex_start(stack: dict[str, Any], render_stack: Callable[..., Any]) -> None:
    inputs = pool_with(
        stack, render_stack, topology="4x4", capacity={"type": "flexStart", "maxRunDuration": "86400s"}
    )
    node_config = inputs["nodeConfig"]
    assert node_config["flexStart"] is True
    assert node_config["maxRunDuration"] == "86400s"
    assert node_config["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    assert inputs["management"]["autoRepair"] is False
    # One zone per slice: per-zone limits are the totals (see components/tpu_slice_pool.py).
    assert inputs["autoscaling"] == {"minNodeCount": 0, "maxNodeCount": 4, "locationPolicy": "ANY"}
    assert inputs["initialNodeCount"] == 0
    assert "nodeCount" not in inputs
    assert "upgradeSettings" not in inputs, "GKE applies short-lived upgrades to flex-start nodes itself"


def test_queued_provisioning(stack: dict[str, Any], render_stack: Callable[..., Any]) -> None:
    inputs = pool_with(stack, render_stack, topology="8x8", capacity={"type": "queuedProvisioning"})
    assert inputs["queuedProvisioning"] == {"enabled": True}
    assert inputs["autoscaling"]["minNodeCount"] == 0
    assert inputs["autoscaling"]["maxNodeCount"] == 16
    # Queued provisioning runs flex-start VMs, which cannot use auto-repair.
    assert inputs["management"]["autoRepair"] is False
    assert inputs["nodeConfig"]["flexStart"] is True
    assert inputs["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}


def test_labels_team_and_group(stack: dict[str, Any], render_stack: Callable[..., Any]) -> None:
    inputs = pool_with(stack, render_stack, topology="4x4", team="research", labels={"cost-center": "ml"})
    assert inputs["nodeConfig"]["labels"] == {
        "cost-center": "ml",
        "tpu-platform.dev/capacity": "ondemand",
        "tpu-platform.dev/slice-group": "p",
        "tpu-platform.dev/team": "research",
    }


def test_one_pool_per_slice_with_stable_names(
    stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    stack["tpu-platform:slicePools"] = [
        {"name": "a", "topology": "4x4", "count": 3},
        {"name": "b", "topology": "8x8", "zone": "us-east5-a"},
    ]
    rendering = render_stack(stack)
    pools = tpu_pools(rendering)
    assert sorted(pools) == ["a-0", "a-1", "a-2", "b"]
    assert pools["b"]["nodeLocations"] == ["us-east5-a"]
    logical = sorted(r.name for r in rendering.resources if r.type == NODE_POOL)
    assert logical == ["tpu-a-0", "tpu-a-1", "tpu-a-2", "tpu-b", "tpu-cluster-system"]
    parents = {r.name: r.parent_label for r in rendering.resources if r.type == NODE_POOL}
    assert parents["tpu-a-1"] == "tpu-platform:gke:TpuSlicePool::tpu-a"


def test_pools_depend_on_cluster_and_node_service_account(
    stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    rendering = render_stack(stack)
    pool = next(r for r in rendering.resources if r.name == "tpu-train-0")
    assert any("gcp:container/cluster:Cluster::tpu-cluster" in dep for dep in pool.dependencies)
    assert pool.inputs["cluster"] == "tpu-test"
    assert (
        pool.inputs["nodeConfig"]["serviceAccount"] == "tpu-test-nodes@test-project.iam.gserviceaccount.com"
    )
    assert pool.inputs["nodeConfig"]["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}


def test_image_streaming_resource_labels_and_boot_disk(
    stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    """Image streaming on by default; the VMs carry Compute Engine labels for cost allocation."""
    inputs = pool_with(stack, render_stack, topology="4x4")
    node_config = inputs["nodeConfig"]
    assert node_config["gcfsConfig"] == {"enabled": True}
    assert node_config["resourceLabels"] == {
        "tpu-platform-capacity": "ondemand",
        "tpu-platform-slice-group": "p",
    }
    spec = replace(expand_slices(parse_stack_config(stack))[0], team="Research.Team")
    assert spec.resource_labels["tpu-platform-team"] == "research-team", "Compute Engine label values"
    assert "diskType" not in node_config and "diskSizeGb" not in node_config
    inputs = pool_with(
        stack,
        render_stack,
        topology="4x4",
        imageStreaming=False,
        bootDisk={"type": "hyperdisk-balanced", "sizeGb": 200},
    )
    assert "gcfsConfig" not in inputs["nodeConfig"]
    assert (inputs["nodeConfig"]["diskType"], inputs["nodeConfig"]["diskSizeGb"]) == (
        "hyperdisk-balanced",
        200,
    )
