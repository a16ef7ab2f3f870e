"""The policy pack over every example stack, offline: no violations, and real breakage is caught."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import cache
from typing import Any

import pytest
from tpu_platform.components.program import stack_program

from tpu_platform import cli
from tpu_platform.plan import (
    RecordedResource,
    Rendering,
    list_stacks,
    load_stack_config,
    parse_stack_config,
    render,
    stack_file,
)
from tpu_platform.plan.harness import urn_label
from tpu_platform.policy import Stack, kueue_rules, offline, pools, rules
from tpu_platform.policy.offline import check_rendering, from_recorded
from tpu_platform.summary import summarize
from tpu_platform.tpu_pools import NODE_POOL

STACKS = list_stacks()


@cache
def rendered(stack: str) -> Rendering:
    return render(stack_program, load_stack_config(stack_file(stack)), stack=stack)


@pytest.mark.parametrize("stack", STACKS)
def test_example_stack_has_no_violations(stack: str) -> None:
    violations = check_rendering(rendered(stack))
    assert violations == [], "\n".join(str(v) for v in violations)


@pytest.mark.parametrize("stack", STACKS)
def test_quota_rule_sees_every_tpu_slice(stack: str) -> None:
    """The capacity the rule computes from node pools equals the stack summary's chips."""
    policy_stack = Stack(from_recorded(r) for r in rendered(stack).resources)
    tpu_pools = [p for p in policy_stack if pools.is_tpu_pool(p)]
    expected = summarize(parse_stack_config(load_stack_config(stack_file(stack)))).as_dict()["chips"]
    declared = [kueue_rules.existing_chips(r) for r in policy_stack if r.get("kind") == "ResourceFlavor"]
    counted = sum(pools.pool_chips(p) or 0 for p in tpu_pools) or sum(c or 0 for c in declared)
    assert counted == expected, "node pools, or in kubeconfig mode the chips the flavors declare"


def _edit(rendering: Rendering, pick: Callable[[RecordedResource], bool], **changes: Any) -> Rendering:
    """A copy of the rendering with the first matching resource changed."""
    resources = list(rendering.resources)
    index = next(i for i, r in enumerate(resources) if pick(r))
    resources[index] = dataclasses.replace(resources[index], **changes)
    return Rendering(resources=resources, outputs=rendering.outputs)


def _has_kueue(stack: str) -> bool:
    return any(r.type.startswith(kueue_rules.KUEUE_TYPE_PREFIX) for r in rendered(stack).resources)


def test_a_cluster_queue_created_before_the_install_is_caught() -> None:
    base = rendered("dev")
    assert _has_kueue("dev"), "the dev stack renders no Kueue objects; this test needs its ClusterQueues"

    def is_cq(r: RecordedResource) -> bool:
        return r.type.endswith(":ClusterQueue")

    queue = next(r for r in base.resources if is_cq(r))
    # Its flavor depends on the install, so only a queue with no path to the install is early.
    broken = _edit(base, is_cq, dependencies=())
    found = [v for v in check_rendering(broken) if v.policy == "kueue-after-install"]
    assert [v.urn for v in found] == [queue.urn], [str(v) for v in found]
    assert "does not depend on the Kueue install" in found[0].message


def test_raising_a_quota_past_the_slices_is_caught() -> None:
    base = rendered("dev")

    def is_cq(r: RecordedResource) -> bool:
        return r.type.endswith(":ClusterQueue")

    queue = next(r for r in base.resources if is_cq(r))
    inputs = queue.inputs
    spec = inputs["spec"]
    resource = spec["resourceGroups"][0]["flavors"][0]["resources"][0]
    bumped = {**resource, "nominalQuota": str(int(resource["nominalQuota"]) + 16)}
    new_spec = {
        **spec,
        "resourceGroups": [
            {
                **spec["resourceGroups"][0],
                "flavors": [{**spec["resourceGroups"][0]["flavors"][0], "resources": [bumped]}],
            }
        ],
    }
    broken = _edit(base, is_cq, inputs={**inputs, "spec": new_spec})
    found = [v for v in check_rendering(broken) if v.policy == "tpu-quota-within-capacity"]
    assert len(found) == 1
    assert "exceeds the 32 chips" in found[0].message
    assert "tpu-dev-4x4-0, dev-4x4-1" not in found[0].message
    assert "dev-4x4-0, dev-4x4-1" in found[0].message


def test_turning_off_auto_repair_on_a_slice_is_caught() -> None:
    base = rendered("dev")

    def is_slice(r: RecordedResource) -> bool:
        return r.type == NODE_POOL and r.inputs.get("name") == "dev-4x4-0"

    pool = next(r for r in base.resources if is_slice(r))
    broken = _edit(
        base, is_slice, inputs={**pool.inputs, "management": {"autoRepair": False, "autoUpgrade": True}}
    )
    found = check_rendering(broken)
    assert [(v.policy, v.urn) for v in found] == [("tpu-pool-auto-repair", pool.urn)]
    assert urn_label(pool.urn) == "gcp:container/nodePool:NodePool::tpu-dev-4x4-0"


def test_offline_command_reports_each_stack(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["policy", "dev"]) == 0
    assert capsys.readouterr().out == "stack dev: no violations\n"


def test_offline_command_fails_on_a_violation(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pool = rules.Resource(
        "urn:x", NODE_POOL, "p", {"name": "p", "nodeConfig": {"machineType": "ct6e-standard-4t"}}
    )
    monkeypatch.setattr(offline, "check_rendering", lambda rendering: rules.evaluate([pool]))
    assert cli.main(["policy", "dev"]) == 1
    out = capsys.readouterr().out
    assert out.startswith(
        "stack dev: 1 violation\n  - [tpu-pool-auto-repair] TPU node pool 'p' has auto-repair not set"
    )
