"""tpu-pool-replacement: a real preview may not replace or delete an unacknowledged TPU slice.

The policy compares the previewed pools with the plan of what is deployed, using the replacement
fields of tpu_platform/plan/data/force_new.json (hashicorp/terraform-provider-google v7.44.0 ForceNew).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi_policy import PolicyResource, PolicyResourceOptions, StackValidationArgs, StackValidationPolicy
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, unknown_checking_proxy

from tpu_platform import cli
from tpu_platform.plan.stacks import PLANS_DIR
from tpu_platform.policy.pack import policies, to_plain
from tpu_platform.policy.replacement import NAME, check_tpu_pool_replacement, prepare
from tpu_platform.policy.resources import Resource, Stack

PLAN_PATH = PLANS_DIR / "prod.yaml"
PLAN = yaml.safe_load(PLAN_PATH.read_text())
POOLS = [r for r in PLAN["resources"] if r["type"] == "gcp:container/nodePool:NodePool"]


def _urn(entry: dict[str, Any]) -> str:
    parent_type = entry["parent"].split("::")[0]
    return f"urn:pulumi:prod::tpu-platform::{parent_type}${entry['type']}::{entry['name']}"


def _stack(entries: list[dict[str, Any]]) -> Stack:
    return Stack(
        Resource(_urn(e), e["type"], e["name"], e["inputs"], f"urn:pulumi:prod::tpu-platform::{e['parent']}")
        for e in entries
    )


def _renamed_reservation() -> list[dict[str, Any]]:
    pools = copy.deepcopy(POOLS)
    for pool in pools:
        affinity = pool["inputs"]["nodeConfig"].get("reservationAffinity")
        if affinity and affinity["values"] == ["tpu-v6e-prod-4x4"]:
            affinity["values"] = ["tpu-v6e-prod-4x4-renamed"]
    return pools


def test_an_unchanged_stack_passes() -> None:
    assert check_tpu_pool_replacement(_stack(POOLS), {"baseline": PLAN["resources"]}) == []


def test_no_baseline_means_the_policy_does_not_apply() -> None:
    assert check_tpu_pool_replacement(_stack(_renamed_reservation()), {}) == []


def test_a_renamed_reservation_denies_eight_slices_until_acknowledged() -> None:
    violations = check_tpu_pool_replacement(_stack(_renamed_reservation()), {"baseline": PLAN["resources"]})
    assert len(violations) == 8
    assert all("reservationAffinity.values" in v.message and "replaced" in v.message for v in violations)
    assert {v.urn for v in violations} == {_urn(p) for p in POOLS if "-4x4-" in p["name"]}
    names = [f"prod-4x4-{i}" for i in range(8)]
    partial = {"baseline": PLAN["resources"], "acknowledgeReplacement": names[:7]}
    (left,) = check_tpu_pool_replacement(_stack(_renamed_reservation()), partial)
    assert "'prod-4x4-7'" in left.message


def test_a_removed_slice_is_denied_and_the_system_pool_is_not_a_slice() -> None:
    kept = [p for p in POOLS if p["name"] not in ("tpu-prod-8x8-3", "tpu-cluster-system")]
    violations = check_tpu_pool_replacement(_stack(kept), {"baseline": PLAN["resources"]})
    assert [("deleted" in v.message, "'prod-8x8-3'" in v.message) for v in violations] == [(True, True)]


def test_unknown_preview_values_are_not_evidence() -> None:
    pools = copy.deepcopy(POOLS)
    for pool in pools:
        pool["inputs"]["nodeConfig"]["serviceAccount"] = "[computed]"
    assert check_tpu_pool_replacement(_stack(pools), {"baseline": PLAN["resources"]}) == []


def test_the_pack_reads_the_baseline_plan_and_the_stack_acknowledgement(tmp_path: Path) -> None:
    policy = next(p for p in policies() if p.name == NAME)
    assert isinstance(policy, StackValidationPolicy)
    opts = PolicyResourceOptions(False, [], None, [], None, [], None)  # type: ignore[arg-type]
    resources = []
    for entry in _renamed_reservation():
        props = copy.deepcopy(entry["inputs"])
        props["nodeConfig"]["serviceAccount"] = UNKNOWN_STRING_VALUE
        resources.append(
            PolicyResource(
                entry["type"],
                unknown_checking_proxy(props),
                _urn(entry),
                entry["name"],
                opts,
                None,
                None,
                [],
                {},
            )
        )
    reported: list[str] = []
    args = StackValidationArgs(resources, config={"baselinePlan": str(PLAN_PATH)})
    policy.validate(args, lambda m, u: reported.append(m))
    assert len(reported) == 8
    reported.clear()
    policy.validate(
        StackValidationArgs(resources, config={"baselinePlan": str(tmp_path / "none.yaml")}),
        lambda m, u: reported.append(m),
    )
    assert len(reported) == 1 and "cannot be read" in reported[0]
    stack_file = tmp_path / "Pulumi.prod.yaml"
    stack_file.write_text(yaml.safe_dump({"config": {"tpu-platform:acknowledgeReplacement": ["prod-4x4-0"]}}))
    settings = prepare({"baselinePlan": str(PLAN_PATH), "acknowledgeReplacement": ["prod-4x4-1"]}, stack_file)
    assert settings["acknowledgeReplacement"] == ["prod-4x4-1", "prod-4x4-0"]
    assert to_plain(UNKNOWN_STRING_VALUE) is not None


def test_the_offline_runner_checks_replacements_against_a_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:

    baseline = tmp_path / "plans"
    baseline.mkdir()
    text = PLAN_PATH.read_text().replace("- tpu-v6e-prod-8x8\n", "- tpu-v6e-prod-8x8-old\n")
    (baseline / "prod.yaml").write_text(text)
    assert cli.main(["policy", "prod", "--baseline", str(baseline)]) == 1
    out = capsys.readouterr().out
    assert "stack prod: 4 violations" in out and "prod-8x8-0" in out
    (baseline / "prod.yaml").write_text(PLAN_PATH.read_text())
    assert cli.main(["policy", "prod", "--baseline", str(baseline)]) == 0
