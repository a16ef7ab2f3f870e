"""Dynamic Workload Scheduler: flex-start and queued-provisioning pools, and Kueue's
ProvisioningRequest admission check.

Sources: https://cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest (queued
provisioning runs flex-start VMs: "--flex-start and --enable-queued-provisioning"); kueue v0.19.2
``site/content/en/docs/concepts/admission_check/provisioning_request.md`` (controller
``kueue.x-k8s.io/provisioning-request``, ProvisioningRequestConfig) and
``site/content/en/docs/concepts/admission_check/_index.md`` (``admissionChecksStrategy.onFlavors``);
the CRDs in ``../shared/crds/kueue-v0.19.2``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from tests.config.stack_problems import only_problem
from tpu_platform.kueue import queue_objects
from tpu_platform.kueue.provisioning import (
    CHECK_NAME,
    PROVISIONING_CLASS,
    PROVISIONING_CONTROLLER,
    provisioning_objects,
)
from tpu_platform.plan import load_stack_config, parse_stack_config, stack_file

NODE_POOL = "gcp:container/nodePool:NodePool"


@pytest.fixture
def dws(stack: dict[str, Any]) -> dict[str, Any]:
    config = copy.deepcopy(stack)
    config["tpu-platform:slicePools"] = [
        {"name": "queued", "topology": "4x4", "count": 2, "capacity": {"type": "queuedProvisioning"}},
        {"name": "flex", "topology": "2x4", "capacity": {"type": "flexStart", "maxRunDuration": "3600s"}},
    ]
    config["tpu-platform:teams"] = [
        {"name": "train", "quota": [{"topology": "4x4", "slices": 2}]},
        {"name": "try", "quota": [{"topology": "2x4", "slices": 1}]},
    ]
    return config


def test_queued_pools_are_flex_start_from_zero_without_repair(
    dws: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    pools = {r.inputs["name"]: r.inputs for r in render_stack(dws).resources if r.type == NODE_POOL}
    queued = pools["queued-0"]
    assert queued["queuedProvisioning"] == {"enabled": True}
    assert queued["nodeConfig"]["flexStart"] is True
    assert queued["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    assert queued["autoscaling"] == {"minNodeCount": 0, "maxNodeCount": 4, "locationPolicy": "ANY"}
    assert queued["initialNodeCount"] == 0 and "nodeCount" not in queued
    assert queued["management"]["autoRepair"] is False
    assert "upgradeSettings" not in queued, "GKE applies short-lived upgrades to flex-start nodes itself"
    flex = pools["flex"]
    assert flex["nodeConfig"]["flexStart"] is True and flex["nodeConfig"]["maxRunDuration"] == "3600s"
    assert "queuedProvisioning" not in flex


def test_admission_check_objects_and_cluster_queue_strategy(dws: dict[str, Any]) -> None:
    cfg = parse_stack_config(dws)
    config, check = provisioning_objects(cfg)
    assert config["kind"] == "ProvisioningRequestConfig"
    assert config["spec"] == {
        "provisioningClassName": PROVISIONING_CLASS,
        "managedResources": ["google.com/tpu"],
    }
    assert check["spec"]["controllerName"] == PROVISIONING_CONTROLLER
    assert check["spec"]["parameters"]["name"] == config["metadata"]["name"]
    cqs = queue_objects(cfg).cluster_queues
    assert cqs["train"]["spec"]["admissionChecksStrategy"] == {
        "admissionChecks": [{"name": CHECK_NAME, "onFlavors": ["tpu-v6e-4x4"]}]
    }
    assert "admissionChecksStrategy" not in cqs["try"]["spec"]  # flex-start alone needs no check


def test_no_queued_pools_no_provisioning_objects(stack: dict[str, Any]) -> None:
    assert provisioning_objects(parse_stack_config(stack)) == []


def test_cluster_queue_waits_for_its_admission_check(
    dws: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    rendering = render_stack(dws)
    by_kind = {r.inputs.get("kind"): r for r in rendering.resources if r.type.startswith("kubernetes:kueue")}
    check = by_kind["AdmissionCheck"]
    assert by_kind["ProvisioningRequestConfig"].urn in check.dependencies
    cq = next(
        r
        for r in rendering.resources
        if r.inputs.get("kind") == "ClusterQueue" and r.inputs["metadata"]["name"] == "train-cq"
    )
    assert check.urn in cq.dependencies


def test_queued_run_duration_becomes_a_provisioning_parameter(dws: dict[str, Any]) -> None:
    dws["tpu-platform:slicePools"][0]["capacity"]["maxRunDuration"] = "86400s"
    config, _ = provisioning_objects(parse_stack_config(dws))
    assert config["spec"]["parameters"] == {"maxRunDurationSeconds": "86400"}


@pytest.mark.parametrize(
    ("mutate", "path", "words"),
    [
        (lambda c: c["tpu-platform:slicePools"][1]["capacity"].update(maxRunDuration="700000s"),
         "slicePools[1].capacity.maxRunDuration", "seven days"),
        (lambda c: c["tpu-platform:slicePools"][0].update(autoRepair=True),
         "slicePools[0].autoRepair", "cannot use auto-repair"),
        (lambda c: c["tpu-platform:slicePools"].append({"name": "res", "topology": "4x4",
                                                        "capacity": {"type": "spot"}}),
         "slicePools[2].capacity.type", "ProvisioningRequest check applies per flavor"),
    ],
)  # fmt: skip
def test_dws_rules(
    dws: dict[str, Any], mutate: Callable[[dict[str, Any]], None], path: str, words: str
) -> None:
    mutate(dws)
    message = only_problem(dws)
    assert message.startswith(f"tpu-platform:{path}:"), message
    assert words in message, message


def test_dws_example_stack() -> None:
    cfg = parse_stack_config(load_stack_config(stack_file("dws")))
    kinds = [o["kind"] for o in provisioning_objects(cfg)]
    assert kinds == ["ProvisioningRequestConfig", "AdmissionCheck"]
    assert all("admissionChecksStrategy" in cq["spec"] for cq in queue_objects(cfg).cluster_queues.values())


def test_crd_patterns_are_read_as_re2_reads_them() -> None:
    """Kueue's AdmissionCheck CRD: ``parameters.kind`` pattern ``^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$``
    (RE2 inline flags, https://github.com/google/re2/wiki/Syntax)."""
    import re

    from tpu_platform.schema.validate import python_pattern

    pattern = python_pattern("^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$")
    assert re.search(pattern, "ProvisioningRequestConfig")
    assert not re.search(pattern, "9-bad")
    assert python_pattern("^[a-z]+$") == "^[a-z]+$"
