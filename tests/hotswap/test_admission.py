"""The admission policies' CEL, evaluated offline (cel-python, ``tpu_platform.schema.cel``) on
realistic AdmissionRequests: only the controller's service account may set, change or remove its
taint and state annotations; every other write to nodes and JobSets passes.

How the API server applies a ValidatingAdmissionPolicy
(https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/): a request
matching ``matchConstraints`` is checked only if every ``matchConditions`` expression is true; then
``variables`` are evaluated (in order, each may use earlier ones through ``variables``) and every
``validations`` expression must be true or, with the binding's ``validationActions: [Deny]``, the
request is refused with the validation's message. ``object`` is null for DELETE, ``oldObject`` for
CREATE; a PATCH arrives as an UPDATE whose ``object`` is the patched object. A service account
authenticates as ``system:serviceaccount:NAMESPACE:NAME`` with groups ``system:serviceaccounts``,
``system:serviceaccounts:NAMESPACE`` and ``system:authenticated``.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from celpy import celtypes

from tests.hotswap.hotswap_fakes import jobset_obj, node_obj
from tpu_platform.hotswap import admission
from tpu_platform.hotswap.core import constants as k
from tpu_platform.schema.cel import evaluate_expression

CONTROLLER = admission.service_account_user("tpu-hotswap", "hotswap-controller")
POLICIES = {p.name: p for p in admission.state_policies(CONTROLLER)}
NODE_POLICY = POLICIES["tpu-platform-hotswap-node-state"]
JOBSET_POLICY = POLICIES["tpu-platform-hotswap-jobset-state"]


def user(name: str) -> dict[str, Any]:
    if name.startswith("system:serviceaccount:"):
        ns = name.split(":")[2]
        groups = ["system:serviceaccounts", f"system:serviceaccounts:{ns}", "system:authenticated"]
    elif name.startswith("system:node:"):
        groups = ["system:nodes", "system:authenticated"]
    else:
        groups = ["system:authenticated"]
    return {"username": name, "uid": f"uid-{name}", "groups": groups}


TENANT = user("alice@example.com")
TEAM_SA = user("system:serviceaccount:team-a:ci")
KUBELET = user("system:node:a-0")
NODE_LIFECYCLE = user("system:serviceaccount:kube-system:node-controller")
JOBSET_CONTROLLER = user("system:serviceaccount:jobset-system:jobset-controller-manager")
OWN = user(CONTROLLER)


def request(
    operation: str, obj: dict[str, Any] | None, old: dict[str, Any] | None, who: dict[str, Any]
) -> dict[str, Any]:
    """An AdmissionRequest (k8s.io/api admission/v1 AdmissionRequest) for a node or a JobSet."""
    target = obj if obj is not None else old
    assert target is not None
    is_node = target["kind"] == "Node"
    group, version = ("", "v1") if is_node else ("jobset.x-k8s.io", "v1alpha2")
    resource = "nodes" if is_node else "jobsets"
    meta = target["metadata"]
    return {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "kind": {"group": group, "version": version, "kind": target["kind"]},
        "resource": {"group": group, "version": version, "resource": resource},
        "requestKind": {"group": group, "version": version, "kind": target["kind"]},
        "requestResource": {"group": group, "version": version, "resource": resource},
        "name": meta["name"],
        "namespace": meta.get("namespace", ""),
        "operation": operation,
        "userInfo": who,
        "dryRun": False,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "UpdateOptions"},
    }


def matches(policy: admission.AdmissionPolicy, req: dict[str, Any]) -> bool:
    rule = policy.policy_spec["matchConstraints"]["resourceRules"][0]
    return (
        req["resource"]["group"] in rule["apiGroups"]
        and req["resource"]["resource"] in rule["resources"]
        and req["operation"] in rule["operations"]
        and (rule["apiVersions"] == ["*"] or req["resource"]["version"] in rule["apiVersions"])
    )


def admit(
    policy: admission.AdmissionPolicy, operation: str, obj: Any, old: Any, who: dict[str, Any]
) -> tuple[bool, str]:
    """(allowed, message) as the API server decides it for this policy alone."""
    req = request(operation, obj, old, who)
    if not matches(policy, req):
        return True, "not matched"
    spec = policy.policy_spec
    bindings: dict[str, Any] = {"object": obj, "oldObject": old, "request": req}
    for cond in spec["matchConditions"]:
        if not evaluate_expression(cond["expression"], bindings):
            return True, f"skipped: {cond['name']}"
    variables: dict[Any, Any] = {}
    for var in spec["variables"]:
        bound = {**bindings, "variables": celtypes.MapType(variables)}
        variables[celtypes.StringType(var["name"])] = evaluate_expression(var["expression"], bound)
    bound = {**bindings, "variables": celtypes.MapType(variables)}
    for check in spec["validations"]:
        result = evaluate_expression(check["expression"], bound)
        assert isinstance(result, celtypes.BoolType), check["expression"]
        if not result:
            return False, check["message"]
    return True, "valid"


OWN_TAINT = {"key": k.UNHEALTHY_TAINT_KEY, "value": "true", "effect": "NoSchedule"}


def declared_node() -> dict[str, Any]:
    node = node_obj("a-0", "a", ready="True", since=0)
    node["spec"]["taints"].append(dict(OWN_TAINT))
    node["metadata"]["annotations"] = {
        k.UNHEALTHY_SINCE_ANNOTATION: "2030-01-01T00:00:00Z",
        k.UNHEALTHY_REASON_ANNOTATION: "node a-1 NotReady",
        "container.googleapis.com/instance_id": "123",
    }
    return node


def victim_jobset() -> dict[str, Any]:
    js = jobset_obj("low", namespace="team-a")
    js["metadata"]["annotations"].update(
        {
            k.PREEMPTED_FOR_ANNOTATION: "team-b/high",
            k.PREEMPTED_AT_ANNOTATION: "2030-01-01T00:00:00Z",
            k.PREEMPTED_POOLS_ANNOTATION: "a",
            k.PREEMPTION_COUNT_ANNOTATION: "1",
            k.PREEMPTION_REASON_ANNOTATION: "freed 1 slice",
            k.CHECKPOINT_REQUESTED_AT_ANNOTATION: "2030-01-01T00:00:00Z",
            k.CHECKPOINT_DEADLINE_ANNOTATION: "2030-01-01T00:15:00Z",
            k.CHECKPOINT_REQUEST_POOLS_ANNOTATION: "a",
            k.CHECKPOINT_REQUEST_REASON_ANNOTATION: "scheduled maintenance on node pool(s) a",
        }
    )
    return js


def edited(obj: dict[str, Any], change: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    change(out)
    return out


# --- nodes -----------------------------------------------------------------------------------------


def test_the_controller_may_taint_annotate_and_clear_a_node() -> None:
    plain = node_obj("a-0", "a", ready="True", since=0)
    declared = declared_node()
    assert admit(NODE_POLICY, "UPDATE", declared, plain, OWN)[0]
    assert admit(NODE_POLICY, "UPDATE", plain, declared, OWN)[0]


@pytest.mark.parametrize("who", [TENANT, TEAM_SA, KUBELET, NODE_LIFECYCLE], ids=lambda u: u["username"])
def test_nobody_else_may_add_or_remove_the_taint(who: dict[str, Any]) -> None:
    plain = node_obj("a-0", "a", ready="True", since=0)
    tainted = edited(plain, lambda n: n["spec"]["taints"].append(dict(OWN_TAINT)))
    allowed, message = admit(NODE_POLICY, "UPDATE", tainted, plain, who)
    assert not allowed and k.UNHEALTHY_TAINT_KEY in message
    assert not admit(NODE_POLICY, "UPDATE", plain, tainted, who)[0], "removal"
    changed = edited(tainted, lambda n: n["spec"]["taints"][-1].update(effect="NoExecute"))
    assert not admit(NODE_POLICY, "UPDATE", changed, tainted, who)[0], "change of effect"


@pytest.mark.parametrize("key", admission.NODE_STATE_ANNOTATIONS)
def test_nobody_else_may_set_change_or_remove_a_node_state_annotation(key: str) -> None:
    node = declared_node()
    node["metadata"]["annotations"][k.CLEAN_SINCE_ANNOTATION] = "2030-01-01T00:05:00Z"
    node["metadata"]["annotations"][k.SUSPECT_SINCE_ANNOTATION] = "2030-01-01T00:00:00Z"
    node["metadata"]["annotations"][k.UNHEALTHY_HISTORY_ANNOTATION] = "2030-01-01T00:00:00Z"
    node["metadata"]["annotations"][k.TPU_ERRORS_ANNOTATION] = "2030-01-01T00:00:00Z/team-a/uid-1"
    node["metadata"]["annotations"][k.TENANT_DECLARED_ANNOTATION] = "2030-01-01T00:00:00Z/team:a"
    removed = edited(node, lambda n: n["metadata"]["annotations"].pop(key))
    changed = edited(node, lambda n: n["metadata"]["annotations"].update({key: "2100-01-01T00:00:00Z"}))
    assert not admit(NODE_POLICY, "UPDATE", removed, node, TENANT)[0]
    assert not admit(NODE_POLICY, "UPDATE", changed, node, TENANT)[0]
    assert not admit(NODE_POLICY, "UPDATE", node, removed, TENANT)[0], "setting it"
    assert admit(NODE_POLICY, "UPDATE", changed, node, OWN)[0]


def test_other_node_writes_pass() -> None:
    """Kubelet labels, the node lifecycle controller's taints, cordoning, unrelated annotations."""
    node = declared_node()
    for who, change in (
        (
            NODE_LIFECYCLE,
            lambda n: n["spec"]["taints"].append({"key": k.UNREACHABLE_TAINT, "effect": "NoExecute"}),
        ),
        (TENANT, lambda n: n["spec"].update(unschedulable=True)),
        (KUBELET, lambda n: n["metadata"]["labels"].update({"topology.kubernetes.io/zone": "us-east5-b"})),
        (TENANT, lambda n: n["metadata"]["annotations"].update({"example.com/note": "x"})),
        (TENANT, lambda n: n["metadata"].pop("annotations") and n["metadata"].update(annotations={})),
    ):
        after = edited(node, change)
        allowed = admit(NODE_POLICY, "UPDATE", after, node, who)[0]
        removes_state = after["metadata"]["annotations"] == {}
        assert allowed is not removes_state, (who["username"], after["metadata"].get("annotations"))


def test_a_node_may_register_without_the_state_but_not_with_it() -> None:
    assert admit(NODE_POLICY, "CREATE", node_obj("a-9", "a", ready="True", since=0), None, KUBELET)[0]
    assert not admit(NODE_POLICY, "CREATE", declared_node(), None, KUBELET)[0]
    assert admit(NODE_POLICY, "CREATE", declared_node(), None, OWN)[0]


def test_a_node_without_taints_or_annotations_evaluates_cleanly() -> None:
    bare = node_obj("a-0", "a", ready="True", since=0)
    del bare["spec"]["taints"]
    assert admit(NODE_POLICY, "UPDATE", bare, copy.deepcopy(bare), TENANT)[0]
    assert admit(NODE_POLICY, "CREATE", bare, None, TENANT)[0]


# --- JobSets ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", admission.JOBSET_STATE_ANNOTATIONS)
def test_a_tenant_cannot_forge_edit_or_clear_a_preemption_record(key: str) -> None:
    victim = victim_jobset()
    plain = jobset_obj("low", namespace="team-a")
    forged = edited(
        plain, lambda js: js["metadata"]["annotations"].update({key: victim["metadata"]["annotations"][key]})
    )
    for who in (TENANT, TEAM_SA, JOBSET_CONTROLLER):
        allowed, message = admit(JOBSET_POLICY, "UPDATE", forged, plain, who)
        assert not allowed and key in message
        assert not admit(JOBSET_POLICY, "CREATE", forged, None, who)[0], "created with a record"
        cleared = edited(victim, lambda js: js["metadata"]["annotations"].pop(key))
        assert not admit(JOBSET_POLICY, "UPDATE", cleared, victim, who)[0]
        future = edited(
            victim, lambda js: js["metadata"]["annotations"].update({key: "2100-01-01T00:00:00Z"})
        )
        assert not admit(JOBSET_POLICY, "UPDATE", future, victim, who)[0]


def test_the_controller_may_write_the_record() -> None:
    plain = jobset_obj("low", namespace="team-a")
    assert admit(JOBSET_POLICY, "UPDATE", victim_jobset(), plain, OWN)[0]


def test_tenants_keep_their_own_annotations_and_everything_else() -> None:
    victim = victim_jobset()
    for change in (
        lambda js: js["metadata"]["annotations"].update(
            {k.LAST_CHECKPOINT_ANNOTATION: "2030-01-01T01:00:00Z"}
        ),
        lambda js: js["metadata"]["annotations"].update({k.CHECKPOINT_INTERVAL_ANNOTATION: "1800"}),
        lambda js: js["metadata"]["annotations"].update({k.PREEMPTIBLE_ANNOTATION: "false"}),
        lambda js: js["metadata"]["annotations"].update(
            {k.CHECKPOINT_COMPLETED_AT_ANNOTATION: "2030-01-01T00:03:00Z"}
        ),
        lambda js: js["metadata"]["labels"].pop(k.OPT_IN_LABEL),
        lambda js: js["spec"].update(suspend=True),
    ):
        after = edited(victim, change)
        assert admit(JOBSET_POLICY, "UPDATE", after, victim, TENANT)[0]
    assert admit(JOBSET_POLICY, "CREATE", jobset_obj("new", namespace="team-a"), None, TENANT)[0]
    no_annotations = edited(
        jobset_obj("new", namespace="team-a"), lambda js: js["metadata"].pop("annotations")
    )
    assert admit(JOBSET_POLICY, "CREATE", no_annotations, None, TENANT)[0]


def test_deletes_are_not_matched() -> None:
    assert admit(JOBSET_POLICY, "DELETE", None, victim_jobset(), TENANT) == (True, "not matched")
    assert admit(NODE_POLICY, "DELETE", None, declared_node(), TENANT) == (True, "not matched")


def test_the_policies_only_name_keys_the_controller_writes() -> None:
    """Keys in the policies and the keys the core writes are the same lists."""
    assert set(admission.NODE_STATE_ANNOTATIONS) == set(k.NODE_STATE_ANNOTATIONS)
    for key in admission.JOBSET_STATE_ANNOTATIONS:
        assert key.startswith((f"{k.DOMAIN}/preempt", f"{k.DOMAIN}/checkpoint-"))
    assert set(k.CHECKPOINT_REQUEST_ANNOTATIONS) <= set(admission.JOBSET_STATE_ANNOTATIONS)
    tenant_keys = {
        k.PREEMPTIBLE_ANNOTATION,
        k.LAST_CHECKPOINT_ANNOTATION,
        k.CHECKPOINT_INTERVAL_ANNOTATION,
        k.CHECKPOINT_COMPLETED_AT_ANNOTATION,
    }
    assert tenant_keys.isdisjoint(admission.JOBSET_STATE_ANNOTATIONS)


def test_the_workload_answers_a_checkpoint_request_but_cannot_forge_one() -> None:
    """Only ``checkpoint-completed-at`` of the protocol is the workload's (core/maintenance.py)."""
    asked = victim_jobset()
    answer = edited(
        asked, lambda js: js["metadata"]["annotations"].update({k.CHECKPOINT_COMPLETED_AT_ANNOTATION: "x"})
    )
    for who in (TENANT, TEAM_SA):
        assert admit(JOBSET_POLICY, "UPDATE", answer, asked, who)[0]
        assert admit(JOBSET_POLICY, "UPDATE", asked, answer, who)[0], "and may clear it"
        moved = edited(
            answer,
            lambda js: js["metadata"]["annotations"].update(
                {k.CHECKPOINT_REQUESTED_AT_ANNOTATION: "2029-12-31T00:00:00Z"}
            ),
        )
        allowed, message = admit(JOBSET_POLICY, "UPDATE", moved, answer, who)
        assert not allowed and k.CHECKPOINT_REQUESTED_AT_ANNOTATION in message
