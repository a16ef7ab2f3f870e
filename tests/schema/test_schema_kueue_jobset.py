"""Kueue v0.19.2 and JobSet v0.12.0 objects against their real CRDs: good ones pass with their
CEL rules really evaluated, and each kind of mistake is caught where the API server would catch it."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tpu_platform.schema import CrdsUnavailable, SchemaReport, SchemaValidator, check_object

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "jobsets"
KUEUE = "kueue.x-k8s.io/v1beta2"
JOBSET = "jobset.x-k8s.io/v1alpha2"


@pytest.fixture(scope="module")
def validator() -> SchemaValidator:
    checker = SchemaValidator()
    try:
        checker.catalog  # noqa: B018 - finds the CRD folder or says why not
    except CrdsUnavailable as err:
        pytest.skip(f"Kueue/JobSet CRDs unavailable: {err}")
    return checker


def meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    return {"name": name, **({"namespace": namespace} if namespace else {})}


def container() -> dict[str, Any]:
    return {"name": "main", "image": "us-docker.pkg.dev/your-project/app/app:1"}


GOOD: dict[str, dict[str, Any]] = {
    "ResourceFlavor": {
        "apiVersion": KUEUE,
        "kind": "ResourceFlavor",
        "metadata": meta("tpu-v6e-4x4"),
        "spec": {
            "nodeLabels": {
                "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
                "cloud.google.com/gke-tpu-topology": "4x4",
            },
            "tolerations": [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}],
        },
    },
    "ClusterQueue": {
        "apiVersion": KUEUE,
        "kind": "ClusterQueue",
        "metadata": meta("research-cq"),
        "spec": {
            "cohortName": "research",
            "namespaceSelector": {},
            "queueingStrategy": "BestEffortFIFO",
            "flavorFungibility": {
                "whenCanBorrow": "TryNextFlavor",
                "whenCanPreempt": "TryNextFlavor",
                "preference": "PreemptionOverBorrowing",
            },
            "preemption": {
                "withinClusterQueue": "LowerPriority",
                "reclaimWithinCohort": "Any",
                "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 1000000},
            },
            "resourceGroups": [
                {
                    "coveredResources": ["google.com/tpu"],
                    "flavors": [
                        {
                            "name": "tpu-v6e-4x4",
                            "resources": [
                                {"name": "google.com/tpu", "nominalQuota": 32, "borrowingLimit": 16}
                            ],
                        }
                    ],
                }
            ],
        },
    },
    "LocalQueue": {
        "apiVersion": KUEUE,
        "kind": "LocalQueue",
        "metadata": meta("research-queue", "research"),
        "spec": {"clusterQueue": "research-cq", "stopPolicy": "None"},
    },
    "Cohort": {
        "apiVersion": KUEUE,
        "kind": "Cohort",
        "metadata": meta("research"),
        "spec": {
            "parentName": "org",
            "fairSharing": {"weight": 2},
            "resourceGroups": [
                {
                    "coveredResources": ["google.com/tpu"],
                    "flavors": [
                        {
                            "name": "tpu-v6e-4x4",
                            "resources": [{"name": "google.com/tpu", "nominalQuota": "16"}],
                        }
                    ],
                }
            ],
        },
    },
    "Topology": {
        "apiVersion": KUEUE,
        "kind": "Topology",
        "metadata": meta("tpu"),
        "spec": {
            "levels": [
                {"nodeLabel": "cloud.google.com/gke-nodepool"},
                {"nodeLabel": "kubernetes.io/hostname"},
            ]
        },
    },
    "WorkloadPriorityClass": {
        "apiVersion": KUEUE,
        "kind": "WorkloadPriorityClass",
        "metadata": meta("high-priority-job"),
        "value": 2000000,
        "description": "critical training",
    },
    "Workload": {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "metadata": meta("jobset-high-jax-trillium", "default"),
        "spec": {
            "queueName": "default-queue",
            "podSets": [
                {
                    "name": "slice",
                    "count": 8,
                    "minCount": 4,
                    "template": {"spec": {"containers": [container()]}},
                }
            ],
        },
    },
}

# Rules that must really run (not be skipped) on each good object.
RULES_THAT_RUN: dict[str, set[str]] = {
    "ResourceFlavor": {"self.all(x, !has(x.key) ? x.operator == 'Exists' : true)"},
    "ClusterQueue": {
        "self.flavors.all(x, size(x.resources) == size(self.coveredResources))",
        "!(self.reclaimWithinCohort == 'Never' && has(self.borrowWithinCohort) && "
        " self.borrowWithinCohort.policy != 'Never')",
    },
    "Cohort": {"self.flavors.all(x, size(x.resources) == size(self.coveredResources))"},
    "Topology": {"size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0"},
    "Workload": {"has(self.minCount) ? self.minCount <= self.count : true"},
}


def assert_clean(report: SchemaReport) -> None:
    assert report.issues == [], report.describe()


@pytest.mark.parametrize("kind", sorted(GOOD))
def test_good_kueue_objects_pass_with_their_rules_evaluated(validator: SchemaValidator, kind: str) -> None:
    report = check_object(GOOD[kind], validator)
    assert_clean(report)
    assert report.schema_source.endswith(" v1beta2")
    passed = {o.rule for o in report.cel if o.status == "passed"}
    assert RULES_THAT_RUN.get(kind, set()) <= passed, report.describe()
    assert report.cel_count("not-evaluated") == 0


@pytest.mark.parametrize("name", ["low-jax-trillium", "high-jax-trillium"])
def test_corrected_example_jobsets_pass(validator: SchemaValidator, name: str) -> None:
    jobset = yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())
    report = check_object(jobset, validator)
    assert_clean(report)
    assert report.cel_evaluated >= 1
    # failurePolicy is immutable: a transition rule, visible as skipped.
    assert any(o.path == "spec.failurePolicy" and o.status == "transition" for o in report.cel)


def good(kind: str) -> dict[str, Any]:
    return copy.deepcopy(GOOD[kind])


def example_jobset() -> dict[str, Any]:
    return yaml.safe_load((EXAMPLES / "high-jax-trillium.yaml").read_text())


def _set(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    target: Any = obj
    parts = path.split(".")
    for part in parts[:-1]:
        target = target[int(part)] if isinstance(target, list) else target[part]
    if isinstance(target, list):
        target[int(parts[-1])] = value
    else:
        target[parts[-1]] = value
    return obj


Mutation = Callable[[], dict[str, Any]]

UNKNOWN_FIELDS: list[tuple[str, Mutation, str]] = [
    # v1beta1 spelled the cohort field `cohort`; v1beta2 renamed it `cohortName`.
    ("ClusterQueue", lambda: _set(good("ClusterQueue"), "spec.cohort", "research"), "spec.cohort"),
    # The seed's field that exists in no Kueue version.
    (
        "ClusterQueue",
        lambda: _set(good("ClusterQueue"), "spec.preemption.reclaimOutOfCohort", {"enable": True}),
        "spec.preemption.reclaimOutOfCohort",
    ),
    ("ResourceFlavor", lambda: _set(good("ResourceFlavor"), "spec.nodeLabel", {"a": "b"}), "spec.nodeLabel"),
    ("LocalQueue", lambda: _set(good("LocalQueue"), "spec.queue", "x"), "spec.queue"),
    ("Cohort", lambda: _set(good("Cohort"), "spec.parent", "org"), "spec.parent"),
    ("Topology", lambda: _set(good("Topology"), "spec.levels.0.label", "x"), "spec.levels[0].label"),
    ("WorkloadPriorityClass", lambda: _set(good("WorkloadPriorityClass"), "spec", {"value": 1}), "spec"),
    ("Workload", lambda: _set(good("Workload"), "spec.queue", "q"), "spec.queue"),
    (
        "JobSet",
        lambda: _set(example_jobset(), "spec.replicatedJobs.0.replica", 2),
        "spec.replicatedJobs[0].replica",
    ),
    ("JobSet", lambda: _set(example_jobset(), "metadata.label", {}), "metadata.label"),
    (
        "JobSet",
        lambda: _set(example_jobset(), "spec.replicatedJobs.0.template.spec.template.spec.nodeSelectors", {}),
        "spec.replicatedJobs[0].template.spec.template.spec.nodeSelectors",
    ),
]


@pytest.mark.parametrize(
    ("kind", "make", "path"), UNKNOWN_FIELDS, ids=[f"{k}:{p}" for k, _, p in UNKNOWN_FIELDS]
)
def test_unknown_fields_are_rejected(
    validator: SchemaValidator, kind: str, make: Mutation, path: str
) -> None:
    report = check_object(make(), validator)
    assert [(i.path, i.code) for i in report.errors] == [(path, "unknown-field")], report.describe()


CEL_VIOLATIONS: list[tuple[str, Mutation, str, str]] = [
    (
        "ClusterQueue",
        lambda: _set(good("ClusterQueue"), "spec.cohortName", None),
        "spec",
        "borrowingLimit must be nil when cohort is empty",
    ),
    (
        "ClusterQueue",
        lambda: _set(good("ClusterQueue"), "spec.preemption.reclaimWithinCohort", "Never"),
        "spec.preemption",
        "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
    ),
    (
        "ClusterQueue",
        lambda: _set(good("ClusterQueue"), "spec.flavorFungibility.whenCanBorrow", "MayStopSearch"),
        "spec.flavorFungibility",
        "preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor",
    ),
    (
        "ClusterQueue",
        lambda: _set(
            good("ClusterQueue"), "spec.resourceGroups.0.coveredResources", ["google.com/tpu", "cpu"]
        ),
        "spec.resourceGroups[0]",
        "flavors must have the same number of resources as the coveredResources",
    ),
    (
        "ResourceFlavor",
        lambda: _set(_set(good("ResourceFlavor"), "spec.topologyName", "tpu"), "spec.nodeLabels", {}),
        "spec",
        "at least one nodeLabel is required when topology is set",
    ),
    (
        "ResourceFlavor",
        lambda: _set(good("ResourceFlavor"), "spec.tolerations.0.value", "present"),
        "spec.tolerations",
        "a value must be empty when 'operator' is 'Exists'",
    ),
    (
        "ResourceFlavor",
        lambda: _set(
            good("ResourceFlavor"), "spec.nodeTaints", [{"key": "k", "value": "v", "effect": "Sometimes"}]
        ),
        "spec.nodeTaints",
        "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'",
    ),
    (
        "Cohort",
        lambda: _set(good("Cohort"), "spec.resourceGroups.0.coveredResources", ["google.com/tpu", "memory"]),
        "spec.resourceGroups[0]",
        "flavors must have the same number of resources as the coveredResources",
    ),
    (
        "Topology",
        lambda: _set(
            good("Topology"), "spec.levels", [{"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": "rack"}]
        ),
        "spec.levels",
        "the kubernetes.io/hostname label can only be used at the lowest level of topology",
    ),
    (
        "Workload",
        lambda: _set(good("Workload"), "spec.podSets.0.minCount", 9),
        "spec.podSets[0]",
        "minCount should be positive and less or equal to count",
    ),
    (
        "JobSet",
        lambda: _set(
            _set(example_jobset(), "spec.startupPolicy", {"startupPolicyOrder": "InOrder"}),
            "spec.replicatedJobs.0.dependsOn",
            [{"name": "workers", "status": "Ready"}],
        ),
        "spec",
        "StartupPolicy and DependsOn APIs are mutually exclusive",
    ),
    (
        "JobSet",
        lambda: _set(
            example_jobset(),
            "spec.volumeClaimPolicies",
            [{"templates": [{"metadata": {"name": "ckpt", "namespace": "other"}, "spec": {}}]}],
        ),
        "spec.volumeClaimPolicies[0]",
        "namespace cannot be set for VolumeClaimPolicies templates",
    ),
]


@pytest.mark.parametrize(
    ("kind", "make", "path", "message"),
    CEL_VIOLATIONS,
    ids=[f"{k}:{m[:40]}" for k, _, _, m in CEL_VIOLATIONS],
)
def test_cel_rules_from_the_crds_are_enforced(
    validator: SchemaValidator, kind: str, make: Mutation, path: str, message: str
) -> None:
    report = check_object(make(), validator)
    assert [(i.path, i.message, i.code) for i in report.errors] == [(path, message, "cel")], report.describe()


def test_list_map_keys_must_be_unique(validator: SchemaValidator) -> None:
    cq = good("ClusterQueue")
    group = cq["spec"]["resourceGroups"][0]
    group["flavors"].append(copy.deepcopy(group["flavors"][0]))
    report = check_object(cq, validator)
    assert [(i.path, i.code) for i in report.errors] == [("spec.resourceGroups[0].flavors[1]", "list-type")]

    jobset = example_jobset()
    jobset["spec"]["replicatedJobs"].append(copy.deepcopy(jobset["spec"]["replicatedJobs"][0]))
    report = check_object(jobset, validator)
    assert [(i.path, i.code) for i in report.errors] == [("spec.replicatedJobs[1]", "list-type")]
    assert '"name": "slice"' in report.errors[0].message


def test_list_set_items_must_be_unique(validator: SchemaValidator) -> None:
    cq = good("ClusterQueue")
    cq["spec"]["admissionChecksStrategy"] = {
        "admissionChecks": [{"name": "provisioning", "onFlavors": ["tpu-v6e-4x4", "tpu-v6e-4x4"]}]
    }
    report = check_object(cq, validator)
    assert [(i.path, i.code) for i in report.errors] == [
        ("spec.admissionChecksStrategy.admissionChecks[0].onFlavors[1]", "list-type")
    ]


@pytest.mark.parametrize(
    "kind", ["ResourceFlavor", "ClusterQueue", "LocalQueue", "Cohort", "WorkloadPriorityClass"]
)
def test_v1beta1_is_deprecated_and_names_v1beta2(validator: SchemaValidator, kind: str) -> None:
    obj = good(kind)
    obj["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    if kind == "ClusterQueue":
        obj["spec"]["cohort"] = obj["spec"].pop("cohortName")
    report = check_object(obj, validator)
    versions = [i for i in report.errors if i.code == "version"]
    assert len(versions) == 1, report.describe()
    assert versions[0].path == "apiVersion"
    assert "deprecated" in versions[0].message and "use kueue.x-k8s.io/v1beta2" in versions[0].message


def test_an_unknown_jobset_version_names_the_served_one(validator: SchemaValidator) -> None:
    jobset = example_jobset()
    jobset["apiVersion"] = "jobset.x-k8s.io/v1alpha1"
    report = check_object(jobset, validator)
    assert [(i.path, i.code) for i in report.errors] == [("apiVersion", "version")]
    assert "use jobset.x-k8s.io/v1alpha2" in report.errors[0].message


def test_the_seed_kueue_objects_fail_where_the_api_server_would(validator: SchemaValidator) -> None:
    docs = list(yaml.safe_load_all((EXAMPLES / "seed-originals" / "kueue-and-priorities.yaml").read_text()))
    by_kind = {doc["kind"] + "/" + doc["metadata"]["name"]: check_object(doc, validator) for doc in docs}
    assert by_kind["PriorityClass/low-priority-job"].issues == []
    assert by_kind["PriorityClass/high-priority-job"].issues == []
    for key in ("ResourceFlavor/tpu-v6e-slice", "LocalQueue/default-queue"):
        assert [i.code for i in by_kind[key].errors] == ["version"], by_kind[key].describe()
    cq = by_kind["ClusterQueue/tpu-training-cq"]
    assert {(i.path, i.code) for i in cq.errors} == {
        ("apiVersion", "version"),
        ("spec.preemption.reclaimOutOfCohort", "unknown-field"),
        ("spec.resourceGroups[0].coveredResources", "structure"),
        # The resourceGroups rule reads coveredResources: without it the rule errors, as on the API server.
        ("spec.resourceGroups[0]", "cel"),
    }, cq.describe()


def test_the_seed_jobsets_match_the_crd(validator: SchemaValidator) -> None:
    # The seed's JobSet mistakes are semantic (see the linter tests), not structural.
    for name in ("low-jax-trillium", "high-jax-trillium"):
        jobset = yaml.safe_load((EXAMPLES / "seed-originals" / f"{name}.yaml").read_text())
        assert_clean(check_object(jobset, validator))


def test_only_the_needed_crd_is_parsed(validator: SchemaValidator) -> None:
    fresh = SchemaValidator(validator.crds_path)
    check_object(good("ClusterQueue"), fresh)
    workload = fresh.catalog.get("kueue.x-k8s.io", "Workload")
    cluster_queue = fresh.catalog.get("kueue.x-k8s.io", "ClusterQueue")
    assert workload is not None and cluster_queue is not None
    assert "versions" in vars(cluster_queue)
    assert "versions" not in vars(workload), "the 1.4 MB Workload CRD was parsed for a ClusterQueue"
