"""The policy pack as Pulumi runs it: pulumi-policy adapters, and the pack's analyzer over gRPC."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc
from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.deserialize import deserialize_properties
from pulumi_policy.proxy import UNKNOWN_BOOLEAN_VALUE, UNKNOWN_STRING_VALUE, unknown_checking_proxy
from pulumi_policy.version import VERSION as PULUMI_POLICY_VERSION

from tpu_platform.policy import UNKNOWN
from tpu_platform.policy.pack import ALL_RULES, PACK_NAME, policies, to_plain
from tpu_platform.tpu_pools import NODE_POOL

REPO_ROOT = Path(__file__).resolve().parents[2]
POLICY_DIR = REPO_ROOT / "policy"
POOL_URN = (
    "urn:pulumi:dev::tpu-platform::tpu-platform:gke:TpuSlicePool$gcp:container/nodePool:NodePool::tpu-a-0"
)


def broken_pool_props() -> dict[str, Any]:
    return {
        "name": "a-0",
        "nodeCount": 4,
        "nodeConfig": {"machineType": "ct6e-standard-4t", "serviceAccount": UNKNOWN_STRING_VALUE},
        "management": {"autoRepair": False},
    }


def opts(parent: str | None = None) -> PolicyResourceOptions:
    return PolicyResourceOptions(False, [], None, [], None, [], parent)  # type: ignore[arg-type]


def test_one_mandatory_policy_per_rule() -> None:
    built = {p.name: p for p in policies()}
    assert list(built) == [rule.name for rule in ALL_RULES]
    for rule in ALL_RULES:
        policy = built[rule.name]
        kind = ResourceValidationPolicy if rule.resource_check else StackValidationPolicy
        assert isinstance(policy, kind)
        assert policy.enforcement_level == EnforcementLevel.MANDATORY
        assert (policy.config_schema is not None) == bool(rule.config_properties)


def test_to_plain_unwraps_proxies_and_marks_unknowns() -> None:
    props = unknown_checking_proxy(deserialize_properties({"a": {"b": [1, UNKNOWN_BOOLEAN_VALUE]}, "c": "x"}))
    assert to_plain(props) == {"a": {"b": [1, UNKNOWN]}, "c": "x"}


def test_resource_policy_reports_through_pulumi_policy() -> None:
    policy = next(p for p in policies() if p.name == "tpu-pool-auto-repair")
    assert isinstance(policy, ResourceValidationPolicy)
    reported: list[tuple[str, str | None]] = []
    props = unknown_checking_proxy(deserialize_properties(broken_pool_props()))
    args = ResourceValidationArgs(NODE_POOL, props, POOL_URN, "tpu-a-0", opts(), None)
    policy.validate(args, lambda message, urn: reported.append((message, urn)))
    assert len(reported) == 1
    assert reported[0][0].startswith("TPU node pool 'a-0' has auto-repair off")
    assert reported[0][1] is None


def test_a_value_unknown_during_preview_does_not_abort_the_policy() -> None:
    policy = next(p for p in policies() if p.name == "tpu-pool-auto-repair")
    assert isinstance(policy, ResourceValidationPolicy)
    props = broken_pool_props()
    props["management"] = {"autoRepair": UNKNOWN_BOOLEAN_VALUE}
    reported: list[str] = []
    args = ResourceValidationArgs(
        NODE_POOL,
        unknown_checking_proxy(deserialize_properties(props)),
        POOL_URN,
        "tpu-a-0",
        opts(),
        None,
    )
    policy.validate(args, lambda message, urn: reported.append(message))
    assert reported == []


def test_stack_policy_follows_dependencies_and_reports_the_resource() -> None:
    policy = next(p for p in policies() if p.name == "kueue-after-install")
    assert isinstance(policy, StackValidationPolicy)

    def resource(type_: str, name: str, props: dict[str, Any], deps: list[PolicyResource]) -> PolicyResource:
        urn = f"urn:pulumi:dev::tpu-platform::{type_}::{name}"
        return PolicyResource(type_, unknown_checking_proxy(props), urn, name, opts(), None, None, deps, {})

    chart = resource("kubernetes:helm.sh/v4:Chart", "tpu-kueue-kueue", {"resources": []}, [])
    good = resource(
        "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor", "f", {"metadata": {"name": "f"}}, [chart]
    )
    early = resource("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue", "q", {"metadata": {"name": "q"}}, [])
    reported: list[tuple[str, str | None]] = []
    policy.validate(StackValidationArgs([chart, good, early]), lambda m, u: reported.append((m, u)))
    assert [urn for _, urn in reported] == [early.urn]
    assert "ClusterQueue 'q' does not depend on the Kueue install" in reported[0][0]


def test_stack_policy_reads_its_config() -> None:
    policy = next(p for p in policies() if p.name == "tpu-quota-within-capacity")
    assert isinstance(policy, StackValidationPolicy)
    quota = {"name": "google.com/tpu", "nominalQuota": 64}
    queue = PolicyResource(
        "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue",
        unknown_checking_proxy(
            {
                "metadata": {"name": "q"},
                "spec": {"resourceGroups": [{"flavors": [{"name": "f", "resources": [quota]}]}]},
            }
        ),
        "urn:pulumi:dev::p::kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue::q",
        "q",
        opts(),
        None,
        None,
        [],
        {},
    )
    reported: list[str] = []
    policy.validate(StackValidationArgs([queue]), lambda m, u: reported.append(m))
    assert len(reported) == 1
    reported.clear()
    exempt = StackValidationArgs([queue], config={"overcommitFlavors": ["f"]})
    policy.validate(exempt, lambda m, u: reported.append(m))
    assert reported == []


def test_pack_files_pin_the_sdk_this_suite_runs() -> None:
    manifest = yaml.safe_load((POLICY_DIR / "PulumiPolicy.yaml").read_text())
    assert manifest["runtime"]["name"] == "python"
    pins = dict(
        line.split("==")
        for line in (POLICY_DIR / "requirements.txt").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    )
    assert pins["pulumi-policy"] == PULUMI_POLICY_VERSION == version("pulumi-policy")
    assert pins["pulumi"] == version("pulumi")


@pytest.fixture(scope="module")
def analyzer() -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    """The pack started the way Pulumi starts it (``python -m pulumi.policy <engine> <dir>``)."""
    process = subprocess.Popen(
        [sys.executable, "-u", "-m", "pulumi.policy", "127.0.0.1:1", str(POLICY_DIR)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=str(POLICY_DIR),
    )
    stdout, stderr = process.stdout, process.stderr
    assert stdout is not None and stderr is not None
    port: list[str] = []
    reader = threading.Thread(target=lambda: port.append(stdout.readline().strip()), daemon=True)
    reader.start()
    reader.join(timeout=60)
    try:
        if not (port and port[0].isdigit()):
            process.kill()
            pytest.fail(f"the policy pack did not print its port: {stderr.read()}")
        channel = grpc.insecure_channel(f"127.0.0.1:{port[0]}")
        yield analyzer_pb2_grpc.AnalyzerStub(channel)
        channel.close()
    finally:
        process.kill()
        process.wait(timeout=10)


def _struct(value: dict[str, Any]) -> struct_pb2.Struct:
    message = struct_pb2.Struct()
    message.update(value)
    return message


def test_the_pack_serves_every_policy_and_blocks_a_broken_pool(
    analyzer: analyzer_pb2_grpc.AnalyzerStub,
) -> None:
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty(), timeout=30)
    assert info.name == PACK_NAME
    assert [p.name for p in info.policies] == [rule.name for rule in ALL_RULES]
    assert {p.enforcementLevel for p in info.policies} == {analyzer_pb2.MANDATORY}

    request = analyzer_pb2.AnalyzeRequest(
        type=NODE_POOL,
        properties=_struct(broken_pool_props()),
        urn=POOL_URN,
        name="tpu-a-0",
        options=analyzer_pb2.AnalyzerResourceOptions(),
    )
    response = analyzer.Analyze(request, timeout=30)
    assert [(d.policyName, d.enforcementLevel) for d in response.diagnostics] == [
        ("tpu-pool-auto-repair", analyzer_pb2.MANDATORY)
    ]


def test_the_pack_checks_a_whole_stack(analyzer: analyzer_pb2_grpc.AnalyzerStub) -> None:
    base = "urn:pulumi:dev::tpu-platform::"
    binding = analyzer_pb2.AnalyzerResource(
        type="kubernetes:rbac.authorization.k8s.io/v1:ClusterRole",
        urn=base + "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole::reader",
        name="reader",
        properties=_struct({"rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]}),
    )
    response = analyzer.AnalyzeStack(analyzer_pb2.AnalyzeStackRequest(resources=[binding]), timeout=30)
    assert [(d.policyName, d.urn) for d in response.diagnostics] == [("no-rbac-secrets", binding.urn)]
