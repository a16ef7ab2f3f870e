"""Validation of priorities, kueue, cohorts and teams: every rule names its config path and the fix."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.config.stack_problems import only_problem, problems_of
from tpu_platform.config.checks import stack_warnings
from tpu_platform.plan import parse_stack_config
from tpu_platform.quota import quota_layout


def team(name: str = "research", **fields: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"name": name, "quota": [{"topology": "4x4", "slices": 1}]}
    doc.update(fields)
    return doc


@pytest.fixture
def queued(stack: dict[str, Any]) -> dict[str, Any]:
    """The minimal stack (two 4x4 slices) with two teams sharing a cohort, one slice each."""
    config = copy.deepcopy(stack)
    config["tpu-platform:teams"] = [team("research", cohortName="ml"), team("applied", cohortName="ml")]
    return config


def test_queued_stack_is_valid(queued: dict[str, Any]) -> None:
    cfg = parse_stack_config(queued)
    assert [t.cluster_queue for t in cfg.teams] == ["research-cq", "applied-cq"]
    assert [t.local_queue_list() for t in cfg.teams] == [
        [("research", "research-queue")],
        [("applied", "applied-queue")],
    ]


def test_existing_stacks_stay_valid_with_seed_priorities(stack: dict[str, Any]) -> None:
    cfg = parse_stack_config(stack)
    assert [(p.name, p.value) for p in cfg.priorities] == [
        ("low-priority-job", 1_000_000),
        ("high-priority-job", 2_000_000),
    ]
    assert cfg.teams == [] and cfg.cohorts == []


# --------------------------------------------------------------------------- keys from the seed / v1beta1


def test_reclaim_out_of_cohort_says_it_does_not_exist(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][0]["preemption"] = {
        "reclaimWithinCohort": "Never",
        "reclaimOutOfCohort": {"enable": True, "reclaimMoreThanNominalQuota": False},
    }
    message = only_problem(queued)
    assert message.startswith("tpu-platform:teams[0].preemption.reclaimOutOfCohort: ")
    assert "exists in no Kueue version" in message
    assert "preemption.reclaimWithinCohort" in message
    assert "borrowWithinCohort" in message


def test_reclaim_out_of_cohort_at_team_level(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][1]["reclaimOutOfCohort"] = {"enable": True}
    message = only_problem(queued)
    assert message.startswith("tpu-platform:teams[1].reclaimOutOfCohort: ")
    assert "exists in no Kueue version" in message and "reclaimWithinCohort" in message


def test_v1beta1_cohort_key_points_to_cohort_name(queued: dict[str, Any]) -> None:
    entry = queued["tpu-platform:teams"][0]
    entry["cohort"] = entry.pop("cohortName")
    message = only_problem(queued)
    assert message.startswith("tpu-platform:teams[0].cohort: ")
    assert "cohortName" in message and "v1beta1" in message


@pytest.mark.parametrize(
    ("key", "hint"),
    [
        ("namespaceSelector", "namespaces"),
        ("resourceGroups", "quota:"),
        ("clusterQueue", "clusterQueueName"),
    ],
)
def test_kueue_field_names_on_teams_get_a_hint(queued: dict[str, Any], key: str, hint: str) -> None:
    queued["tpu-platform:teams"][0][key] = {}
    message = only_problem(queued)
    assert message.startswith(f"tpu-platform:teams[0].{key}: ")
    assert hint in message


def test_nominal_quota_key_in_quota_entry(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][0]["quota"] = [{"topology": "4x4", "nominalQuota": 16}]
    problems = problems_of(queued)
    assert any(
        p.startswith("tpu-platform:teams[0].quota[0].nominalQuota: ") and "slices: <n>" in p for p in problems
    ), problems


def test_unknown_team_key_lists_valid_keys(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][0]["quotas"] = []
    message = only_problem(queued)
    assert message.startswith("tpu-platform:teams[0].quotas: unknown key")
    assert "cohortName" in message and "quota" in message


def test_enable_visibility_apf_stays_off(stack: dict[str, Any]) -> None:
    stack["tpu-platform:kueue"] = {"enableVisibilityAPF": True}
    message = only_problem(stack)
    assert message.startswith("tpu-platform:kueue.enableVisibilityAPF: ")
    assert "#5374" in message and "remove it" in message


# --------------------------------------------------------------------------- whole slices and capacity


def test_quota_in_chips_must_be_whole_slices(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][0]["quota"] = [{"topology": "4x4", "chips": 24}]
    message = only_problem(queued)
    assert message.startswith("tpu-platform:teams[0].quota[0].chips: ")
    assert "not a whole number of 4x4 slices (16 chips each)" in message
    assert "use 16 or 32 chips (slices: 1 or 2)" in message


def test_quota_in_whole_chips_is_accepted(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][0]["quota"] = [{"topology": "4x4", "chips": 16, "borrowingLimitChips": 16}]
    cfg = parse_stack_config(queued)
    (quota,) = quota_layout(cfg).queue_of(cfg.teams[0].name).quotas
    assert (quota.nominal, quota.borrowing_limit) == (1, 1)


def test_limits_in_chips_must_be_whole_slices(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][0]["quota"] = [{"topology": "4x4", "slices": 1, "lendingLimitChips": 8}]
    message = only_problem(queued)
    assert message.startswith("tpu-platform:teams[0].quota[0].lendingLimitChips: ")
    assert "lendingLimitSlices: 0 or 1" in message


def test_quota_for_a_shape_no_pool_provides(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][0]["quota"].append({"topology": "8x8", "slices": 1})
    message = only_problem(queued)
    assert message.startswith("tpu-platform:teams[0].quota[1].topology: ")
    assert "no slice pool provides 8x8 slices" in message
    assert "add a slicePools entry with topology 8x8" in message


def test_quota_for_the_other_2x4_form_says_which(stack: dict[str, Any]) -> None:
    stack["tpu-platform:slicePools"] = [{"name": "small", "topology": "2x4", "multiHost": True, "count": 2}]
    stack["tpu-platform:teams"] = [{"name": "research", "quota": [{"topology": "2x4", "slices": 1}]}]
    message = only_problem(stack)
    assert message.startswith("tpu-platform:teams[0].quota[0].topology: ")
    assert "2x4 (single-host)" in message and "2x4 (multi-host)" in message and "multiHost" in message


def test_unknown_topology_in_quota(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][0]["quota"] = [{"topology": "3x3", "slices": 1}]
    message = only_problem(queued)
    assert message.startswith("tpu-platform:teams[0].quota[0].topology: TPU v6e has no slice topology '3x3'")


def test_nominal_quotas_cannot_exceed_the_pools(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][1]["quota"] = [{"topology": "4x4", "slices": 2}]
    message = only_problem(queued)
    assert message.startswith("tpu-platform:teams: nominal quotas for 4x4 add up to 3 slices (48 chips")
    assert "team research 1, team applied 2" in message
    assert "the slice pools have 2 (32 chips)" in message
    assert "tpu-platform:kueue.allowOvercommit: true" in message


def test_explicit_overcommit_is_allowed(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][1]["quota"] = [{"topology": "4x4", "slices": 2}]
    queued["tpu-platform:kueue"] = {"allowOvercommit": True}
    parse_stack_config(queued)


def test_cohort_quota_counts_against_the_pools(queued: dict[str, Any]) -> None:
    queued["tpu-platform:cohorts"] = [{"name": "ml", "quota": [{"topology": "4x4", "slices": 1}]}]
    message = only_problem(queued)
    assert "add up to 3 slices" in message and "cohort ml 1" in message


def test_quota_needs_a_nominal_amount(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][0]["quota"] = [{"topology": "4x4"}]
    message = only_problem(queued)
    assert message.startswith("tpu-platform:teams[0].quota[0]: needs the nominal quota")


def test_slices_and_chips_together(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][0]["quota"] = [{"topology": "4x4", "slices": 1, "chips": 16}]
    assert only_problem(queued).startswith(
        "tpu-platform:teams[0].quota[0]: set either slices or chips, not both (in team '"
    )


def test_one_entry_per_shape(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][0]["quota"] = [
        {"topology": "4x4", "slices": 1},
        {"topology": "4x4", "slices": 0},
    ]
    message = only_problem(queued)
    assert message.startswith("tpu-platform:teams[0].quota[1]: 4x4 already has a quota in quota[0]")


def test_team_without_quota(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][0]["quota"] = []
    message = only_problem(queued)
    assert message.startswith("tpu-platform:teams[0].quota: the ClusterQueue would have no quota")
    assert "slices: 0 with a cohort to only borrow" in message


# --------------------------------------------------------------------------- borrowing, lending, preemption


def test_borrowing_limit_needs_a_cohort(queued: dict[str, Any]) -> None:
    del queued["tpu-platform:teams"][0]["cohortName"]
    queued["tpu-platform:teams"][0]["quota"][0]["borrowingLimitSlices"] = 1
    message = only_problem(queued)
    assert message.startswith("tpu-platform:teams[0].quota[0].borrowingLimitSlices: ")
    assert "needs a cohort" in message and "set cohortName" in message


def test_lending_limit_needs_a_cohort(queued: dict[str, Any]) -> None:
    del queued["tpu-platform:teams"][0]["cohortName"]
    queued["tpu-platform:teams"][0]["quota"][0]["lendingLimitChips"] = 16
    message = only_problem(queued)
    assert message.startswith("tpu-platform:teams[0].quota[0].lendingLimitChips: ")
    assert "set cohortName" in message


def test_lending_above_nominal(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][0]["quota"][0]["lendingLimitSlices"] = 2
    message = only_problem(queued)
    assert message.startswith("tpu-platform:teams[0].quota[0].lendingLimitSlices: lends 2 slices")
    assert "at most the nominal quota" in message


def test_reclaim_without_cohort_is_ignored_by_kueue(queued: dict[str, Any]) -> None:
    """Kueue accepts it and ignores it: a warning, not an error."""
    del queued["tpu-platform:teams"][0]["cohortName"]
    queued["tpu-platform:teams"][0]["preemption"] = {"reclaimWithinCohort": "Any"}
    (message,) = stack_warnings(parse_stack_config(queued)).lines
    assert message.startswith(
        "tpu-platform:teams[0].preemption.reclaimWithinCohort: has no effect without a cohort: Kueue accepts"
    )
    assert "set cohortName" in message


def test_reclaim_never_without_cohort_is_fine(queued: dict[str, Any]) -> None:
    del queued["tpu-platform:teams"][0]["cohortName"]
    queued["tpu-platform:teams"][0]["preemption"] = {"reclaimWithinCohort": "Never"}
    parse_stack_config(queued)


def test_borrow_within_cohort_needs_reclaim(queued: dict[str, Any]) -> None:
    queued["tpu-platform:kueue"] = {"fairSharing": {"enabled": False}}
    queued["tpu-platform:teams"][0]["preemption"] = {"borrowWithinCohort": {"policy": "LowerPriority"}}
    message = only_problem(queued)
    assert message.startswith("tpu-platform:teams[0].preemption.borrowWithinCohort.policy: ")
    assert "set reclaimWithinCohort to LowerPriority or Any" in message


def test_unknown_priority_in_threshold(queued: dict[str, Any]) -> None:
    queued["tpu-platform:kueue"] = {"fairSharing": {"enabled": False}}
    queued["tpu-platform:teams"][0]["preemption"] = {
        "reclaimWithinCohort": "Any",
        "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": "low-priority"},
    }
    message = only_problem(queued)
    assert message.startswith("tpu-platform:teams[0].preemption.borrowWithinCohort.maxPriorityThreshold: ")
    assert "unknown priority 'low-priority'" in message and "did you mean 'low-priority-job'" in message


def test_threshold_without_policy(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][0]["preemption"] = {"borrowWithinCohort": {"maxPriorityThreshold": 1000000}}
    message = only_problem(queued)
    assert "maxPriorityThreshold: only applies with policy: LowerPriority" in message


def test_unknown_preemption_policy_value(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][0]["preemption"] = {"withinClusterQueue": "Lower"}
    message = only_problem(queued)
    assert message.startswith("tpu-platform:teams[0].preemption.withinClusterQueue: ")
    assert "LowerPriority" in message


def test_fair_sharing_weight_needs_a_cohort(queued: dict[str, Any]) -> None:
    del queued["tpu-platform:teams"][0]["cohortName"]
    queued["tpu-platform:teams"][0]["fairSharingWeight"] = 2
    message = only_problem(queued)
    assert message.startswith("tpu-platform:teams[0].fairSharingWeight: ")
    assert "set cohortName" in message


def test_fair_sharing_weight_needs_fair_sharing(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][0]["fairSharingWeight"] = 2
    queued["tpu-platform:kueue"] = {"fairSharing": {"enabled": False}}
    message = only_problem(queued)
    assert message.startswith("tpu-platform:teams[0].fairSharingWeight: has no effect")
    assert "enable fair sharing" in message


@pytest.mark.parametrize("weight", [-1, "heavy", "1e-12", True])
def test_fair_sharing_weight_must_be_a_number(queued: dict[str, Any], weight: Any) -> None:
    queued["tpu-platform:teams"][0]["fairSharingWeight"] = weight
    message = only_problem(queued)
    assert message.startswith("tpu-platform:teams[0].fairSharingWeight: fair-sharing weight")


# --------------------------------------------------------------------------- namespaces and queues


def test_empty_namespaces_would_admit_nothing(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][0]["namespaces"] = []
    problems = problems_of(queued)
    assert any(
        p.startswith("tpu-platform:teams[0].namespaces: ") and "admitting no namespace" in p for p in problems
    ), problems


def test_reserved_namespace(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][0]["namespaces"] = ["kube-system"]
    problems = problems_of(queued)
    assert any(
        p.startswith("tpu-platform:teams[0].namespaces[0]: 'kube-system' belongs to") for p in problems
    )


def test_default_namespace_is_never_created(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][0]["namespaces"] = [{"name": "default", "create": True}]
    queued["tpu-platform:teams"][0]["localQueues"] = [{"name": "q", "namespace": "default"}]
    message = only_problem(queued)
    assert message.startswith("tpu-platform:teams[0].namespaces[0].create: 'default' exists in every cluster")
    assert "remove create" in message


def test_default_namespace_is_used_not_created(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][0]["namespaces"] = ["default"]
    cfg = parse_stack_config(queued)
    (ns,) = cfg.teams[0].namespace_list()
    assert ns.name == "default" and not ns.created
    assert cfg.teams[0].local_queue_list() == [("default", "research-queue")]


def test_namespace_created_by_two_teams(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][0]["namespaces"] = ["ml"]
    queued["tpu-platform:teams"][1]["namespaces"] = ["ml"]
    message = only_problem(queued)
    assert message.startswith(
        "tpu-platform:teams[1].namespaces[0]: namespace 'ml' is already created by teams[0]"
    )
    assert "create: false" in message


def test_local_queue_outside_the_team_namespaces(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][0]["localQueues"] = [{"name": "q", "namespace": "applied"}]
    message = only_problem(queued)
    assert message.startswith("tpu-platform:teams[0].localQueues[0].namespace: ")
    assert "would not admit" in message and "add it to namespaces" in message


def test_duplicate_local_queue(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][0]["localQueues"] = [{"name": "q"}, {"name": "q"}]
    message = only_problem(queued)
    assert message.startswith("tpu-platform:teams[0].localQueues[1]: LocalQueue research/q is also defined")


def test_no_local_queue(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][0]["localQueues"] = []
    message = only_problem(queued)
    assert message.startswith("tpu-platform:teams[0].localQueues: no LocalQueue")


def test_labels_on_an_existing_namespace(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][0]["namespaces"] = [
        {"name": "shared", "create": False, "labels": {"a": "b"}}
    ]
    message = only_problem(queued)
    assert message.startswith("tpu-platform:teams[0].namespaces[0].labels: ")


def test_duplicate_team_and_cluster_queue(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][1]["clusterQueueName"] = "research-cq"
    message = only_problem(queued)
    assert message.startswith("tpu-platform:teams[1].clusterQueueName: ClusterQueue 'research-cq' is also")


def test_invalid_team_name(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][0]["name"] = "Research"
    problems = problems_of(queued)
    assert any(p.startswith("tpu-platform:teams[0].name: team name 'Research'") for p in problems)


def test_pool_team_must_be_a_team(queued: dict[str, Any]) -> None:
    queued["tpu-platform:slicePools"][0]["team"] = "reserch"
    message = only_problem(queued)
    assert message.startswith("tpu-platform:slicePools[0].team: 'reserch' is not a team")
    assert "did you mean 'research'" in message


# --------------------------------------------------------------------------- cohorts


def test_undeclared_cohort_when_cohorts_are_declared(queued: dict[str, Any]) -> None:
    queued["tpu-platform:cohorts"] = [{"name": "mlx"}]
    problems = problems_of(queued)
    assert len(problems) == 2
    assert problems[0].startswith("tpu-platform:teams[0].cohortName: cohort 'ml' is not declared")
    assert "did you mean 'mlx'" in problems[0]


def test_an_undeclared_parent_cohort_is_a_warning(queued: dict[str, Any]) -> None:
    """Kueue creates the parent implicitly; we advise declaring it."""
    queued["tpu-platform:cohorts"] = [{"name": "ml", "parentName": "org"}]
    (message,) = stack_warnings(parse_stack_config(queued)).lines
    assert message.startswith("tpu-platform:cohorts[0].parentName: parent cohort 'org' is not declared")
    assert "Kueue creates it implicitly" in message


def test_cohort_cycle(queued: dict[str, Any]) -> None:
    queued["tpu-platform:cohorts"] = [
        {"name": "ml", "parentName": "org"},
        {"name": "org", "parentName": "ml"},
    ]
    message = only_problem(queued)
    assert "cohorts form a cycle" in message and "make one of them a root" in message


def test_cohort_limits_need_a_parent(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][1]["quota"] = [{"topology": "4x4", "slices": 0}]
    queued["tpu-platform:cohorts"] = [
        {"name": "ml", "quota": [{"topology": "4x4", "slices": 1, "lendingLimitSlices": 1}]}
    ]
    message = only_problem(queued)
    assert message.startswith("tpu-platform:cohorts[0].quota[0].lendingLimitSlices: ")
    assert "set parentName" in message


def test_cohort_parent_key_hint(queued: dict[str, Any]) -> None:
    queued["tpu-platform:cohorts"] = [{"name": "ml", "parent": "org"}]
    message = only_problem(queued)
    assert message.startswith("tpu-platform:cohorts[0].parent: write parentName")


# --------------------------------------------------------------------------- priorities


def test_priority_values_unique(stack: dict[str, Any]) -> None:
    stack["tpu-platform:priorities"] = [{"name": "a", "value": 10}, {"name": "b", "value": 10}]
    message = only_problem(stack)
    assert message.startswith("tpu-platform:priorities[1].value: 10 is also the value of 'a'")


def test_an_empty_priorities_list_is_one_clear_problem(stack: dict[str, Any]) -> None:
    stack["tpu-platform:priorities"] = []
    message = only_problem(stack)
    assert message.startswith("tpu-platform:priorities: is empty")
    assert "remove the key" in message


def test_priority_names_unique(stack: dict[str, Any]) -> None:
    stack["tpu-platform:priorities"] = [{"name": "a", "value": 10}, {"name": "a", "value": 20}]
    message = only_problem(stack)
    assert message.startswith("tpu-platform:priorities[1].name: priority 'a' is also priorities[0]")


def test_at_most_one_global_default(stack: dict[str, Any]) -> None:
    stack["tpu-platform:priorities"] = [
        {"name": "a", "value": 10, "globalDefault": True},
        {"name": "b", "value": 20, "globalDefault": True},
    ]
    message = only_problem(stack)
    assert message.startswith("tpu-platform:priorities: a, b are all globalDefault")


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("system-high", 10, "'system-' prefix is reserved"),
        ("High_Priority", 10, "not a valid Kubernetes object name"),
        ("too-high", 1_000_000_001, "less than or equal to 1000000000"),
    ],
)
def test_priority_names_and_values(stack: dict[str, Any], name: str, value: int, expected: str) -> None:
    stack["tpu-platform:priorities"] = [{"name": name, "value": value}]
    message = only_problem(stack)
    assert message.startswith("tpu-platform:priorities[0]")
    assert expected in message


# --------------------------------------------------------------------------- kueue section


def test_flavor_name_for_a_shape_no_pool_has(stack: dict[str, Any]) -> None:
    stack["tpu-platform:kueue"] = {"flavors": [{"topology": "8x8", "name": "big"}]}
    message = only_problem(stack)
    assert message.startswith("tpu-platform:kueue.flavors[0].topology: no slice pool provides 8x8")


def test_flavor_names_unique(stack: dict[str, Any]) -> None:
    stack["tpu-platform:slicePools"].append({"name": "big", "topology": "8x8"})
    stack["tpu-platform:kueue"] = {
        "flavors": [{"topology": "4x4", "name": "tpu"}, {"topology": "8x8", "name": "tpu"}]
    }
    message = only_problem(stack)
    assert message.startswith("tpu-platform:kueue.flavors[1].name: flavor name 'tpu' is also used")


def test_flavor_name_cannot_take_another_shapes_default(stack: dict[str, Any]) -> None:
    stack["tpu-platform:slicePools"].append({"name": "big", "topology": "8x8"})
    stack["tpu-platform:kueue"] = {"flavors": [{"topology": "4x4", "name": "tpu-v6e-8x8"}]}
    message = only_problem(stack)
    assert "default flavor name of the 8x8 slices" in message


@pytest.mark.parametrize(
    ("kueue", "path", "expected"),
    [
        ({"integrations": ["kubeflow.org/jaxjobs"]}, "kueue.integrations", "not a Kueue 0.19 framework"),
        (
            {"featureGates": {"DisableWaitForPodsReady": True}},
            "kueue.featureGates",
            "waitForPodsReady.enabled",
        ),
        ({"featureGates": {"bad gate": True}}, "kueue.featureGates", "not a Kueue 0.19.2 feature gate"),
        (
            {
                "fairSharing": {
                    "preemptionStrategies": ["LessThanInitialShare", "LessThanOrEqualToFinalShare"]
                }
            },
            "kueue.fairSharing.preemptionStrategies",
            "not a combination Kueue accepts",
        ),
        ({"waitForPodsReady": {"timeout": "30 minutes"}}, "kueue.waitForPodsReady.timeout", "not a duration"),
        ({"quotaCheckStrategy": "Ignore"}, "kueue.quotaCheckStrategy", "IgnoreUndeclared"),
        (
            {"controller": {"requests": {"cpu": "lots"}}},
            "kueue.controller.requests.cpu",
            "not a Kubernetes quantity",
        ),
    ],
)
def test_kueue_section(stack: dict[str, Any], kueue: dict[str, Any], path: str, expected: str) -> None:
    stack["tpu-platform:kueue"] = kueue
    message = only_problem(stack)
    assert message.startswith(f"tpu-platform:{path}")
    assert expected in message


def test_all_queue_problems_reported_at_once(queued: dict[str, Any]) -> None:
    queued["tpu-platform:teams"][0]["quota"] = [{"topology": "4x4", "chips": 20, "borrowingLimitSlices": 1}]
    del queued["tpu-platform:teams"][1]["cohortName"]
    queued["tpu-platform:teams"][1]["quota"][0]["lendingLimitSlices"] = 1
    queued["tpu-platform:priorities"] = [{"name": "a", "value": 1}, {"name": "b", "value": 1}]
    problems = problems_of(queued)
    assert len(problems) == 3, problems
