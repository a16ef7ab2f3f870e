"""ValidatingAdmissionPolicies that keep the controller's own state the controller's own.

The controller's decisions rest on what it wrote: the unhealthy-pool taint and state annotations on
nodes, and the preemption record on victim JobSets (which also reserves the freed pools for the
beneficiary). Anyone else writing them could switch off preemption for a pool, starve a
beneficiary, hand a pool back before it recovered, or make the controller preempt a third team's
JobSet. These policies let only the controller's service account set, change or remove them (on
CREATE and UPDATE, on the object and on its ``status`` subresource; a PATCH is admitted as an UPDATE
of the patched object). Everything else about
nodes and JobSets, including the tenant's own ``tpu-platform.dev/`` annotations (``preemptible``,
``last-checkpoint-time``, ``checkpoint-interval-seconds``, and ``checkpoint-completed-at``, the
workload's answer to a maintenance checkpoint request), stays writable as before.

admissionregistration.k8s.io/v1 (GA in Kubernetes 1.30). CEL variables as documented
(https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/, and the
``Validation.expression`` field of k8s.io/api ``admissionregistration/v1/types.go``): ``object`` (null
for DELETE), ``oldObject`` (null for CREATE), ``request`` (the AdmissionRequest: ``userInfo``,
``operation`` ...) and ``variables`` (the policy's named variables). A service account's username
is ``system:serviceaccount:NAMESPACE:NAME``. Plain data, no Pulumi import; the component renders it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from tpu_platform.hotswap.core import constants as k

JOBSET_STATE_ANNOTATIONS: Final = (
    k.PREEMPTED_FOR_ANNOTATION,
    k.PREEMPTED_AT_ANNOTATION,
    k.PREEMPTED_POOLS_ANNOTATION,
    k.PREEMPTION_REASON_ANNOTATION,
    k.PREEMPTION_COUNT_ANNOTATION,
    *k.CHECKPOINT_REQUEST_ANNOTATIONS,
)
"""The preemption record the controller writes on a victim JobSet, and its side of the maintenance
checkpoint protocol (a forged request time would make a stale answer count). The workload's answer,
``checkpoint-completed-at``, is not among them: the workload writes it."""
NODE_STATE_ANNOTATIONS: Final = k.NODE_STATE_ANNOTATIONS


def service_account_user(namespace: str, name: str) -> str:
    return f"system:serviceaccount:{namespace}:{name}"


def _cel_list(items: tuple[str, ...]) -> str:
    return "[" + ", ".join(f"'{item}'" for item in items) + "]"


def _unchanged_annotations(keys: tuple[str, ...]) -> str:
    new, old = "variables.newAnnotations", "variables.oldAnnotations"
    return (
        f"{_cel_list(keys)}.all(key, (key in {new}) == (key in {old})"
        f" && (!(key in {new}) || {new}[key] == {old}[key]))"
    )


_ANNOTATION_VARIABLES: Final = (
    {
        "name": "oldAnnotations",
        "expression": "oldObject != null && has(oldObject.metadata.annotations)"
        " ? oldObject.metadata.annotations : {}",
    },
    {
        "name": "newAnnotations",
        "expression": "has(object.metadata.annotations) ? object.metadata.annotations : {}",
    },
)


def _own_taints(obj: str, *, nullable: bool) -> str:
    """The controller's taints on ``obj`` (a list, empty when there are none or no object)."""
    present = f"{obj} != null && has({obj}.spec.taints)" if nullable else f"has({obj}.spec.taints)"
    return f"{present} ? {obj}.spec.taints.filter(t, t.key == '{k.UNHEALTHY_TAINT_KEY}') : []"


@dataclass(frozen=True, slots=True)
class AdmissionPolicy:
    """One policy and its binding, as Kubernetes objects' ``metadata``-less specs."""

    name: str
    policy_spec: dict[str, Any]
    binding_spec: dict[str, Any]


def state_policies(controller_user: str) -> tuple[AdmissionPolicy, ...]:
    """The node and the JobSet policy, each denying any other user's change to the controller's state."""
    not_controller = {
        "name": "not-the-controller",
        "expression": f"request.userInfo.username != '{controller_user}'",
    }
    node_message = (
        f"only the hotswap controller ({controller_user}) may set, change or remove the taint "
        f"{k.UNHEALTHY_TAINT_KEY} and the annotations {', '.join(NODE_STATE_ANNOTATIONS)}"
    )
    jobset_message = (
        f"only the hotswap controller ({controller_user}) may set, change or remove the preemption "
        f"record and checkpoint request annotations {', '.join(JOBSET_STATE_ANNOTATIONS)} "
        f"(the workload answers a request with {k.CHECKPOINT_COMPLETED_AT_ANNOTATION})"
    )
    nodes = {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"],
                    # The status subresource too: the node status strategy resets only spec, so
                    # annotations written through nodes/status persist (kubernetes v1.34.12
                    # pkg/registry/core/node/strategy.go, nodeStatusStrategy.PrepareForUpdate).
                    "resources": ["nodes", "nodes/status"],
                }
            ]
        },
        "matchConditions": [not_controller],
        "variables": [
            *_ANNOTATION_VARIABLES,
            {"name": "oldTaints", "expression": _own_taints("oldObject", nullable=True)},
            {"name": "newTaints", "expression": _own_taints("object", nullable=False)},
        ],
        "validations": [
            {"expression": _unchanged_annotations(NODE_STATE_ANNOTATIONS), "message": node_message},
            {
                "expression": "variables.newTaints == variables.oldTaints",
                "message": node_message,
            },
        ],
    }
    jobsets = {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": ["jobset.x-k8s.io"],
                    "apiVersions": ["*"],
                    "operations": ["CREATE", "UPDATE"],
                    # A CRD's status strategy drops metadata changes (apiextensions-apiserver
                    # v0.34.12 pkg/registry/customresource/status_strategy.go); matched anyway.
                    "resources": ["jobsets", "jobsets/status"],
                }
            ]
        },
        "matchConditions": [not_controller],
        "variables": list(_ANNOTATION_VARIABLES),
        "validations": [
            {"expression": _unchanged_annotations(JOBSET_STATE_ANNOTATIONS), "message": jobset_message}
        ],
    }
    return tuple(
        AdmissionPolicy(name, spec, {"policyName": name, "validationActions": ["Deny"]})
        for name, spec in (
            ("tpu-platform-hotswap-node-state", nodes),
            ("tpu-platform-hotswap-jobset-state", jobsets),
        )
    )
