"""Which priorities each namespace may use, and the admission policy that makes the API server say so.

A priority is cluster-wide: any tenant that labels its JobSet ``kueue.x-k8s.io/priority-class:
high-priority-job`` is admitted first by Kueue and preempts for by kube-scheduler and the hotswap
controller, whatever its quota. A stack grants a priority to teams (``priorities[].teams``); only
their namespaces may then use it, and a priority granted to nobody in particular stays open to all.

One ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1, GA in Kubernetes 1.30:
https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/) checks every
object a tenant can create that carries a priority: a Pod's ``spec.priorityClassName``, a Job's and
each of a JobSet's pod templates', a Kueue Workload's ``spec.priorityClassRef.name`` (v1beta2) or
``spec.priorityClassName`` (v1beta1), and the ``kueue.x-k8s.io/priority-class`` label on any of them
(Kueue reads it from the Job, JobSet or Workload: kueue v0.19.2 pkg/util/priority). An UPDATE is
checked only for a priority the object did not carry before, so the controllers that patch objects
(Kueue, JobSet, the hotswap controller) are never refused over a priority already admitted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from tpu_platform.config import PlatformConfig
from tpu_platform.constants import PRIORITY_LABEL

POLICY_NAME: Final = "tpu-platform-priority-entitlements"
GRANTS_ANNOTATION: Final = "tpu-platform.dev/priority-grants"
"""On the policy: ``namespace=p1,p2;...`` per team namespace and ``*=...`` for every other one, so
``tpu-platform status`` shows each team's entitlement from the cluster itself."""
TEAMS_ANNOTATION: Final = "tpu-platform.dev/priority-teams"
"""On the policy: ``namespace=team;...``, the team (or teams) each namespace belongs to."""


@dataclass(frozen=True, slots=True)
class Entitlements:
    """Per namespace of a team, the priorities it may use; ``open`` for every namespace."""

    open: tuple[str, ...]
    restricted: tuple[str, ...]
    by_namespace: dict[str, tuple[str, ...]]
    team_of_namespace: dict[str, str]

    def allowed(self, namespace: str) -> tuple[str, ...]:
        return self.by_namespace.get(namespace, self.open)

    def refusal(self, namespace: str, priority: str) -> str | None:
        """The message the API server gives for ``priority`` in ``namespace``, or None if allowed."""
        if priority not in self.restricted or priority in self.allowed(namespace):
            return None
        allowed = listing(self.allowed(namespace))
        return f"{who(self, namespace)} may not use priority {priority}; it may use: {allowed}"

    def annotation(self) -> str:
        parts = [f"{ns}={','.join(names)}" for ns, names in sorted(self.by_namespace.items())]
        return ";".join([*parts, f"*={','.join(self.open)}"])

    def teams_annotation(self) -> str:
        return ";".join(f"{ns}={team}" for ns, team in sorted(self.team_of_namespace.items()))


def parse_grants(annotation: str) -> dict[str, tuple[str, ...]]:
    """The policy's grants annotation read back: namespace (``*`` for every other one) -> priorities."""
    return {ns: tuple(filter(None, names.split(","))) for ns, names in _pairs(annotation)}


def parse_teams(annotation: str) -> dict[str, str]:
    """The policy's teams annotation read back: namespace -> its team (or teams, comma-separated)."""
    return dict(_pairs(annotation))


def _pairs(annotation: str) -> list[tuple[str, str]]:
    return [(key, value) for key, _, value in (p.partition("=") for p in annotation.split(";") if p)]


def who(ent: Entitlements, namespace: str) -> str:
    team = ent.team_of_namespace.get(namespace)
    return f"namespace {namespace} (team {team})" if team else f"namespace {namespace} (no team)"


def listing(names: tuple[str, ...]) -> str:
    return ", ".join(names) if names else "none of the stack's priorities"


def entitlements(cfg: PlatformConfig) -> Entitlements:
    """The stack's grants, lowest priority first; teams sharing a namespace pool their grants there."""
    ordered = sorted(cfg.priorities, key=lambda p: p.value)
    open_ = tuple(p.name for p in ordered if p.teams is None)
    restricted = tuple(p.name for p in ordered if p.teams is not None)
    team_of: dict[str, str] = {}
    granted: dict[str, set[str]] = {}
    for team in cfg.teams:
        for ns in team.namespace_names():
            team_of[ns] = f"{team_of[ns]}, {team.name}" if ns in team_of else team.name
            granted.setdefault(ns, set()).update(p.name for p in ordered if p.teams and team.name in p.teams)
    by_namespace = {
        ns: tuple(p.name for p in ordered if p.name in open_ or p.name in g) for ns, g in granted.items()
    }
    return Entitlements(open_, restricted, by_namespace, team_of)


def _cel(value: Any) -> str:
    """A CEL literal of strings, lists and maps (CEL's string literals take JSON's escapes)."""
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_cel(k)}: {_cel(v)}" for k, v in value.items()) + "}"
    return "[" + ", ".join(_cel(v) for v in value) + "]"


def _requested(obj: str) -> str:
    """Every priority ``obj`` names (a list of strings; empty for a null ``oldObject``)."""
    resource = "request.resource.resource"
    spec = f"{obj}.spec"
    parts = [
        f"(has({obj}.metadata.labels) && '{PRIORITY_LABEL}' in {obj}.metadata.labels"
        f" ? [{obj}.metadata.labels['{PRIORITY_LABEL}']] : [])",
        f"({resource} == 'pods' && has({spec}.priorityClassName) ? [{spec}.priorityClassName] : [])",
        f"({resource} == 'jobs' && has({spec}.template.spec.priorityClassName)"
        f" ? [{spec}.template.spec.priorityClassName] : [])",
        f"({resource} == 'jobsets' && has({spec}.replicatedJobs) ? {spec}.replicatedJobs"
        ".filter(r, has(r.template.spec.template.spec.priorityClassName))"
        ".map(r, r.template.spec.template.spec.priorityClassName) : [])",
        f"({resource} == 'workloads' && has({spec}.priorityClassRef) ? [{spec}.priorityClassRef.name] : [])",
        f"({resource} == 'workloads' && has({spec}.priorityClassName) ? [{spec}.priorityClassName] : [])",
    ]
    joined = " + ".join(parts)
    return f"{obj} == null ? [] : {joined}" if obj == "oldObject" else joined


def _rule(group: str, resource: str, version: str) -> dict[str, Any]:
    return {
        "apiGroups": [group],
        "apiVersions": [version],
        "operations": ["CREATE", "UPDATE"],
        "resources": [resource],
    }


def entitlement_policy(ent: Entitlements) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The policy's and its binding's specs; None when no priority is restricted."""
    if not ent.restricted:
        return None
    variables = [
        {"name": "ns", "expression": "request.namespace"},
        {"name": "restricted", "expression": _cel(list(ent.restricted))},
        {"name": "grants", "expression": _cel({ns: list(v) for ns, v in sorted(ent.by_namespace.items())})},
        {"name": "teams", "expression": _cel(dict(sorted(ent.team_of_namespace.items())))},
        {
            "name": "allowed",
            "expression": f"variables.ns in variables.grants ? variables.grants[variables.ns]"
            f" : {_cel(list(ent.open))}",
        },
        {"name": "requested", "expression": _requested("object")},
        {"name": "before", "expression": _requested("oldObject")},
        {
            "name": "forbidden",
            "expression": "variables.requested.filter(p, p in variables.restricted"
            " && !(p in variables.allowed) && !(p in variables.before))",
        },
    ]
    message = (
        "'namespace ' + variables.ns + (variables.ns in variables.teams"
        " ? ' (team ' + variables.teams[variables.ns] + ')' : ' (no team)')"
        " + ' may not use priority ' + variables.forbidden[0] + '; it may use: '"
        ' + (size(variables.allowed) == 0 ? "none of the stack\'s priorities"'
        " : variables.allowed.join(', '))"
    )
    policy = {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [
                _rule("", "pods", "v1"),
                _rule("batch", "jobs", "v1"),
                _rule("jobset.x-k8s.io", "jobsets", "*"),
                _rule("kueue.x-k8s.io", "workloads", "*"),
            ]
        },
        "variables": variables,
        "validations": [
            {
                "expression": "size(variables.forbidden) == 0",
                "messageExpression": message,
                "reason": "Forbidden",
            }
        ],
    }
    binding = {"policyName": POLICY_NAME, "validationActions": ["Deny"]}
    return policy, binding
