"""The policy pack's pure rules, on hand-built resources: what passes, what fails, and what it says."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tpu_platform.constants import OVERCOMMIT_ANNOTATION
from tpu_platform.policy import UNKNOWN, Resource, Stack, evaluate, kueue_rules, pools
from tpu_platform.policy import rules as r

URN = "urn:pulumi:dev::tpu-platform::"
POOL = "gcp:container/nodePool:NodePool"
CHART = "kubernetes:helm.sh/v4:Chart"
KUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:"
V6E_4X4 = {
    "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
    "cloud.google.com/gke-tpu-topology": "4x4",
}


def res(
    type_: str,
    name: str,
    props: dict[str, Any] | None = None,
    parent: Resource | None = None,
    deps: tuple[Resource, ...] = (),
) -> Resource:
    chain = f"{parent.urn.split('::')[2]}${type_}" if parent else type_
    return Resource(
        urn=f"{URN}{chain}::{name}",
        type=type_,
        name=name,
        props=props or {},
        parent=parent.urn if parent else None,
        dependencies=tuple(d.urn for d in deps),
    )


def tpu_pool(name: str, nodes: int = 4, machine: str = "ct6e-standard-4t", **extra: Any) -> Resource:
    props: dict[str, Any] = {
        "name": name,
        "nodeCount": nodes,
        "nodeLocations": ["us-east5-b"],
        "nodeConfig": {"machineType": machine, "labels": {"tpu-platform.dev/slice-group": "train"}},
        "placementPolicy": {"type": "COMPACT", "tpuTopology": "4x4"},
        "management": {"autoRepair": True, "autoUpgrade": True},
    }
    props.update(extra)
    return res(POOL, f"tpu-{name}", props)


def kueue_install() -> Resource:
    return res(CHART, "tpu-kueue-kueue", {"chart": "oci://registry.k8s.io/kueue/charts/kueue"})


def flavor(name: str = "tpu-v6e-4x4", labels: dict[str, str] | None = None, deps: tuple[Resource, ...] = ()):
    body = {"metadata": {"name": name}, "spec": {"nodeLabels": V6E_4X4 if labels is None else labels}}
    return res(KUEUE + "ResourceFlavor", f"flavor-{name}", body, deps=deps)


def cluster_queue(
    name: str,
    quota: Any,
    flavor_name: str = "tpu-v6e-4x4",
    deps: tuple[Resource, ...] = (),
    annotations: dict[str, str] | None = None,
) -> Resource:
    metadata: dict[str, Any] = {"name": name}
    if annotations:
        metadata["annotations"] = annotations
    spec = {
        "resourceGroups": [
            {
                "coveredResources": ["google.com/tpu"],
                "flavors": [
                    {"name": flavor_name, "resources": [{"name": "google.com/tpu", "nominalQuota": quota}]}
                ],
            }
        ]
    }
    return res(KUEUE + "ClusterQueue", f"cq-{name}", {"metadata": metadata, "spec": spec}, deps=deps)


def messages(resources: list[Resource], policy: str, config: dict[str, Any] | None = None) -> list[str]:
    return [v.message for v in evaluate(resources, config) if v.policy == policy]


# --- kueue-after-install -------------------------------------------------------------------


def test_kueue_objects_that_depend_on_the_install_pass() -> None:
    install = kueue_install()
    rf = flavor(deps=(install,))
    cq = cluster_queue("team-a", 16, deps=(install, rf))
    assert messages([install, rf, cq, tpu_pool("p")], "kueue-after-install") == []


def test_a_transitive_dependency_on_the_install_is_enough() -> None:
    install = kueue_install()
    cq = cluster_queue("team-a", 16, deps=(install,))
    lq = res(
        KUEUE + "LocalQueue",
        "lq",
        {"metadata": {"name": "q"}, "spec": {"clusterQueue": "team-a"}},
        deps=(cq,),
    )
    assert messages([install, cq, lq], "kueue-after-install") == []


def test_children_of_the_install_count_as_the_install() -> None:
    install = kueue_install()
    webhook = res("kubernetes:apps/v1:Deployment", "kueue-controller-manager", parent=install)
    rf = flavor(deps=(webhook,))
    assert messages([install, webhook, rf], "kueue-after-install") == []


def test_the_install_is_found_by_chart_or_by_name() -> None:
    by_name = res(CHART, "tpu-kueue-kueue")
    assert kueue_rules.install_identity(by_name) == "kueue"
    assert kueue_rules.install_identity(res(CHART, "tpu-kueue-jobset")) == "jobset"
    assert (
        kueue_rules.install_identity(
            res(CHART, "deps", {"chart": "oci://registry.k8s.io/jobset/charts/jobset"})
        )
        == "jobset"
    )
    assert kueue_rules.install_identity(res("kubernetes:core/v1:Namespace", "kueue-system")) is None
    assert messages([by_name, flavor(deps=(by_name,))], "kueue-after-install") == []


def test_a_kueue_object_without_the_install_dependency_is_reported() -> None:
    install = kueue_install()
    cq = cluster_queue("team-a", 16)
    found = messages([install, cq], "kueue-after-install")
    assert len(found) == 1
    assert "ClusterQueue 'team-a' (resource 'cq-team-a') does not depend on the Kueue install" in found[0]
    assert "depends_on" in found[0]


def test_other_objects_of_the_install_component_are_not_the_kueue_install() -> None:
    component = res("tpu-platform:kueue:Install", "tpu-kueue")
    kueue = res(CHART, "tpu-kueue-kueue", parent=component)
    namespace = res("kubernetes:core/v1:Namespace", "tpu-kueue-kueue-system", parent=component)
    jobset = res(CHART, "tpu-kueue-jobset", parent=component)
    early = [flavor("a", deps=(namespace,)), flavor("b", deps=(jobset,))]
    found = messages([component, kueue, namespace, jobset, *early], "kueue-after-install")
    assert len(found) == 2
    assert all("pass depends_on=[the Kueue install]" in m for m in found)


def test_a_stack_without_any_kueue_install_says_so() -> None:
    found = messages([flavor()], "kueue-after-install")
    assert len(found) == 1
    assert "has no Kueue install" in found[0]


# --- tpu-quota-within-capacity --------------------------------------------------------------


def quota_stack(*queues: Resource, pools: int = 2) -> list[Resource]:
    install = kueue_install()
    return [install, flavor(deps=(install,)), *[tpu_pool(f"p-{i}") for i in range(pools)], *queues]


def test_quotas_that_add_up_to_the_pools_chips_pass() -> None:
    stack = quota_stack(cluster_queue("a", 16), cluster_queue("b", "16"))
    assert messages(stack, "tpu-quota-within-capacity") == []


def test_quotas_beyond_the_pools_chips_are_reported_with_the_numbers() -> None:
    stack = quota_stack(cluster_queue("a", 16), cluster_queue("b", 32))
    found = messages(stack, "tpu-quota-within-capacity")
    assert len(found) == 1
    text = found[0]
    assert "flavor 'tpu-v6e-4x4'" in text
    assert "quota 48" in text
    assert "32 chips" in text
    assert "p-0, p-1" in text
    assert "ClusterQueue 'a' (resource 'cq-a') (16)" in text
    assert "tpu-platform.dev/tpu-overcommit" in text


def test_an_overcommit_annotation_takes_that_queue_out_of_the_sum() -> None:
    best_effort = cluster_queue("spare", 64, annotations={OVERCOMMIT_ANNOTATION: "true"})
    stack = quota_stack(cluster_queue("a", 32), best_effort)
    assert messages(stack, "tpu-quota-within-capacity") == []


def test_overcommit_flavors_in_the_policy_config_are_exempt() -> None:
    stack = quota_stack(cluster_queue("a", 64))
    config = {"tpu-quota-within-capacity": {"overcommitFlavors": ["tpu-v6e-4x4"]}}
    assert messages(stack, "tpu-quota-within-capacity", config) == []
    assert len(messages(stack, "tpu-quota-within-capacity")) == 1


def test_cohort_quota_counts_too() -> None:
    cohort = Resource(
        f"{URN}{KUEUE}Cohort::org",
        KUEUE + "Cohort",
        "org",
        {"metadata": {"name": "org"}, "spec": cluster_queue("x", 16).props["spec"]},
    )
    stack = quota_stack(cluster_queue("a", 32), cohort)
    assert "quota 48" in messages(stack, "tpu-quota-within-capacity")[0]


def test_a_flavor_selects_only_the_pools_whose_nodes_carry_its_labels() -> None:
    other = tpu_pool("big", nodes=16, placementPolicy={"type": "COMPACT", "tpuTopology": "8x8"})
    stack = [*quota_stack(cluster_queue("a", 48)), other]
    found = messages(stack, "tpu-quota-within-capacity")
    assert len(found) == 1
    assert "big" not in found[0]


def test_autoscaled_pools_count_their_maximum() -> None:
    flex = tpu_pool(
        "flex",
        nodes=0,
        autoscaling={"totalMinNodeCount": 0, "totalMaxNodeCount": 4, "locationPolicy": "ANY"},
        nodeCount=None,
        initialNodeCount=0,
    )
    install = kueue_install()
    stack = [install, flavor(deps=(install,)), flex, cluster_queue("a", 16)]
    assert messages(stack, "tpu-quota-within-capacity") == []
    assert len(messages([*stack, cluster_queue("b", 1)], "tpu-quota-within-capacity")) == 1


def test_quota_for_an_undeclared_flavor_is_reported() -> None:
    stack = quota_stack(cluster_queue("a", 16, flavor_name="tpu-v6e-8x8"))
    found = messages(stack, "tpu-quota-within-capacity")
    assert len(found) == 1
    assert "no ResourceFlavor 'tpu-v6e-8x8' is declared" in found[0]


def test_a_flavor_matching_no_pool_has_no_capacity() -> None:
    install = kueue_install()
    stack = [
        install,
        flavor(labels={"cloud.google.com/gke-tpu-topology": "16x16"}),
        tpu_pool("p"),
        cluster_queue("a", 1),
    ]
    assert "(none)" in messages(stack, "tpu-quota-within-capacity")[0]


def test_a_malformed_quota_is_reported() -> None:
    found = messages(quota_stack(cluster_queue("a", "sixteen")), "tpu-quota-within-capacity")
    assert "'sixteen'" in found[0]
    assert "not a Kubernetes quantity" in found[0]


def test_unknown_values_skip_the_check_instead_of_guessing() -> None:
    stack = quota_stack(cluster_queue("a", 64))
    unknown_pool = tpu_pool("p-0", nodes=UNKNOWN)  # type: ignore[arg-type]
    stack = [unknown_pool if x.name == "tpu-p-0" else x for x in stack]
    assert messages(stack, "tpu-quota-within-capacity") == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [(16, 16.0), ("16", 16.0), ("1k", 1000.0), ("2Ki", 2048.0), ("500m", 0.5), (True, None), ("x", None)],
)
def test_parse_quantity(value: Any, expected: float | None) -> None:
    assert kueue_rules.parse_quantity(value) == expected


@pytest.mark.parametrize(
    ("machine", "nodes", "chips"),
    [
        ("ct6e-standard-4t", 4, 16),
        ("ct6e-standard-8t", 1, 8),
        ("ct6e-standard-1t", 1, 1),
        ("e2-standard-8", 2, None),
    ],
)
def test_pool_chips_from_the_machine_type(machine: str, nodes: int, chips: int | None) -> None:
    assert pools.pool_chips(tpu_pool("p", nodes=nodes, machine=machine)) == chips


def test_single_host_v6e_pools_get_gkes_topology_label() -> None:
    pool = tpu_pool("p", nodes=1, machine="ct6e-standard-8t", placementPolicy=None)
    labels = pools.pool_node_labels(pool)
    assert labels["cloud.google.com/gke-tpu-topology"] == "2x4"
    assert labels["node.kubernetes.io/instance-type"] == "ct6e-standard-8t"
    assert labels["cloud.google.com/gke-nodepool"] == "p"


# --- tpu-pool-auto-repair -------------------------------------------------------------------


def test_tpu_pools_with_auto_repair_pass() -> None:
    assert messages([tpu_pool("p")], "tpu-pool-auto-repair") == []


def test_a_tpu_pool_without_auto_repair_is_reported() -> None:
    pool = tpu_pool("p", management={"autoRepair": False, "autoUpgrade": True})
    found = messages([pool], "tpu-pool-auto-repair")
    assert found == [
        "TPU node pool 'p' has auto-repair off: a failed TPU VM would stay broken and hold its whole "
        "slice. Set management.autoRepair=true (only flex-start pools, nodeConfig.flexStart=true, run "
        "without it)"
    ]


def test_a_tpu_pool_with_no_management_block_is_reported() -> None:
    pool = tpu_pool("p", management=None)
    assert "auto-repair not set" in messages([pool], "tpu-pool-auto-repair")[0]


def test_flex_start_pools_may_run_without_auto_repair() -> None:
    pool = tpu_pool(
        "p",
        management={"autoRepair": False},
        nodeConfig={"machineType": "ct6e-standard-4t", "flexStart": True},
    )
    assert messages([pool], "tpu-pool-auto-repair") == []


def test_cpu_pools_are_not_tpu_pools() -> None:
    system = res(
        POOL, "system", {"nodeConfig": {"machineType": "e2-standard-8"}, "management": {"autoRepair": False}}
    )
    assert messages([system], "tpu-pool-auto-repair") == []


# --- hotswap-controller-hardened ------------------------------------------------------------

HARDENED: dict[str, Any] = {
    "metadata": {"name": "hotswap", "labels": {"app.kubernetes.io/name": "hotswap-controller"}},
    "spec": {
        "template": {
            "metadata": {"labels": {"app.kubernetes.io/name": "hotswap-controller"}},
            "spec": {
                "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                "containers": [
                    {
                        "name": "controller",
                        "securityContext": {
                            "readOnlyRootFilesystem": True,
                            "allowPrivilegeEscalation": False,
                            "capabilities": {"drop": ["ALL"]},
                        },
                        "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}},
                        "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8081}},
                        "readinessProbe": {"httpGet": {"path": "/readyz", "port": 8081}},
                    }
                ],
            },
        }
    },
}


def controller(mutate: Any = None) -> Resource:
    body = copy.deepcopy(HARDENED)
    if mutate is not None:
        mutate(body)
    return res("kubernetes:apps/v1:Deployment", "hotswap", body)


def _container(body: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = body["spec"]["template"]["spec"]["containers"][0]
    return container


def test_a_hardened_controller_passes() -> None:
    assert messages([controller()], "hotswap-controller-hardened") == []


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            lambda b: b["spec"]["template"]["spec"]["securityContext"].pop("runAsNonRoot"),
            "runAsNonRoot must be true",
        ),
        (
            lambda b: b["spec"]["template"]["spec"]["securityContext"].update(
                seccompProfile={"type": "Unconfined"}
            ),
            "seccompProfile.type must be RuntimeDefault",
        ),
        (
            lambda b: _container(b)["securityContext"].update(readOnlyRootFilesystem=False),
            "readOnlyRootFilesystem must be true",
        ),
        (
            lambda b: _container(b)["securityContext"].pop("allowPrivilegeEscalation"),
            "allowPrivilegeEscalation must be false",
        ),
        (
            lambda b: _container(b)["securityContext"].update(capabilities={"drop": ["NET_RAW"]}),
            "drop must include ALL",
        ),
        (
            lambda b: _container(b)["securityContext"]["capabilities"].update(add=["NET_ADMIN"]),
            "capabilities.add must be empty",
        ),
        (lambda b: _container(b)["resources"]["limits"].pop("memory"), "resources.limits must set memory"),
        (lambda b: _container(b).pop("resources"), "resources.limits must set memory"),
        (lambda b: _container(b).pop("livenessProbe"), "livenessProbe must be set"),
        (lambda b: _container(b).pop("readinessProbe"), "readinessProbe must be set"),
        (lambda b: b["spec"]["template"]["spec"].update(hostNetwork=True), "hostNetwork must not be true"),
        (lambda b: _container(b)["securityContext"].update(privileged=True), "privileged must not be true"),
    ],
)
def test_each_missing_hardening_is_named(mutate: Any, expected: str) -> None:
    found = messages([controller(mutate)], "hotswap-controller-hardened")
    assert len(found) == 1, found
    assert found[0].startswith(
        "hotswap controller Deployment 'hotswap' is not hardened: containers[0] 'controller'"
    ) or ("spec.template.spec" in found[0])
    assert expected in found[0]


def test_a_cpu_limit_is_required_only_when_configured() -> None:
    def no_cpu_limit(body: dict[str, Any]) -> None:
        _container(body)["resources"] = {"requests": {"cpu": "250m"}, "limits": {"memory": "1Gi"}}

    assert messages([controller(no_cpu_limit)], "hotswap-controller-hardened") == []
    strict = {"hotswap-controller-hardened": {"requiredLimits": ["cpu", "memory"]}}
    found = messages([controller(no_cpu_limit)], "hotswap-controller-hardened", strict)
    assert len(found) == 1
    assert "resources.limits must set cpu" in found[0]


def test_a_container_may_override_the_pod_security_context() -> None:
    def root_container(body: dict[str, Any]) -> None:
        _container(body)["securityContext"]["runAsNonRoot"] = False

    assert (
        "runAsNonRoot must be true"
        in messages([controller(root_container)], "hotswap-controller-hardened")[0]
    )


def test_init_containers_are_hardened_but_need_no_probes() -> None:
    def add_init(body: dict[str, Any]) -> None:
        init = copy.deepcopy(_container(body))
        init.pop("livenessProbe")
        init.pop("readinessProbe")
        body["spec"]["template"]["spec"]["initContainers"] = [init]

    assert messages([controller(add_init)], "hotswap-controller-hardened") == []

    def writable_init(body: dict[str, Any]) -> None:
        add_init(body)
        body["spec"]["template"]["spec"]["initContainers"][0]["securityContext"]["readOnlyRootFilesystem"] = (
            False
        )

    found = messages([controller(writable_init)], "hotswap-controller-hardened")
    assert len(found) == 1
    assert "initContainers[0]" in found[0]


def test_a_deployment_inside_a_hotswap_component_is_the_controller_whatever_its_labels() -> None:
    component = res("tpu-platform:hotswap:Controller", "tpu-hotswap")

    def unlabelled(body: dict[str, Any]) -> None:
        body["metadata"]["labels"] = {}
        body["spec"]["template"]["metadata"]["labels"] = {}
        _container(body).pop("livenessProbe")

    deployment = controller(unlabelled)
    inside = res(deployment.type, deployment.name, dict(deployment.props), parent=component)
    found = messages([component, inside], "hotswap-controller-hardened")
    assert len(found) == 1
    assert "livenessProbe must be set" in found[0]
    assert messages([deployment], "hotswap-controller-hardened") == []


def test_other_deployments_are_not_the_controller() -> None:
    def relabel(body: dict[str, Any]) -> None:
        body["metadata"]["labels"] = {"app.kubernetes.io/name": "something-else"}
        body["spec"]["template"]["metadata"]["labels"] = {}
        body["spec"]["template"]["spec"] = {"containers": [{"name": "x"}]}

    assert messages([controller(relabel)], "hotswap-controller-hardened") == []
    config = {"hotswap-controller-hardened": {"controllerName": "something-else"}}
    assert messages([controller(relabel)], "hotswap-controller-hardened", config)


# --- RBAC -----------------------------------------------------------------------------------

RBAC = "kubernetes:rbac.authorization.k8s.io/v1:"
# The hotswap controller's least-privilege rules (shared/reference/failure-model.md).
HOTSWAP_RULES = [
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch", "patch"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "delete"]},
    {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]},
    {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": ["get", "list", "watch", "patch"]},
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "list", "watch"]},
    {
        "apiGroups": ["kueue.x-k8s.io"],
        "resources": ["workloads", "clusterqueues"],
        "verbs": ["get", "list", "watch"],
    },
    {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]},
]


def role(rules_: list[dict[str, Any]], kind: str = "ClusterRole", parent: Resource | None = None) -> Resource:
    return res(RBAC + kind, "hotswap", {"metadata": {"name": "hotswap"}, "rules": rules_}, parent=parent)


def test_the_hotswap_least_privilege_role_passes_every_rbac_rule() -> None:
    stack = [
        role(HOTSWAP_RULES),
        role([{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"]}], "Role"),
    ]
    assert messages(stack, "no-rbac-secrets") == []
    assert messages(stack, "no-cluster-admin") == []


@pytest.mark.parametrize(
    "rule",
    [
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
        {"apiGroups": ["*"], "resources": ["secrets"], "verbs": ["list"]},
        {"apiGroups": [""], "resources": ["*"], "verbs": ["get"]},
        {"resources": ["secrets"], "verbs": ["watch"]},
    ],
)
def test_roles_granting_secrets_are_reported(rule: dict[str, Any]) -> None:
    found = messages([role([*HOTSWAP_RULES, rule])], "no-rbac-secrets")
    assert len(found) == 1
    assert f"rules[{len(HOTSWAP_RULES)}] grants" in found[0]
    assert "on secrets" in found[0]


def test_reading_one_named_secret_is_allowed_and_nothing_more() -> None:
    named = {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["scrape-token"]}
    assert messages([role([{**named, "verbs": ["get", "list", "watch"]}], "Role")], "no-rbac-secrets") == []
    for verbs in (["get", "update"], ["*"], ["create"]):
        assert len(messages([role([{**named, "verbs": verbs}], "Role")], "no-rbac-secrets")) == 1
    wildcard = {**named, "resourceNames": ["*"], "verbs": ["get"]}
    assert len(messages([role([wildcard], "Role")], "no-rbac-secrets")) == 1
    unnamed_and_more = {**named, "resources": ["secrets", "configmaps"], "verbs": ["get"]}
    assert len(messages([role([unnamed_and_more], "Role")], "no-rbac-secrets")) == 1


def test_wildcards_of_another_api_group_do_not_reach_secrets() -> None:
    assert (
        messages([role([{"apiGroups": ["apps"], "resources": ["*"], "verbs": ["get"]}])], "no-rbac-secrets")
        == []
    )


def test_upstream_installs_keep_their_own_rbac_unless_configured_otherwise() -> None:
    chart = kueue_install()
    upstream = role([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "update"]}], parent=chart)
    assert messages([chart, upstream], "no-rbac-secrets") == []
    strict: dict[str, Any] = {"no-rbac-secrets": {"thirdPartyCharts": []}}
    assert len(messages([chart, upstream], "no-rbac-secrets", strict)) == 1


@pytest.mark.parametrize("kind", ["ClusterRoleBinding", "RoleBinding"])
def test_bindings_to_cluster_admin_are_reported(kind: str) -> None:
    binding = res(
        RBAC + kind,
        "admin",
        {
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "cluster-admin",
            }
        },
    )
    found = messages([binding], "no-cluster-admin")
    assert found == [
        f"{kind} 'admin' binds ClusterRole cluster-admin; grant the least privilege the subject needs "
        "with its own Role or ClusterRole instead"
    ]


def test_bindings_to_other_roles_pass() -> None:
    binding = res(
        RBAC + "ClusterRoleBinding", "hotswap", {"roleRef": {"kind": "ClusterRole", "name": "hotswap"}}
    )
    assert messages([binding], "no-cluster-admin") == []


def test_a_role_granting_everything_is_cluster_admin_by_another_name() -> None:
    found = messages([role([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}])], "no-cluster-admin")
    assert len(found) == 1
    assert "every verb on every resource" in found[0]


# --- the catalogue --------------------------------------------------------------------------


def test_every_rule_is_named_once_and_has_exactly_one_kind_of_check() -> None:
    names = [rule.name for rule in r.RULES]
    assert len(names) == len(set(names))
    for rule in r.RULES:
        assert (rule.resource_check is None) != (rule.stack_check is None), rule.name


def test_violations_carry_the_offending_resource() -> None:
    pool = tpu_pool("p", management={"autoRepair": False})
    (violation,) = evaluate(Stack([pool]))
    assert violation.urn == pool.urn
    assert str(violation).startswith("[tpu-pool-auto-repair] TPU node pool 'p'")
