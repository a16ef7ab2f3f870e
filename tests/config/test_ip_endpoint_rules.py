"""The control plane's IP endpoint: off, internal or public, and what each combination needs."""

from __future__ import annotations

from typing import Any

from tests.config.stack_problems import only_problem
from tpu_platform.config.checks import stack_warnings
from tpu_platform.plan import parse_stack_config


def test_defaults_follow_the_access_and_the_nodes(stack: dict[str, Any]) -> None:
    assert parse_stack_config(stack).cluster.ip_endpoint_mode == "off"
    stack["tpu-platform:cluster"]["privateNodes"] = True
    assert parse_stack_config(stack).cluster.ip_endpoint_mode == "internal"
    stack["tpu-platform:cluster"]["controlPlaneAccess"] = "ip"
    assert parse_stack_config(stack).cluster.ip_endpoint_mode == "public"


def test_off_with_private_nodes_is_refused(stack: dict[str, Any]) -> None:
    stack["tpu-platform:cluster"].update(privateNodes=True, ipEndpoint="off")
    assert only_problem(stack).startswith("tpu-platform:cluster.ipEndpoint: private nodes need")


def test_authorized_networks_with_no_ip_endpoint_are_refused(stack: dict[str, Any]) -> None:
    stack["tpu-platform:cluster"].update(masterAuthorizedCidrs=["10.0.0.0/8"])
    assert only_problem(stack).startswith("tpu-platform:cluster.masterAuthorizedCidrs: authorize networks")


def test_a_public_endpoint_without_networks_is_a_warning(stack: dict[str, Any]) -> None:
    stack["tpu-platform:cluster"].update(controlPlaneAccess="ip")
    lines = stack_warnings(parse_stack_config(stack)).lines
    assert any(
        line.startswith("tpu-platform:cluster.ipEndpoint: the control plane's public") for line in lines
    )
