"""Flex-start TPU v6e only where and from when GKE documents it ("About flex-start provisioning
mode": GKE 1.33.0-gke.1712000 or later; zones asia-northeast1-b, us-east5-a, us-east5-b)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.config.stack_problems import only_problem
from tpu_platform.plan import parse_stack_config

FLEX = {"name": "flex", "topology": "2x4", "count": 1, "capacity": {"type": "flexStart"}}


@pytest.mark.parametrize("kind", ["flexStart", "queuedProvisioning"])
def test_a_zone_without_flex_start_is_refused(stack: dict[str, Any], kind: str) -> None:
    stack["gcp:region"], stack["gcp:zone"] = "us-central1", "us-central1-b"
    stack["tpu-platform:slicePools"] = [{**FLEX, "capacity": {"type": kind}}]
    message = only_problem(stack)
    assert message.startswith("tpu-platform:slicePools[0].zone: flex-start TPU v6e")
    assert "asia-northeast1-b, us-east5-a, us-east5-b, not us-central1-b" in message


def test_the_documented_zones_pass(stack: dict[str, Any]) -> None:
    stack["gcp:region"], stack["gcp:zone"] = "us-east5", "us-east5-a"
    stack["tpu-platform:slicePools"] = [FLEX]
    parse_stack_config(stack)


@pytest.mark.parametrize(
    ("version", "refused"),
    [
        ("1.32", True),
        ("1.33.0-gke.1711999", True),
        ("1.33", False),
        ("1.33.0-gke.1712000", False),
        ("1.34", False),
    ],
)
def test_gke_versions_before_flex_start_for_tpus_are_refused(
    stack: dict[str, Any], version: str, refused: bool
) -> None:
    stack["gcp:region"], stack["gcp:zone"] = "us-east5", "us-east5-b"
    stack["tpu-platform:slicePools"] = [FLEX]
    stack["tpu-platform:cluster"] = {**stack["tpu-platform:cluster"], "minMasterVersion": version}
    if refused:
        message = only_problem(stack)
        assert message.startswith(
            "tpu-platform:cluster.minMasterVersion: flex-start TPUs need GKE 1.33.0-gke.1712000"
        )
    else:
        parse_stack_config(stack)
