"""Priority entitlements: the stack's grants, the admission policy, the linter and validate agree."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tpu_platform.config import PlatformConfig
from tpu_platform.config.problems import StackConfigError
from tpu_platform.kueue.entitlements import (
    GRANTS_ANNOTATION,
    POLICY_NAME,
    entitlement_policy,
    entitlements,
)
from tpu_platform.lint import lint_jobset
from tpu_platform.lint.stack import context_from_stack
from tpu_platform.plan import load_stack_config, parse_stack_config, stack_file

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "jobsets"
APPLIED_REFUSED = (
    "namespace applied (team applied) may not use priority high-priority-job; it may use: low-priority-job"
)


def _stack(name: str, **changes: Any) -> PlatformConfig:
    config = load_stack_config(stack_file(name))
    config.update({f"tpu-platform:{k}": v for k, v in changes.items()})
    return parse_stack_config(config)


def test_the_dev_stack_grants_high_priority_to_research_alone() -> None:
    ent = entitlements(_stack("dev"))
    assert ent.restricted == ("high-priority-job",)
    assert ent.allowed("research") == ("low-priority-job", "high-priority-job")
    assert ent.allowed("applied") == ("low-priority-job",)
    assert ent.allowed("scratch") == ("low-priority-job",), "a namespace of no team gets the open ones"
    assert ent.refusal("applied", "high-priority-job") == APPLIED_REFUSED
    assert ent.refusal("scratch", "high-priority-job") == (
        "namespace scratch (no team) may not use priority high-priority-job; it may use: low-priority-job"
    )
    assert ent.refusal("research", "high-priority-job") is None
    assert ent.refusal("applied", "system-cluster-critical") is None, "only the stack's priorities are kept"


def test_prod_grants_by_team_and_shared_namespaces_pool_them() -> None:
    ent = entitlements(_stack("prod"))
    assert ent.allowed("llm-research") == ("low-priority-job",)
    assert ent.allowed("llm-pretrain") == ("low-priority-job", "medium-priority-job", "high-priority-job")
    assert (
        ent.allowed("serving-canary")
        == ent.allowed("serving-eval")
        == ("low-priority-job", "medium-priority-job")
    )
    assert ent.annotation().endswith(";*=low-priority-job")


def test_a_stack_that_grants_nothing_renders_no_policy() -> None:
    cfg = _stack("dev", priorities=[{"name": "low", "value": 1}, {"name": "high", "value": 2}])
    assert entitlement_policy(entitlements(cfg)) is None


def test_the_policy_checks_every_kind_that_carries_a_priority_on_create_and_update() -> None:
    specs = entitlement_policy(entitlements(_stack("dev")))
    assert specs is not None
    policy, binding = specs
    rules = {
        (r["apiGroups"][0], r["resources"][0]): r["operations"]
        for r in policy["matchConstraints"]["resourceRules"]
    }
    assert rules == {
        ("", "pods"): ["CREATE", "UPDATE"],
        ("batch", "jobs"): ["CREATE", "UPDATE"],
        ("jobset.x-k8s.io", "jobsets"): ["CREATE", "UPDATE"],
        ("kueue.x-k8s.io", "workloads"): ["CREATE", "UPDATE"],
    }
    assert policy["failurePolicy"] == "Fail"
    assert "matchConditions" not in policy, "nobody is exempt: controllers pass because they keep priorities"
    variables = {v["name"]: v["expression"] for v in policy["variables"]}
    assert "!(p in variables.before)" in variables["forbidden"], "an UPDATE keeps what was admitted"
    assert binding == {"policyName": POLICY_NAME, "validationActions": ["Deny"]}


def test_the_plan_holds_the_policy_with_its_grants() -> None:
    plan = yaml.safe_load((REPO / "plans" / "dev.yaml").read_text())
    (vap,) = [
        r
        for r in plan["resources"]
        if r["type"].endswith("ValidatingAdmissionPolicy") and r["inputs"]["metadata"]["name"] == POLICY_NAME
    ]
    annotation = vap["inputs"]["metadata"]["annotations"][GRANTS_ANNOTATION]
    assert (
        annotation
        == "applied=low-priority-job;research=low-priority-job,high-priority-job;*=low-priority-job"
    )


def _jobset(namespace: str, queue: str, priority: str) -> dict[str, Any]:
    manifest = yaml.safe_load((EXAMPLES / "high-jax-trillium.yaml").read_text())
    manifest["metadata"]["namespace"] = namespace
    manifest["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = queue
    manifest["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = priority
    for rj in manifest["spec"]["replicatedJobs"]:
        rj["template"]["spec"]["template"]["spec"]["priorityClassName"] = priority
    return manifest


def test_the_linter_says_what_admission_will_refuse() -> None:
    ctx = context_from_stack(_stack("dev"))
    refused = [
        f
        for f in lint_jobset(_jobset("applied", "applied-queue", "high-priority-job"), ctx)
        if f.rule == "priority-not-granted"
    ]
    assert [f.path for f in refused] == [
        'metadata.labels["kueue.x-k8s.io/priority-class"]',
        "spec.replicatedJobs[0].template.spec.template.spec.priorityClassName",
    ]
    assert all(f.severity == "error" for f in refused)
    assert all(APPLIED_REFUSED in f.message for f in refused)
    granted = lint_jobset(_jobset("research", "research-queue", "high-priority-job"), ctx)
    assert not [f for f in granted if f.rule == "priority-not-granted"]


@pytest.mark.parametrize(
    ("teams", "message"),
    [
        (["reserch"], "'reserch' is no team of this stack; did you mean 'research'?"),
        ([], "is empty: no namespace could use this priority"),
    ],
)
def test_a_grant_to_no_team_is_an_error_naming_the_field(teams: list[str], message: str) -> None:
    config = load_stack_config(stack_file("dev"))
    priorities = copy.deepcopy(config["tpu-platform:priorities"])
    priorities[1]["teams"] = teams
    config["tpu-platform:priorities"] = priorities
    with pytest.raises(StackConfigError) as err:
        parse_stack_config(config)
    assert "tpu-platform:priorities[1].teams" in str(err.value)
    assert message in str(err.value)
