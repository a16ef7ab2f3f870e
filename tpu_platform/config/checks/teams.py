"""Checks of the ``teams`` section: names, namespaces, LocalQueues, quotas and preemption."""

from __future__ import annotations

from ...constants import BUILTIN_NAMESPACES, RESERVED_NAMESPACES
from ..platform import PlatformConfig
from ..problems import Loc, Problems, did_you_mean
from ..teams import TeamConfig
from .quota import check_quota_entries


def check_teams(cfg: PlatformConfig) -> Problems:
    """Distinct teams and ClusterQueues, declared cohorts, namespaces, LocalQueues, quotas, preemption."""
    problems = Problems()
    team_names: dict[str, int] = {}
    cq_names: dict[str, int] = {}
    created_by: dict[str, int] = {}
    local_queues: dict[tuple[str, str], int] = {}
    declared_cohorts = [c.name for c in cfg.cohorts]
    priorities = {p.name: p.value for p in cfg.priorities}
    for index, team in enumerate(cfg.teams):
        here: Loc = ("teams", index)
        if team.name in team_names:
            problems.add((*here, "name"), f"team {team.name!r} is also teams[{team_names[team.name]}]")
        team_names.setdefault(team.name, index)
        cq = team.cluster_queue
        if cq in cq_names:
            problems.add(
                (*here, "clusterQueueName"),
                f"ClusterQueue {cq!r} is also the ClusterQueue of teams[{cq_names[cq]}]; give each team its "
                f"own",
            )
        cq_names.setdefault(cq, index)
        cohort = team.cohort_name
        if cohort is not None and declared_cohorts and cohort not in declared_cohorts:
            problems.add(
                (*here, "cohortName"),
                f"cohort {cohort!r} is not declared in "
                f"tpu-platform:cohorts{did_you_mean(cohort, declared_cohorts)}; "
                "declare it or fix the name",
            )
        _check_team_namespaces(team, here, created_by, local_queues, problems)
        if not team.quota:
            problems.add(
                (*here, "quota"),
                "the ClusterQueue would have no quota and admit nothing; add quota entries such as "
                "[{topology: 4x4, slices: 2}] (slices: 0 with a cohort to only borrow)",
            )
        check_quota_entries(
            team.quota, here, has_parent=cohort is not None, kind="team", cfg=cfg, problems=problems
        )
        _check_preemption(team, here, priorities, problems, cfg.kueue.fair_sharing.enabled)
        if team.fair_sharing_weight is not None:
            if not cfg.kueue.fair_sharing.enabled:
                problems.add(
                    (*here, "fairSharingWeight"),
                    "has no effect while tpu-platform:kueue.fairSharing.enabled is false; remove it or "
                    "enable fair sharing",
                )
            elif cohort is None:
                problems.add(
                    (*here, "fairSharingWeight"),
                    "weights only share a cohort's idle quota; set cohortName or remove fairSharingWeight",
                )
    for index, pool in enumerate(cfg.slice_pools):
        if cfg.teams and pool.team is not None and pool.team not in team_names:
            problems.add(
                ("slicePools", index, "team"),
                f"{pool.team!r} is not a team in tpu-platform:teams"
                f"{did_you_mean(pool.team, list(team_names))}",
            )
    return problems


def _check_team_namespaces(
    team: TeamConfig,
    here: Loc,
    created_by: dict[str, int],
    local_queues: dict[tuple[str, str], int],
    problems: Problems,
) -> None:
    index = here[-1]
    if team.namespaces is not None and not team.namespaces:
        problems.add(
            (*here, "namespaces"),
            "an empty list would leave the ClusterQueue admitting no namespace; list at least one "
            "(or remove the key for a namespace named after the team)",
        )
    seen: set[str] = set()
    for ns_index, ns in enumerate(team.namespace_list()):
        loc: Loc = (*here, "namespaces", ns_index) if team.namespaces is not None else (*here, "name")
        if ns.name in seen:
            problems.add(loc, f"namespace {ns.name!r} is listed twice")
        seen.add(ns.name)
        if ns.name in RESERVED_NAMESPACES:
            problems.add(
                loc,
                f"{ns.name!r} belongs to Kubernetes, GKE or the platform's controllers (Kueue does not "
                f"manage jobs "
                "in kube-system or kueue-system); give the team its own namespace",
            )
            continue
        if ns.name in BUILTIN_NAMESPACES and ns.create:
            problems.add(
                (*loc, "create"),
                f"{ns.name!r} exists in every cluster and must not be created or owned by the platform "
                "(deleting the stack would try to delete it); remove create",
            )
        if ns.created:
            if ns.name in created_by:
                problems.add(
                    loc,
                    f"namespace {ns.name!r} is already created by teams[{created_by[ns.name]}]; set create: "
                    f"false "
                    "here to share it",
                )
            else:
                created_by[ns.name] = int(index)
        elif ns.labels:
            problems.add(
                (*loc, "labels"),
                f"labels only apply to namespaces the platform creates; {ns.name!r} is not created (create: "
                f"false)",
            )
    for lq_index, (namespace, name) in enumerate(team.local_queue_list()):
        loc = (*here, "localQueues", lq_index) if team.local_queues is not None else (*here, "name")
        if namespace not in seen:
            problems.add(
                (*loc, "namespace"),
                f"namespace {namespace!r} is not one of the team's namespaces "
                f"({', '.join(sorted(seen)) or 'none'}), "
                "so its ClusterQueue would not admit this queue's workloads; add it to namespaces",
            )
        key = (namespace, name)
        if key in local_queues:
            problems.add(
                loc,
                f"LocalQueue {namespace}/{name} is also defined by teams[{local_queues[key]}]; "
                "queue names must be unique within a namespace",
            )
        local_queues.setdefault(key, int(index))
    if team.local_queues is not None and not team.local_queues:
        problems.add(
            (*here, "localQueues"), "no LocalQueue means no job can reach the ClusterQueue; list at least one"
        )


def _check_preemption(
    team: TeamConfig, here: Loc, priorities: dict[str, int], problems: Problems, fair_sharing: bool
) -> None:
    pre = team.preemption
    loc: Loc = (*here, "preemption")
    borrow = pre.borrow_within_cohort
    if fair_sharing and borrow is not None and borrow.policy != "Never":
        # kueue v0.19.2 site/content/en/docs/concepts/preemption.md, "Fair Sharing": preemption
        # strategies work with withinClusterQueue and reclaimWithinCohort "but not borrowWithinCohort".
        problems.add(
            (*loc, "borrowWithinCohort"),
            "Kueue ignores borrowWithinCohort while fair sharing is on (its preemption strategies decide "
            "who is preempted across the cohort); remove borrowWithinCohort, or set "
            "tpu-platform:kueue.fairSharing.enabled: false",
        )
    if borrow is not None and borrow.policy != "Never" and pre.reclaim_within_cohort == "Never":
        problems.add(
            (*loc, "borrowWithinCohort", "policy"),
            "Kueue rejects borrowWithinCohort.policy other than Never while reclaimWithinCohort is Never; "
            "set reclaimWithinCohort to LowerPriority or Any",
        )
    if borrow is not None and borrow.max_priority_threshold is not None:
        threshold = borrow.max_priority_threshold
        if borrow.policy == "Never":
            problems.add(
                (*loc, "borrowWithinCohort", "maxPriorityThreshold"),
                "only applies with policy: LowerPriority; set the policy or remove the threshold",
            )
        if isinstance(threshold, str) and threshold not in priorities:
            problems.add(
                (*loc, "borrowWithinCohort", "maxPriorityThreshold"),
                f"unknown priority {threshold!r}{did_you_mean(threshold, list(priorities))}; "
                f"use one of {', '.join(priorities) or 'the priorities'} or a number",
            )
