"""Built-in kinds through kubernetes-validate's strict schemas, plus the object-meta rules it lacks."""

from __future__ import annotations

import copy
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tpu_platform.schema import KUBERNETES_VERSION, SchemaValidator, check_object, validate_object


@pytest.fixture(scope="module")
def validator(tmp_path_factory: pytest.TempPathFactory) -> SchemaValidator:
    # Built-in kinds never need CRDs: point at an empty folder to prove it.
    return SchemaValidator(tmp_path_factory.mktemp("no-crds") / "missing")


LABELS = {"app.kubernetes.io/part-of": "tpu-platform"}
POD = {
    "metadata": {"labels": {"app": "hotswap"}},
    "spec": {
        "serviceAccountName": "hotswap",
        "containers": [
            {"name": "controller", "image": "us-docker.pkg.dev/p/r/hotswap:1", "args": ["--leader-elect"]}
        ],
    },
}

GOOD: list[dict[str, Any]] = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tpu-hotswap", "labels": LABELS}},
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high-priority-job"},
        "value": 2000000,
        "globalDefault": False,
        "preemptionPolicy": "PreemptLowerPriority",
        "description": "critical",
    },
    {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "hotswap", "namespace": "tpu-hotswap"},
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "tpu-platform:hotswap"},
        "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch", "patch"]}],
    },
    {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "hotswap", "namespace": "tpu-hotswap"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "hotswap"}}, "template": POD},
    },
    {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "hotswap-metrics", "namespace": "tpu-hotswap"},
        "spec": {
            "selector": {"app": "hotswap"},
            "ports": [{"name": "metrics", "port": 8080, "targetPort": "metrics"}],
        },
    },
    {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "hotswap-config", "namespace": "tpu-hotswap"},
        "data": {"config.yaml": "label: tpu-platform.dev/hotswap\n"},
    },
    {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "hotswap-leader", "namespace": "tpu-hotswap"},
        "spec": {"leaseDurationSeconds": 15},
    },
]


@pytest.mark.parametrize("obj", GOOD, ids=[o["kind"] for o in GOOD])
def test_good_core_objects_pass(validator: SchemaValidator, obj: dict[str, Any]) -> None:
    report = check_object(obj, validator)
    assert report.issues == [], report.describe()
    assert report.schema_source.startswith(f"Kubernetes {KUBERNETES_VERSION}")
    # The same verdict as kubernetes-validate itself.
    kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


def find(kind: str) -> dict[str, Any]:
    return copy.deepcopy(next(o for o in GOOD if o["kind"] == kind))


def test_every_problem_is_reported_not_only_the_first(validator: SchemaValidator) -> None:
    deployment = find("Deployment")
    deployment["spec"]["replica"] = 2
    deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = "long"
    deployment["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": "http"}]
    issues = validate_object(deployment, validator)
    assert {i.path for i in issues} == {
        "spec.replica",
        "spec.template.spec.terminationGracePeriodSeconds",
        "spec.template.spec.containers[0].ports[0].containerPort",
    }
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)


def test_unknown_field_is_rejected(validator: SchemaValidator) -> None:
    priority = find("PriorityClass")
    priority["preemption"] = "Never"
    assert [(i.path, i.message) for i in validate_object(priority, validator)] == [
        ("preemption", 'unknown field "preemption"')
    ]


@pytest.mark.parametrize(
    ("kind", "name", "fragment"),
    [
        ("Namespace", "tpu.hotswap", "RFC 1123 label"),
        ("Service", "1-metrics", "DNS-1035 label"),
        ("ConfigMap", "Hotswap_Config", "RFC 1123 subdomain"),
        ("ClusterRole", "a/b", "may not contain '/'"),
    ],
)
def test_names_follow_the_kinds_rule(validator: SchemaValidator, kind: str, name: str, fragment: str) -> None:
    obj = find(kind)
    obj["metadata"]["name"] = name
    issues = validate_object(obj, validator)
    assert [i.path for i in issues] == ["metadata.name"]
    assert fragment in issues[0].message


@pytest.mark.parametrize(
    ("key", "fragment"),
    [("a/b/c", "at most one '/'"), ("Example.com/team", "prefix part"), ("tpu-platform.dev/", "name part")],
)
def test_label_keys_are_qualified_names(validator: SchemaValidator, key: str, fragment: str) -> None:
    namespace = find("Namespace")
    namespace["metadata"]["labels"] = {key: "x"}
    issues = validate_object(namespace, validator)
    assert [i.path for i in issues] == [f'metadata.labels["{key}"]']
    assert fragment in issues[0].message


def test_colon_is_fine_in_a_cluster_role_name(validator: SchemaValidator) -> None:
    assert validate_object(find("ClusterRole"), validator) == []


def test_namespace_on_a_cluster_scoped_kind_is_dropped_with_a_warning(validator: SchemaValidator) -> None:
    priority = find("PriorityClass")
    priority["metadata"]["namespace"] = "default"
    issues = validate_object(priority, validator)
    assert [(i.path, i.severity) for i in issues] == [("metadata.namespace", "warning")]


def test_a_version_kubernetes_no_longer_serves_names_the_current_one(validator: SchemaValidator) -> None:
    pdb = {
        "apiVersion": "policy/v1beta1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "hotswap", "namespace": "tpu-hotswap"},
        "spec": {"maxUnavailable": 1},
    }
    issues = validate_object(pdb, validator)
    assert [(i.path, i.code) for i in issues] == [("apiVersion", "version")]
    assert "use policy/v1" in issues[0].message


def test_unknown_kind_in_a_builtin_group_is_an_error(validator: SchemaValidator) -> None:
    issues = validate_object(
        {"apiVersion": "apps/v1", "kind": "Deploymnet", "metadata": {"name": "x"}}, validator
    )
    assert [(i.code, i.severity) for i in issues] == [("unknown-kind", "error")]


def test_kinds_without_a_schema_are_reported_not_passed(tmp_path: Any) -> None:
    crds = tmp_path / "crds"
    crds.mkdir()
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "jobsets.jobset.x-k8s.io"},
        "spec": {
            "group": "jobset.x-k8s.io",
            "names": {"kind": "JobSet", "plural": "jobsets"},
            "versions": [],
        },
    }
    (crds / "jobsets.yaml").write_text(yaml.safe_dump(crd))
    monitoring = {
        "apiVersion": "monitoring.googleapis.com/v1",
        "kind": "PodMonitoring",
        "metadata": {"name": "hotswap", "namespace": "tpu-hotswap"},
        "spec": {"endpoints": [{"port": "metrics"}]},
    }
    issues = validate_object(monitoring, SchemaValidator(crds))
    assert [(i.code, i.severity) for i in issues] == [("no-schema", "warning")]
    assert "no schema for monitoring.googleapis.com/v1 PodMonitoring" in issues[0].message


def test_missing_api_version_or_kind(validator: SchemaValidator) -> None:
    issues = validate_object({"kind": "Namespace", "metadata": {"name": "x"}}, validator)
    assert [i.code for i in issues] == ["api-version"]
