"""Inputs checked the way the receiving system checks them: each rule, its path and its fix.

Sources, one per rule (also cited where the rule lives):
- quantities: k8s.io/apimachinery pkg/api/resource/quantity.go; requests within limits:
  Kubernetes pkg/apis/core/validation ValidateResourceRequirements;
- label keys and values: k8s.io/apimachinery pkg/util/validation (IsQualifiedName, IsValidLabelValue);
- reserved node labels: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/ and
  https://cloud.google.com/kubernetes-engine/docs/concepts/plan-tpus;
- project ids: https://cloud.google.com/resource-manager/docs/creating-managing-projects;
- service accounts: https://cloud.google.com/iam/docs/service-accounts-create;
- feature gates: kubernetes-sigs/kueue v0.19.2 pkg/features/kube_features.go;
- waitForPodsReady.timeout: kueue v0.19.2 pkg/config/validation.go;
- borrowWithinCohort under fair sharing: kueue v0.19.2 site/content/en/docs/concepts/preemption.md;
- TPU v6e zones: https://cloud.google.com/tpu/docs/regions-zones (``tpu_platform/config/zones.py``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from tests.config.stack_problems import only_problem, problems_of
from tpu_platform.config import parse_platform
from tpu_platform.config.checks import stack_warnings
from tpu_platform.config.decode import decode_value, pulumi_text
from tpu_platform.config.formats import parse_quantity
from tpu_platform.plan import parse_stack_config

Mutation = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Mutation:
    """``"tpu-platform:cluster.systemPool.machineType"`` -> set that key (creating mappings)."""

    def mutate(config: dict[str, Any]) -> None:
        head, *rest = path.split(".")
        if not rest:
            config[head] = value
            return
        node: Any = config.setdefault(head, {})
        for part in rest[:-1]:
            node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
        last = rest[-1]
        if last.isdigit():
            node[int(last)] = value
        else:
            node[last] = value

    return mutate


TEAM = {"name": "research", "quota": [{"topology": "4x4", "slices": 1}]}

CASES: list[tuple[str, Mutation, str, str]] = [
    # (id, mutation, path the problem names, words of its message)
    ("quantity", _set("tpu-platform:kueue.controller.requests.cpu", "lots"), "kueue.controller.requests.cpu",
     "not a Kubernetes quantity"),
    ("huge-memory", _set("tpu-platform:kueue.controller.limits.memory", "9Pi"),
     "kueue.controller.limits.memory", "larger than any node"),
    ("kueue-request-above-limit", _set("tpu-platform:kueue.controller.requests.memory", "9Gi"),
     "kueue.controller.requests.memory", "above the limit"),
    ("hotswap-request-above-limit",
     _set("tpu-platform:hotswap.resources", {"memoryRequest": "9Gi", "memoryLimit": "1Mi"}),
     "hotswap.resources", "memoryRequest 9Gi is above memoryLimit 1Mi"),
    ("label-key", _set("tpu-platform:slicePools.0.labels", {"Bad Key!": "x"}), "slicePools[0].labels",
     "not a qualified name"),
    ("label-value", _set("tpu-platform:slicePools.0.labels", {"example.com/a": "-x-"}),
     "slicePools[0].labels", "not a valid Kubernetes label value"),
    ("gke-owned-label",
     _set("tpu-platform:slicePools.0.labels", {"cloud.google.com/gke-tpu-topology": "8x8"}),
     "slicePools[0].labels", "under cloud.google.com/"),
    ("kubernetes-label", _set("tpu-platform:slicePools.0.labels", {"node.kubernetes.io/x": "y"}),
     "slicePools[0].labels", "under kubernetes.io/"),
    ("cidr", _set("tpu-platform:cluster.masterAuthorizedCidrs", ["999.999.999.999/99"]),
     "cluster.masterAuthorizedCidrs[0]", "not an IPv4 CIDR"),
    ("cidr-host-bits", _set("tpu-platform:cluster.masterAuthorizedCidrs", ["10.0.0.1/8"]),
     "cluster.masterAuthorizedCidrs[0]", "has host bits set"),
    ("project", _set("gcp:project", "123456"), "gcp:project", "not a Google Cloud project id"),
    ("email", _set("tpu-platform:cluster.nodeServiceAccount", "nodes@example.com"),
     "cluster.nodeServiceAccount", "not a service account email"),
    ("version", _set("tpu-platform:cluster.minMasterVersion", "1.31.2-gke"), "cluster.minMasterVersion",
     "not a GKE version"),
    ("node-version", _set("tpu-platform:slicePools.0.nodeVersion", "v1.31"), "slicePools[0].nodeVersion",
     "not a GKE version"),
    ("machine-type", _set("tpu-platform:cluster.systemPool.machineType", "E2 Standard"),
     "cluster.systemPool.machineType", "not a Compute Engine machine type"),
    ("tpu-machine-for-system", _set("tpu-platform:cluster.systemPool.machineType", "ct6e-standard-4t"),
     "cluster.systemPool.machineType", "TPU machine type"),
    ("feature-gate", _set("tpu-platform:kueue.featureGates", {"TopologyAwareSchedulin": True}),
     "kueue.featureGates", "did you mean 'TopologyAwareScheduling'"),
    ("locked-gate", _set("tpu-platform:kueue.featureGates", {"HierarchicalCohorts": False}),
     "kueue.featureGates", "locked to true"),
    ("timeout-zero", _set("tpu-platform:kueue.waitForPodsReady", {"timeout": "0s"}),
     "kueue.waitForPodsReady.timeout", "must be longer than 0"),
    ("hotswap-floor", _set("tpu-platform:hotswap.settings", {"deadNodeConfirmSeconds": 0.99}),
     "hotswap.settings.deadNodeConfirmSeconds", "below the floor of 10 s"),
    ("lease-floor", _set("tpu-platform:hotswap.settings", {"leaseStaleSeconds": 5}),
     "hotswap.settings.leaseStaleSeconds", "must be 0 (off) or >= 20"),
    ("hotswap-runtime", _set("tpu-platform:hotswap.settings", {"runtime": 5}), "hotswap.settings",
     "hotswap.dryRun"),
    ("unknown-zone", _set("gcp:zone", "mars-north1-a"), "gcp:zone", "us-east5-a, us-east5-b, us-east5-c"),
    ("no-v6e-zone", _set("tpu-platform:slicePools.0.zone", "us-east5-d"), "slicePools[0].zone",
     "does not offer TPU v6e"),
    ("region", _set("gcp:region", "europe-north9"), "gcp:region", "not a region that offers TPU v6e"),
    ("bool-as-number", _set("tpu-platform:slicePools.0.count", True), "slicePools[0].count",
     "must be a whole number"),
    ("padded-number", _set("tpu-platform:slicePools.0.count", " 2 "), "slicePools[0].count",
     "must be a whole number"),
    ("huge-quota",
     _set("tpu-platform:teams", [{"name": "t", "quota": [{"topology": "4x4", "slices": 2**63}]}]),
     "teams[0].quota[0].slices", "less than or equal to 4096"),
    ("wait-fields-while-off",
     _set("tpu-platform:kueue.waitForPodsReady", {"enabled": False, "timeout": "10m"}),
     "kueue.waitForPodsReady.timeout", "has no effect while waitForPodsReady.enabled is false"),
    ("strategies-while-off",
     _set("tpu-platform:kueue.fairSharing",
          {"enabled": False, "preemptionStrategies": ["LessThanInitialShare"]}),
     "kueue.fairSharing.preemptionStrategies", "has no effect while fairSharing.enabled is false"),
    ("borrow-with-fair-sharing",
     _set("tpu-platform:teams", [
         {**TEAM, "cohortName": "ml",
          "preemption": {"reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "LowerPriority"}}},
     ]),
     "teams[0].preemption.borrowWithinCohort", "ignores borrowWithinCohort while fair sharing is on"),
    ("chart-empty", _set("tpu-platform:kueue.controller.chart", " "), "kueue.controller.chart",
     "give an oci:// reference or a chart folder"),
    ("chart-repo-url", _set("tpu-platform:kueue.jobset.chart", "https://charts.example.com"),
     "kueue.jobset.chart", "only oci:// references or local folders"),
]  # fmt: skip


@pytest.mark.parametrize(("mutate", "path", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_rule(stack: dict[str, Any], mutate: Mutation, path: str, words: str) -> None:
    mutate(stack)
    message = only_problem(stack)
    prefix = path if path.startswith("gcp:") else f"tpu-platform:{path}"
    assert message.startswith(f"{prefix}:"), message
    assert words in message, message


def test_quantities_parse_as_the_api_server_does() -> None:
    assert parse_quantity("1Gi") == 2**30
    assert parse_quantity("500m") * 1000 == 500
    assert parse_quantity("1e3") == 1000
    assert parse_quantity("2") == 2
    for bad in ("1GiB", "1 Gi", "Gi", "1.2.3", "0x10"):
        with pytest.raises(ValueError):
            parse_quantity(bad)


def test_no_teams_is_a_warning_not_an_error(stack: dict[str, Any]) -> None:
    cfg = parse_stack_config(stack)
    warnings = stack_warnings(cfg).lines
    assert len(warnings) == 1 and warnings[0].startswith("tpu-platform:teams: no teams")
    stack["tpu-platform:teams"] = [TEAM]
    assert not stack_warnings(parse_stack_config(stack)).lines


def test_a_zero_quota_queue_without_a_cohort_is_a_warning(stack: dict[str, Any]) -> None:
    """Kueue accepts a ClusterQueue whose nominal quotas are all 0; it just admits nothing."""
    stack["tpu-platform:teams"] = [{**TEAM, "quota": [{"topology": "4x4", "slices": 0}]}]
    (warning,) = stack_warnings(parse_stack_config(stack)).lines
    assert warning.startswith("tpu-platform:teams[0].quota: every nominal quota is 0")
    assert "Kueue accepts" in warning and "can admit nothing" in warning


def test_quoted_scalars_reach_both_paths_as_text() -> None:
    """Pulumi passes every value as text (pulumi/config.py); ``gcp:`` keys stay text."""
    assert decode_value("gcp", "project", pulumi_text(123456)) == "123456"
    assert decode_value("gcp", "project", pulumi_text("123456")) == "123456"
    assert decode_value("tpu-platform", "cluster", pulumi_text({"name": "x"})) == {"name": "x"}


def test_all_problems_of_many_rules_at_once(stack: dict[str, Any]) -> None:
    broken = copy.deepcopy(stack)
    for _, mutate, _, _ in CASES[:6]:
        mutate(broken)
    assert len(problems_of(broken)) >= 4


def test_parse_platform_accepts_the_fixed_examples() -> None:
    from tpu_platform.plan import list_stacks, load_stack_config, stack_file

    for name in list_stacks():
        parse_stack_config(load_stack_config(stack_file(name)))
    assert callable(parse_platform)
