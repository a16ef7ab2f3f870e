"""Rendered Kueue objects: v1beta2 field names, selectors that admit the team, flavors matching the pools."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tpu_platform import catalog
from tpu_platform.config import PlatformConfig
from tpu_platform.kueue import KUEUE_API, priority_objects, queue_directory, queue_objects
from tpu_platform.kueue.objects import flavors
from tpu_platform.plan import list_stacks, load_stack_config, parse_stack_config
from tpu_platform.plan.stacks import stack_file
from tpu_platform.slices import expand_slices


def stack_cfg(name: str) -> PlatformConfig:
    return parse_stack_config(load_stack_config(stack_file(name)))


@pytest.fixture
def cfg(stack: dict[str, Any]) -> PlatformConfig:
    config = copy.deepcopy(stack)
    config["tpu-platform:slicePools"].append({"name": "big", "topology": "8x8", "count": 1})
    config["tpu-platform:cohorts"] = [
        {"name": "org"},
        {"name": "ml", "parentName": "org", "fairSharingWeight": 2},
    ]
    config["tpu-platform:teams"] = [
        {
            "name": "research",
            "cohortName": "ml",
            "namespaces": ["research", {"name": "research-dev", "labels": {"env": "dev"}}],
            "localQueues": [{"name": "main"}, {"name": "dev", "namespace": "research-dev"}],
            "fairSharingWeight": "0.5",
            "quota": [
                {"topology": "8x8", "slices": 1, "lendingLimitSlices": 1},
                {"topology": "4x4", "slices": 1, "borrowingLimitSlices": 1},
            ],
            "preemption": {
                "withinClusterQueue": "LowerPriority",
                "reclaimWithinCohort": "Any",
            },
        },
        {"name": "applied", "cohortName": "ml", "quota": [{"topology": "4x4", "slices": 1}]},
    ]
    return parse_stack_config(config)


def walk_keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in walk_keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in walk_keys(v)}
    return set()


@pytest.mark.parametrize("stack_name", list_stacks())
def test_only_v1beta2_and_no_v1beta1_fields(stack_name: str) -> None:
    cfg = stack_cfg(stack_name)
    objs = [o for o in queue_objects(cfg).all() if o["apiVersion"] != "v1"]
    objs += [wpc for _, wpc in priority_objects(cfg)]
    for obj in objs:
        assert obj["apiVersion"] == KUEUE_API == "kueue.x-k8s.io/v1beta2"
        keys = walk_keys(obj.get("spec", {}))
        assert "cohort" not in keys and "reclaimOutOfCohort" not in keys, obj


def test_cluster_queue_spec(cfg: PlatformConfig) -> None:
    cq = queue_objects(cfg).cluster_queues["research"]
    assert cq["kind"] == "ClusterQueue"
    assert cq["metadata"]["name"] == "research-cq"
    spec = cq["spec"]
    assert spec["cohortName"] == "ml"
    assert spec["queueingStrategy"] == "BestEffortFIFO"
    assert spec["fairSharing"] == {"weight": "0.5"}
    assert spec["preemption"] == {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}
    assert spec["resourceGroups"] == [
        {
            "coveredResources": ["google.com/tpu"],
            "flavors": [
                {
                    "name": "tpu-v6e-4x4",
                    "resources": [{"name": "google.com/tpu", "nominalQuota": "16", "borrowingLimit": "16"}],
                },
                {
                    "name": "tpu-v6e-8x8",
                    "resources": [{"name": "google.com/tpu", "nominalQuota": "64", "lendingLimit": "64"}],
                },
            ],
        }
    ]


def test_resources_match_covered_resources_in_order(cfg: PlatformConfig) -> None:
    for cq in queue_objects(cfg).cluster_queues.values():
        for group in cq["spec"]["resourceGroups"]:
            for flavor in group["flavors"]:
                assert [r["name"] for r in flavor["resources"]] == group["coveredResources"]


def test_namespace_selector_admits_the_team_namespaces(cfg: PlatformConfig) -> None:
    cq = queue_objects(cfg).cluster_queues["research"]
    selector = cq["spec"]["namespaceSelector"]
    assert selector not in (None, {})
    assert selector == {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["research", "research-dev"]}
        ]
    }


@pytest.mark.parametrize("stack_name", list_stacks())
def test_every_local_queue_namespace_is_admitted(stack_name: str) -> None:
    cfg = stack_cfg(stack_name)
    objects = queue_objects(cfg)
    for lq in objects.local_queues:
        (expr,) = objects.cluster_queues[lq.team]["spec"]["namespaceSelector"]["matchExpressions"]
        assert expr["key"] == "kubernetes.io/metadata.name" and expr["operator"] == "In"
        assert lq.namespace in expr["values"]
        assert lq.body["spec"] == {"clusterQueue": objects.cluster_queues[lq.team]["metadata"]["name"]}
        assert lq.body["metadata"]["namespace"] == lq.namespace


def test_local_queues_and_namespaces(cfg: PlatformConfig) -> None:
    objects = queue_objects(cfg)
    assert [(lq.namespace, lq.name) for lq in objects.local_queues] == [
        ("research", "main"),
        ("research-dev", "dev"),
        ("applied", "applied-queue"),
    ]
    namespaces = {ns["metadata"]["name"]: ns["metadata"]["labels"] for ns in objects.namespaces}
    assert set(namespaces) == {"research", "research-dev", "applied"}
    assert namespaces["research-dev"]["env"] == "dev"
    assert namespaces["research"]["tpu-platform.dev/team"] == "research"


def test_cohorts(cfg: PlatformConfig) -> None:
    cohorts = {c["metadata"]["name"]: c for c in queue_objects(cfg).cohorts}
    assert cohorts["org"]["spec"] == {}
    assert cohorts["ml"]["spec"] == {"parentName": "org", "fairSharing": {"weight": 2}}
    assert all(c["kind"] == "Cohort" for c in cohorts.values())


def test_flavor_labels_match_the_pools(cfg: PlatformConfig) -> None:
    rendered = {rf["metadata"]["name"]: rf for rf in queue_objects(cfg).resource_flavors}
    assert set(rendered) == {"tpu-v6e-4x4", "tpu-v6e-8x8"}
    for spec in expand_slices(cfg):
        flavor = rendered[cfg.kueue.flavor_name(spec.shape)]
        labels = flavor["spec"]["nodeLabels"]
        assert labels == catalog.node_labels(spec.shape)
        assert labels[catalog.LABEL_TOPOLOGY] == spec.shape.topology
        assert labels[catalog.LABEL_ACCELERATOR] == "tpu-v6e-slice"


def test_the_two_2x4_forms_get_distinct_flavors(stack: dict[str, Any]) -> None:
    stack["tpu-platform:slicePools"] = [
        {"name": "one-vm", "topology": "2x4"},
        {"name": "two-vm", "topology": "2x4", "multiHost": True},
    ]
    found = {f.name: f.node_labels for f in flavors(parse_stack_config(stack))}
    assert found["tpu-v6e-2x4"]["node.kubernetes.io/instance-type"] == "ct6e-standard-8t"
    assert found["tpu-v6e-2x4-multihost"]["node.kubernetes.io/instance-type"] == "ct6e-standard-4t"


def test_priorities_render_both_kinds(stack: dict[str, Any]) -> None:
    stack["tpu-platform:priorities"] = [
        {"name": "urgent", "value": 3000, "description": "now", "preemptionPolicy": "Never"},
        {"name": "batch", "value": 10, "globalDefault": True},
    ]
    pairs = priority_objects(parse_stack_config(stack))
    (pc_batch, wpc_batch), (pc_urgent, wpc_urgent) = pairs
    assert pc_batch["kind"] == "PriorityClass" and pc_batch["apiVersion"] == "scheduling.k8s.io/v1"
    assert (pc_batch["value"], pc_batch["globalDefault"]) == (10, True)
    assert pc_urgent["preemptionPolicy"] == "Never" and pc_urgent["description"] == "now"
    assert wpc_urgent == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "WorkloadPriorityClass",
        "metadata": wpc_urgent["metadata"],
        "value": 3000,
        "description": "now",
    }
    assert "spec" not in wpc_batch and wpc_batch["metadata"]["name"] == "batch"


def test_seed_stack_reproduces_the_seed() -> None:
    cfg = stack_cfg("seed")
    objects = queue_objects(cfg)
    (flavor,) = objects.resource_flavors
    assert flavor["metadata"]["name"] == "tpu-v6e-slice"
    assert flavor["spec"]["nodeLabels"] == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
        "cloud.google.com/gke-tpu-topology": "4x4",
    }
    cq = objects.cluster_queues["training"]
    assert cq["metadata"]["name"] == "tpu-training-cq"
    assert cq["spec"]["queueingStrategy"] == "BestEffortFIFO"
    assert cq["spec"]["preemption"]["reclaimWithinCohort"] == "Never"
    assert "cohortName" not in cq["spec"]
    (group,) = cq["spec"]["resourceGroups"]
    assert group["flavors"] == [
        {"name": "tpu-v6e-slice", "resources": [{"name": "google.com/tpu", "nominalQuota": "32"}]}
    ]
    (lq,) = objects.local_queues
    assert (lq.namespace, lq.name, lq.body["spec"]["clusterQueue"]) == (
        "default",
        "default-queue",
        "tpu-training-cq",
    )
    assert objects.namespaces == []  # `default` is admitted, never created
    assert {p.name: p.value for p in cfg.priorities} == {
        "low-priority-job": 1_000_000,
        "high-priority-job": 2_000_000,
    }
    assert not any(p.global_default for p in cfg.priorities)
    # 32 chips are the two 4x4 slices the seed's JobSets (replicas: 2 of 4x4) need.
    assert [(s.shape.topology, s.chips) for s in expand_slices(cfg)] == [("4x4", 16), ("4x4", 16)]


def test_seed_stack_explains_each_correction() -> None:
    text = stack_file("seed").read_text()
    for phrase in (
        "v1beta1",
        "v1beta2",
        "reclaimOutOfCohort",
        "exists in no Kueue version",
        "LABEL kueue.x-k8s.io/queue-name",
        "annotations",
        "kueue.x-k8s.io/managed-by",
        "POD\n#     TEMPLATE",
        "cloud.google.com/gke-tpu-topology: 4x4",
        "namespaceSelector",
        "withinClusterQueue",
    ):
        assert phrase in text, phrase


def test_queue_directory(cfg: PlatformConfig) -> None:
    directory = queue_directory(cfg)
    main = directory.queue("research", "main")
    assert main is not None
    assert (main.cluster_queue, main.team, main.cohort) == ("research-cq", "research", "ml")
    assert main.flavors == ("tpu-v6e-4x4", "tpu-v6e-8x8") and main.topologies == ("4x4", "8x8")
    assert directory.queue("research", "dev") is None
    assert [q.name for q in directory.queues_in("research-dev")] == ["dev"]
    assert directory.priorities == {"low-priority-job": 1_000_000, "high-priority-job": 2_000_000}
    assert directory.default_priority is None
    big = directory.flavors["tpu-v6e-8x8"]
    assert (big.chips_per_slice, big.vms_per_slice, big.chips_per_vm, big.slices) == (64, 16, 4, 1)
    assert [f.name for f in directory.flavors_of(main)] == ["tpu-v6e-4x4", "tpu-v6e-8x8"]
    doc = directory.as_dict()
    assert doc["localQueues"][0]["clusterQueue"] in {"research-cq", "applied-cq"}
    assert {f["name"] for f in doc["flavors"]} == {"tpu-v6e-4x4", "tpu-v6e-8x8"}


def test_overcommit_is_declared_on_cluster_queues(stack: dict[str, Any]) -> None:
    from tpu_platform.constants import OVERCOMMIT_ANNOTATION
    from tpu_platform.kueue.objects import cluster_queue

    stack["tpu-platform:teams"] = [{"name": "a", "quota": [{"topology": "4x4", "slices": 2}]}]
    cfg = parse_stack_config(stack)
    assert "annotations" not in cluster_queue(cfg, cfg.teams[0])["metadata"]
    stack["tpu-platform:kueue"] = {"allowOvercommit": True}
    stack["tpu-platform:teams"][0]["quota"][0]["slices"] = 3
    cfg = parse_stack_config(stack)
    assert cluster_queue(cfg, cfg.teams[0])["metadata"]["annotations"] == {OVERCOMMIT_ANNOTATION: "true"}


def test_borrow_within_cohort_renders_without_fair_sharing(stack: dict[str, Any]) -> None:
    """Kueue honours borrowWithinCohort only without fair sharing (kueue v0.19.2
    site/content/en/docs/concepts/preemption.md), so only such a stack renders it."""
    config = copy.deepcopy(stack)
    config["tpu-platform:kueue"] = {"fairSharing": {"enabled": False}}
    config["tpu-platform:teams"] = [
        {
            "name": "research",
            "cohortName": "ml",
            "quota": [{"topology": "4x4", "slices": 1}],
            "preemption": {
                "reclaimWithinCohort": "Any",
                "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": "low-priority-job"},
            },
        }
    ]
    spec = queue_objects(parse_stack_config(config)).cluster_queues["research"]["spec"]
    assert spec["preemption"]["borrowWithinCohort"] == {
        "policy": "LowerPriority",
        "maxPriorityThreshold": 1_000_000,
    }
