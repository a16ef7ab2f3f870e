"""The ``reset-scoped-by-tag`` rule: a grant of ``compute.instances.reset`` on a project, folder or
organization carries an IAM condition that requires a Resource Manager tag (IAM "Attribute reference
for IAM Conditions", ``resource.matchTagId`` / ``resource.matchTag``), over every committed plan and on
hand-built grants."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.policy.test_policy_rules import res
from tpu_platform.policy import UNKNOWN, Resource, evaluate
from tpu_platform.policy.iam_rules import requires_tag
from tpu_platform.policy.offline import check_plan_document

RULE = "reset-scoped-by-tag"
PLANS = sorted(Path(__file__).resolve().parents[2].joinpath("plans").glob("*.yaml"))
MEMBER = "gcp:projects/iAMMember:IAMMember"
CUSTOM_ROLE = "gcp:projects/iAMCustomRole:IAMCustomRole"
SCOPED = "resource.matchTagId('tagKeys/111', 'tagValues/222')"
SA = "serviceAccount:ctl@p.iam.gserviceaccount.com"


def plan(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(path.read_text())
    return document


def reset_grants(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The plan's project IAM members whose custom role lists compute.instances.reset."""
    roles = {
        f"projects/{r['inputs']['project']}/roles/{r['inputs']['roleId']}"
        for r in document["resources"]
        if r["type"] == CUSTOM_ROLE and "compute.instances.reset" in r["inputs"]["permissions"]
    }
    return [r for r in document["resources"] if r["type"] == MEMBER and r["inputs"]["role"] in roles]


def messages(resources: list[Resource]) -> list[str]:
    return [v.message for v in evaluate(resources) if v.policy == RULE]


def role(permissions: list[str], role_id: str = "ctl") -> Resource:
    return res(
        CUSTOM_ROLE, f"role-{role_id}", {"project": "p", "roleId": role_id, "permissions": permissions}
    )


def member(role_name: Any, condition: Any = None, deps: tuple[Resource, ...] = ()) -> Resource:
    props: dict[str, Any] = {"project": "p", "role": role_name, "member": SA}
    if condition is not None:
        props["condition"] = condition
    return res(MEMBER, "grant", props, deps=deps)


def condition(expression: Any) -> dict[str, Any]:
    return {"title": "t", "description": "d", "expression": expression}


@pytest.mark.parametrize("path", PLANS, ids=lambda p: p.stem)
def test_every_committed_plan_complies(path: Path) -> None:
    violations = check_plan_document(plan(path))
    assert violations == [], "\n".join(str(v) for v in violations)


@pytest.mark.parametrize("path", PLANS, ids=lambda p: p.stem)
def test_a_committed_plan_granting_the_reset_unconditioned_is_refused(path: Path) -> None:
    document = plan(path)
    grants = reset_grants(document)
    if not grants:
        assert all("compute.instances.reset" not in json.dumps(r) for r in document["resources"])
        return
    broken = copy.deepcopy(document)
    for grant in reset_grants(broken):
        del grant["inputs"]["condition"]
    found = [v for v in check_plan_document(broken) if v.policy == RULE]
    assert sorted(v.urn.rsplit("::", 1)[-1] for v in found if v.urn) == sorted(g["name"] for g in grants)
    assert all("without an IAM condition" in v.message for v in found)


def test_the_platforms_grant_is_scoped_and_the_operations_listing_needs_no_tag() -> None:
    vm = role(["compute.instances.get", "compute.instances.reset"])
    operations = role(["compute.zoneOperations.list"], "ops")
    assert messages([vm, member("projects/p/roles/ctl", condition(SCOPED))]) == []
    assert messages([operations, member("projects/p/roles/ops")]) == []
    (msg,) = messages([vm, member("projects/p/roles/ctl")])
    assert "compute.instances.reset" in msg and SA in msg and "without an IAM condition" in msg
    assert "resource.matchTagId" in msg


@pytest.mark.parametrize(
    "expression",
    [
        SCOPED,
        "resource.matchTag('my-project/tpu-vms', 'tpu-slice')",
        f"({SCOPED}) && request.time < timestamp('2030-01-01T00:00:00Z')",
        'resource.matchTagId("tagKeys/1", "tagValues/2")',
    ],
)
def test_a_condition_that_requires_a_tag_passes(expression: str) -> None:
    assert requires_tag(expression)
    assert (
        messages([role(["compute.instances.reset"]), member("projects/p/roles/ctl", condition(expression))])
        == []
    )


@pytest.mark.parametrize(
    "expression",
    [
        "request.time < timestamp('2030-01-01T00:00:00Z')",
        f"{SCOPED} || true",
        f"!{SCOPED}",
        f"{SCOPED} ? true : true",
        "resource.hasTagKeyId('tagKeys/111')",
        "resource.matchTagId('tagKeys/x', 'tagValues/222')",
        "resource.type == 'compute.googleapis.com/Instance'",
    ],
)
def test_a_condition_that_does_not_require_a_tag_fails(expression: str) -> None:
    assert not requires_tag(expression)
    (msg,) = messages(
        [role(["compute.instances.reset"]), member("projects/p/roles/ctl", condition(expression))]
    )
    assert "does not require a tag" in msg


@pytest.mark.parametrize(
    "predefined", ["roles/compute.instanceAdmin.v1", "roles/compute.instanceAdmin", "roles/compute.admin"]
)
def test_a_predefined_role_holding_the_reset_counts(predefined: str) -> None:
    (msg,) = messages([member(predefined)])
    assert predefined in msg
    assert messages([member(predefined, condition(SCOPED))]) == []
    assert messages([member("roles/compute.viewer")]) == []


def test_bindings_folders_organizations_and_policies_count() -> None:
    org_role = res(
        "gcp:organizations/iAMCustomRole:IAMCustomRole",
        "org-role",
        {"orgId": "42", "roleId": "resetter", "permissions": ["compute.instances.reset"]},
    )
    folder = res(
        "gcp:folder/iAMBinding:IAMBinding",
        "folder-grant",
        {"folder": "folders/7", "role": "organizations/42/roles/resetter", "members": [SA, "group:ops@x"]},
    )
    (msg,) = messages([org_role, folder])
    assert "group:ops@x" in msg and "folder-grant" in msg
    policy_data = json.dumps(
        {"bindings": [{"role": "roles/editor", "members": [SA]}, {"role": "roles/viewer", "members": [SA]}]}
    )
    policy = res("gcp:projects/iAMPolicy:IAMPolicy", "policy", {"project": "p", "policyData": policy_data})
    (msg,) = messages([policy])
    assert "roles/editor" in msg


def test_what_a_preview_cannot_know_is_read_from_where_it_comes_from() -> None:
    """In a preview the role name and the condition built from the tag's ids are not known yet: the
    role is the custom role the grant depends on, the condition needs a tag value of the stack."""
    vm = role(["compute.instances.reset"])
    tag_value = res(
        "gcp:tags/tagValue:TagValue", "scope-value", {"parent": UNKNOWN, "shortName": "tpu-slice"}
    )
    assert messages([vm, tag_value, member(UNKNOWN, condition(UNKNOWN), deps=(vm, tag_value))]) == []
    (msg,) = messages([vm, member(UNKNOWN, condition(UNKNOWN), deps=(vm,))])
    assert "cannot show" in msg
    (msg,) = messages([vm, member(UNKNOWN, deps=(vm,))])
    assert "without an IAM condition" in msg
    reads = role(["compute.instances.get"])
    assert messages([reads, member(UNKNOWN, deps=(reads,))]) == []
