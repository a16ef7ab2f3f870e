"""Kueue's Configuration, the pinned chart values, and the components under Pulumi's mocks."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from tpu_platform.kueue import jobset_values, kueue_configuration, kueue_values
from tpu_platform.kueue.configuration import controller_sizes
from tpu_platform.plan import load_stack_config, parse_stack_config
from tpu_platform.plan.stacks import stack_file

# Top-level fields of Kueue v0.19.2's apis/config/v1beta2 Configuration (ControllerManager inlined).
CONFIGURATION_FIELDS = {
    "apiVersion",
    "kind",
    "namespace",
    "manageJobsWithoutQueueName",
    "managedJobsNamespaceSelector",
    "internalCertManagement",
    "waitForPodsReady",
    "clientConnection",
    "integrations",
    "multiKueue",
    "fairSharing",
    "admissionFairSharing",
    "resources",
    "featureGates",
    "objectRetentionPolicies",
    "visibilityServer",
    "webhook",
    "leaderElection",
    "metrics",
    "health",
    "pprofBindAddress",
    "controller",
    "tls",
}


def cfg_of(stack: dict[str, Any], **kueue: Any) -> Any:
    config = copy.deepcopy(stack)
    if kueue:
        config["tpu-platform:kueue"] = kueue
    return parse_stack_config(config)


def test_configuration_defaults(stack: dict[str, Any]) -> None:
    doc = kueue_configuration(cfg_of(stack))
    assert doc["apiVersion"] == "config.kueue.x-k8s.io/v1beta2" and doc["kind"] == "Configuration"
    assert set(doc) <= CONFIGURATION_FIELDS
    assert "jobset.x-k8s.io/jobset" in doc["integrations"]["frameworks"]
    assert doc["fairSharing"] == {
        "preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
    }
    assert doc["waitForPodsReady"] == {"timeout": "30m", "blockAdmission": False}
    assert doc["metrics"]["enableClusterQueueResources"] is True
    assert doc["resources"] == {"quotaCheckStrategy": "IgnoreUndeclared"}
    assert doc["manageJobsWithoutQueueName"] is False
    assert "managedJobsNamespaceSelector" not in doc


def test_configuration_from_the_stack(stack: dict[str, Any]) -> None:
    stack["tpu-platform:teams"] = [{"name": "research", "quota": [{"topology": "4x4", "slices": 1}]}]
    cfg = cfg_of(
        stack,
        fairSharing={"preemptionStrategies": ["LessThanInitialShare"]},
        waitForPodsReady={
            "timeout": "10m",
            "recoveryTimeout": "5m",
            "blockAdmission": True,
            "requeuingStrategy": {"backoffLimitCount": 3},
        },
        integrations=["ray.io/rayjob", "jobset.x-k8s.io/jobset"],
        manageJobsWithoutQueueName=True,
        metrics={"enableClusterQueueResources": False},
        quotaCheckStrategy="BlockUndeclared",
    )
    doc = kueue_configuration(cfg)
    assert doc["fairSharing"] == {"preemptionStrategies": ["LessThanInitialShare"]}
    assert doc["waitForPodsReady"] == {
        "timeout": "10m",
        "blockAdmission": True,
        "recoveryTimeout": "5m",
        "requeuingStrategy": {
            "timestamp": "Eviction",
            "backoffLimitCount": 3,
            "backoffBaseSeconds": 60,
            "backoffMaxSeconds": 3600,
        },
    }
    assert doc["integrations"]["frameworks"] == ["batch/job", "jobset.x-k8s.io/jobset", "ray.io/rayjob"]
    assert doc["managedJobsNamespaceSelector"] == {
        "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["research"]}]
    }
    assert doc["metrics"]["enableClusterQueueResources"] is False
    assert doc["resources"]["quotaCheckStrategy"] == "BlockUndeclared"


def test_fair_sharing_off_removes_the_section(stack: dict[str, Any]) -> None:
    assert "fairSharing" not in kueue_configuration(cfg_of(stack, fairSharing={"enabled": False}))


def test_wait_for_pods_ready_off_uses_the_feature_gate(stack: dict[str, Any]) -> None:
    cfg = cfg_of(stack, waitForPodsReady={"enabled": False}, featureGates={"TopologyAwareScheduling": False})
    assert "waitForPodsReady" not in kueue_configuration(cfg)
    gates = kueue_values(cfg)["controllerManager"]["featureGates"]
    assert gates == [
        {"name": "DisableWaitForPodsReady", "enabled": True},
        {"name": "TopologyAwareScheduling", "enabled": False},
    ]


def test_kueue_values(stack: dict[str, Any]) -> None:
    cfg = cfg_of(stack)
    values = kueue_values(cfg)
    assert values["enableVisibilityAPF"] is False
    assert values["enablePrometheus"] is False
    manager = values["controllerManager"]["manager"]
    assert manager["image"] == {
        "repository": "registry.k8s.io/kueue/kueue",
        "tag": "v0.19.2",
        "pullPolicy": "IfNotPresent",
    }
    rendered = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    assert rendered == kueue_configuration(cfg)
    assert "internalCertManagement" not in rendered  # the chart fills it in with its service names


def test_jobset_values(stack: dict[str, Any]) -> None:
    values = jobset_values(cfg_of(stack))
    assert values["image"] == {
        "repository": "registry.k8s.io/jobset/jobset",
        "tag": "v0.12.0",
        "pullPolicy": "IfNotPresent",
    }
    assert values["controller"]["replicas"] == 1


def test_controllers_sized_for_the_fleet(stack: dict[str, Any]) -> None:
    small_kueue, _ = controller_sizes(cfg_of(stack))
    prod = parse_stack_config(load_stack_config(stack_file("prod")))
    prod_kueue, prod_jobset = controller_sizes(prod)
    assert small_kueue.replicas == 1 and prod_kueue.replicas == 2 and prod_jobset.replicas == 2
    assert prod_kueue.requests["memory"] != small_kueue.requests["memory"]
    assert kueue_values(prod)["controllerManager"]["podDisruptionBudget"] == {
        "enabled": True,
        "minAvailable": 1,
    }


def test_controller_overrides(stack: dict[str, Any]) -> None:
    cfg = cfg_of(stack, controller={"replicas": 3, "limits": {"memory": "6Gi"}})
    kueue, _ = controller_sizes(cfg)
    assert kueue.replicas == 3
    assert kueue.limits == {"cpu": "2", "memory": "6Gi"}


# --------------------------------------------------------------------------- components under mocks

KUEUE_CHART = "kubernetes:helm.sh/v4:Chart::tpu-kueue-kueue"
JOBSET_CHART = "kubernetes:helm.sh/v4:Chart::tpu-kueue-jobset"


@pytest.fixture
def queued_stack(stack: dict[str, Any]) -> dict[str, Any]:
    config = copy.deepcopy(stack)
    config["tpu-platform:cohorts"] = [{"name": "org"}, {"name": "ml", "parentName": "org"}]
    config["tpu-platform:teams"] = [
        {"name": "research", "cohortName": "ml", "quota": [{"topology": "4x4", "slices": 1}]},
        {
            "name": "applied",
            "cohortName": "ml",
            "namespaces": ["default"],
            "quota": [{"topology": "4x4", "slices": 1}],
        },
    ]
    return config


def deps(res: Any) -> set[str]:
    from tpu_platform.plan.harness import urn_label

    return {urn_label(d) for d in res.dependencies}


def test_every_kueue_object_waits_for_the_install(
    queued_stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    rendering = render_stack(queued_stack)
    kueue_objects = [r for r in rendering.resources if r.type.startswith("kubernetes:kueue.x-k8s.io/")]
    kinds = {r.type.rsplit(":", 1)[1] for r in kueue_objects}
    assert kinds == {"ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass"}
    for res in kueue_objects:
        assert {KUEUE_CHART, JOBSET_CHART} <= deps(res), res.name
        assert res.inputs["apiVersion"] == "kueue.x-k8s.io/v1beta2"


def test_in_cluster_resources_use_the_cluster_provider(
    queued_stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    rendering = render_stack(queued_stack)
    in_cluster = [
        r
        for r in rendering.resources
        if r.type.startswith("kubernetes:") and r.type != "pulumi:providers:kubernetes"
    ]
    assert len(in_cluster) > 10
    for res in in_cluster:
        assert res.provider is not None and res.provider == "pulumi:providers:kubernetes::tpu-cluster-k8s", (
            res.name
        )


def test_install_order(queued_stack: dict[str, Any], render_stack: Callable[..., Any]) -> None:
    rendering = render_stack(queued_stack)
    by_label = {f"{r.type}::{r.name}": r for r in rendering.resources}
    kueue = by_label[KUEUE_CHART]
    assert JOBSET_CHART in deps(kueue)
    assert "kubernetes:core/v1:Namespace::tpu-kueue-kueue-system" in deps(kueue)
    assert kueue.inputs["chart"] == "oci://registry.k8s.io/kueue/charts/kueue"
    assert kueue.inputs["version"] == "0.19.2"
    assert kueue.inputs["values"]["enableVisibilityAPF"] is False
    jobset = by_label[JOBSET_CHART]
    assert jobset.inputs["chart"] == "oci://registry.k8s.io/jobset/charts/jobset"
    assert jobset.inputs["version"] == "0.12.0"
    system_ns = by_label["kubernetes:core/v1:Namespace::tpu-kueue-jobset-system"]
    assert "gcp:container/nodePool:NodePool::tpu-cluster-system" in deps(system_ns)


def test_queue_dependencies(queued_stack: dict[str, Any], render_stack: Callable[..., Any]) -> None:
    rendering = render_stack(queued_stack)
    by_label = {f"{r.type}::{r.name}": r for r in rendering.resources}
    k = "kubernetes:kueue.x-k8s.io/v1beta2"
    cq = by_label[f"{k}:ClusterQueue::tpu-queues-cq-research-cq"]
    assert f"{k}:ResourceFlavor::tpu-queues-flavor-tpu-v6e-4x4" in deps(cq)
    assert f"{k}:Cohort::tpu-queues-cohort-ml" in deps(cq)
    assert cq.inputs["spec"]["cohortName"] == "ml"
    child = by_label[f"{k}:Cohort::tpu-queues-cohort-ml"]
    assert f"{k}:Cohort::tpu-queues-cohort-org" in deps(child)
    lq = by_label[f"{k}:LocalQueue::tpu-queues-lq-research-research-queue"]
    assert f"{k}:ClusterQueue::tpu-queues-cq-research-cq" in deps(lq)
    assert "kubernetes:core/v1:Namespace::tpu-queues-ns-research" in deps(lq)
    namespaces = {
        r.inputs["metadata"]["name"] for r in rendering.resources if r.type == "kubernetes:core/v1:Namespace"
    }
    assert namespaces == {"kueue-system", "jobset-system", "research"}  # never `default`


def test_workload_priority_class_value_is_rendered(
    queued_stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    rendering = render_stack(queued_stack)
    wpcs = {
        r.inputs["metadata"]["name"]: r.inputs
        for r in rendering.resources
        if r.type == "kubernetes:kueue.x-k8s.io/v1beta2:WorkloadPriorityClass"
    }
    assert {name: doc["value"] for name, doc in wpcs.items()} == {
        "low-priority-job": 1_000_000,
        "high-priority-job": 2_000_000,
    }
    assert all("description" in doc and "spec" not in doc for doc in wpcs.values())
    pcs = {
        r.inputs["metadata"]["name"]: r.inputs["value"]
        for r in rendering.resources
        if r.type == "kubernetes:scheduling.k8s.io/v1:PriorityClass"
    }
    assert pcs == {"low-priority-job": 1_000_000, "high-priority-job": 2_000_000}


def test_adopted_cluster_installs_without_a_system_pool(
    queued_stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    queued_stack["tpu-platform:cluster"] = {"name": "existing", "mode": "adopt"}
    rendering = render_stack(queued_stack)
    jobset_ns = next(r for r in rendering.resources if r.name == "tpu-kueue-jobset-system")
    assert deps(jobset_ns) == set()
    assert any(r.type == "kubernetes:helm.sh/v4:Chart" for r in rendering.resources)
