"""``reset-scoped-by-tag``: no grant lets anyone reset every VM of a project.

``compute.instances.reset`` is a hard reset ("The VM does not do a graceful shutdown",
https://cloud.google.com/compute/docs/reference/rest/v1/instances/reset). Granted on a project, folder
or organization without a condition it reaches every VM below: the cluster's CPU nodes and every other
workload's VMs. The platform grants it to the hotswap controller only for its own cluster's TPU VMs,
with the IAM condition of a Resource Manager tag GKE attaches to them
(:func:`tpu_platform.hotswap.iam.vm_scope_condition`). This rule holds every such grant of the stack to
the same shape: a project, folder or organization IAM member, binding or policy whose role holds the
permission (a custom role of the stack listing it, or a predefined role that includes it) must carry a
condition that requires a tag, ``resource.matchTagId(...)`` or ``resource.matchTag(...)`` (IAM
"Attribute reference for IAM Conditions", https://cloud.google.com/iam/docs/conditions-attribute-reference),
joined to anything else only by ``&&``, so nothing can widen it. A grant on one named instance
(``compute.InstanceIAMMember``) already names its VM and is not judged; nor is a value the preview
cannot know, unless nothing shows where it comes from.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..hotswap.iam import RESET_PERMISSION
from .resources import Config, Resource, Stack, Violation, as_list, is_unknown

NAME = "reset-scoped-by-tag"
CUSTOM_ROLES = ("gcp:projects/iAMCustomRole:IAMCustomRole", "gcp:organizations/iAMCustomRole:IAMCustomRole")
MEMBER_GRANTS = (
    "gcp:projects/iAMMember:IAMMember",
    "gcp:projects/iAMBinding:IAMBinding",
    "gcp:folder/iAMMember:IAMMember",
    "gcp:folder/iAMBinding:IAMBinding",
    "gcp:organizations/iAMMember:IAMMember",
    "gcp:organizations/iAMBinding:IAMBinding",
)
POLICIES = (
    "gcp:projects/iAMPolicy:IAMPolicy",
    "gcp:folder/iAMPolicy:IAMPolicy",
    "gcp:organizations/iAMPolicy:IAMPolicy",
)
TAG_VALUE = "gcp:tags/tagValue:TagValue"
PREDEFINED_WITH_RESET = frozenset(
    {
        "roles/owner",
        "roles/editor",
        "roles/compute.admin",
        "roles/compute.instanceAdmin",
        "roles/compute.instanceAdmin.v1",
    }
)
"""Predefined roles that include ``compute.instances.reset`` (IAM basic roles; Compute Engine IAM
roles, https://cloud.google.com/compute/docs/access/iam)."""

_TAG_TERM = re.compile(
    r"""resource\.matchTagId\(\s*(['"])tagKeys/[0-9]+\1\s*,\s*(['"])tagValues/[0-9]+\2\s*\)"""
    r"""|resource\.matchTag\(\s*(['"])[^'"/]+/[^'"]+\3\s*,\s*(['"])[^'"]+\4\s*\)"""
)
_STRING = re.compile(r"""'[^']*'|"[^"]*\"""")
_WIDENING = ("||", "!", "?")


@dataclass(frozen=True)
class Grant:
    """One role granted by one resource, with the condition it carries (None: unconditioned)."""

    resource: Resource
    role: Any
    condition: Any
    members: tuple[str, ...]


def custom_role_name(role: Resource) -> str | None:
    """``projects/P/roles/ID`` or ``organizations/O/roles/ID``, as a binding names the role."""
    role_id = role.get("roleId")
    if not isinstance(role_id, str):
        return None
    if role.type.startswith("gcp:projects/"):
        project = role.get("project")
        return f"projects/{project}/roles/{role_id}" if isinstance(project, str) else None
    org = role.get("orgId")
    return f"organizations/{org}/roles/{role_id}" if isinstance(org, str) else None


def _holds_reset(role: Resource) -> bool:
    return RESET_PERMISSION in [str(p) for p in as_list(role.get("permissions"))]


def _members(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    return tuple(str(m) for m in as_list(value))


def grants(stack: Stack) -> Iterator[Grant]:
    """Every role grant of a project, folder or organization IAM resource of the stack."""
    for res in stack.of_type(*MEMBER_GRANTS):
        members = _members(res.get("member")) + _members(res.get("members"))
        yield Grant(res, res.get("role"), res.get("condition"), members)
    for res in stack.of_type(*POLICIES):
        data = res.get("policyData")
        if not isinstance(data, str):
            continue
        try:
            policy = json.loads(data)
        except json.JSONDecodeError:
            continue  # the provider refuses malformed policy data itself
        for binding in as_list(policy.get("bindings") if isinstance(policy, Mapping) else None):
            if isinstance(binding, Mapping):
                yield Grant(
                    res, binding.get("role"), binding.get("condition"), _members(binding.get("members"))
                )


def _custom_roles(stack: Stack) -> dict[str, Resource]:
    roles = ((custom_role_name(r), r) for r in stack.of_type(*CUSTOM_ROLES))
    return {name: r for name, r in roles if name is not None}


def grants_reset(stack: Stack, grant: Grant, roles: Mapping[str, Resource]) -> bool:
    """The grant's role holds ``compute.instances.reset``. A role not yet known (a custom role the
    preview creates) is read from the custom roles the grant depends on."""
    if is_unknown(grant.role):
        deps = [d for d in stack.dependencies(grant.resource) if d.type in CUSTOM_ROLES]
        return any(_holds_reset(d) for d in deps)
    if not isinstance(grant.role, str):
        return False
    if grant.role in PREDEFINED_WITH_RESET:
        return True
    custom = roles.get(grant.role)
    return custom is not None and _holds_reset(custom)


def requires_tag(expression: str) -> bool:
    """The expression holds only for resources with a given tag: one of its ``&&`` terms is a tag
    match, and no ``||``, ``!`` or ``?:`` (outside string literals) could make it hold otherwise."""
    bare = _STRING.sub("''", expression)
    if any(op in bare for op in _WIDENING):
        return False
    terms = [term.strip() for term in expression.split("&&")]
    return any(_TAG_TERM.fullmatch(_unwrap(term)) for term in terms)


def _unwrap(term: str) -> str:
    while term.startswith("(") and term.endswith(")"):
        term = term[1:-1].strip()
    return term


def _problem(stack: Stack, grant: Grant) -> str | None:
    """Why the grant's condition does not scope it to tagged resources (None: it does)."""
    condition = grant.condition
    if not isinstance(condition, Mapping):
        return "without an IAM condition"
    expression = condition.get("expression")
    if is_unknown(expression):
        if any(d.type == TAG_VALUE for d in stack.dependencies(grant.resource)):
            return None
        return "under a condition the preview cannot show and that depends on no tag value of the stack"
    if not isinstance(expression, str) or not requires_tag(expression):
        return f"under the condition {expression!r}, which does not require a tag"
    return None


def check_reset_scoped_by_tag(stack: Stack, config: Config) -> list[Violation]:
    """A violation per hierarchy-level grant of ``compute.instances.reset`` not scoped by a tag."""
    roles = _custom_roles(stack)
    violations: list[Violation] = []
    for grant in grants(stack):
        if not grants_reset(stack, grant, roles):
            continue
        problem = _problem(stack, grant)
        if problem is None:
            continue
        who = ", ".join(grant.members) or "its members"
        violations.append(
            Violation(
                NAME,
                f"{grant.resource.display} grants {RESET_PERMISSION} (role {grant.role}) to {who} "
                f"{problem}: a stolen credential could hard-reset every VM it reaches. Bind it under "
                "a condition on a Resource Manager tag only the intended VMs carry, e.g. "
                "resource.matchTagId('tagKeys/N', 'tagValues/M') "
                "(tpu_platform.hotswap.iam.vm_scope_condition)",
                grant.resource.urn,
            )
        )
    return violations
