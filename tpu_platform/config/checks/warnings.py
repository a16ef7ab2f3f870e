"""Stack warnings: deployable, but probably not what was meant. Reported, never fatal.

Where Kueue would accept a stack that we advise against, the rule is a warning here, never an
error, and says so: a ClusterQueue whose nominal quotas are all 0 with no cohort (Kueue v0.19.2
accepts any non-negative ``nominalQuota``, ``pkg/webhooks/clusterqueue_webhook.go``),
``reclaimWithinCohort`` or ``borrowWithinCohort`` without a cohort (Kueue ignores them:
``pkg/scheduler/preemption/preemption.go`` ``findCandidates`` looks at other ClusterQueues only
when ``cq.HasParent()``), a ``parentName`` naming a cohort the stack does not declare (Kueue
creates it implicitly: ``pkg/cache/hierarchy/manager.go`` ``UpdateCohortEdge`` and
``getOrCreateCohort``; an implicit cohort has no quota of its own).
"""

from __future__ import annotations

from ..platform import PlatformConfig
from ..problems import Problems, did_you_mean
from ..quota import QuotaConfig


def stack_warnings(cfg: PlatformConfig) -> Problems:
    """Slices without any team (nothing can be queued through Kueue, the slices stay idle), and
    corroboration on an adopted cluster (Workload Identity cannot be checked)."""
    warnings = Problems()
    if not cfg.teams and cfg.slice_pools:
        slices = sum(pool.count for pool in cfg.slice_pools)
        warnings.add(
            ("teams",),
            f"no teams: the stack builds {slices} slice(s) but no ClusterQueue or LocalQueue, so no job can "
            "be admitted through Kueue; add tpu-platform:teams",
        )
    if cfg.hotswap.enabled and cfg.hotswap.compute_corroboration and cfg.cluster.mode == "adopt":
        warnings.add(
            ("hotswap", "computeCorroboration"),
            "the cluster is adopted, so the stack cannot see whether Workload Identity is on: the adopted "
            f"cluster needs the workload pool {cfg.project}.svc.id.goog and the GKE metadata server "
            "(workloadMetadataConfig mode GKE_METADATA) on a pool the controller can run on, or every "
            "Compute Engine read fails and suspect nodes take the conservative path",
        )
    cluster = cfg.cluster
    if (
        cluster.mode == "create"
        and cluster.ip_endpoint_mode == "public"
        and not cluster.master_authorized_cidrs
    ):
        warnings.add(
            ("cluster", "ipEndpoint"),
            "the control plane's public IP endpoint accepts connections from anywhere (credentials are "
            "still needed): list masterAuthorizedCidrs, or use controlPlaneAccess: dns and ipEndpoint: off",
        )
    _advice_stricter_than_kueue(cfg, warnings)
    return warnings


def _nominal_is_zero(entry: QuotaConfig) -> bool:
    return not (entry.slices or entry.chips)


def _advice_stricter_than_kueue(cfg: PlatformConfig, warnings: Problems) -> None:
    for index, team in enumerate(cfg.teams):
        here = ("teams", index)
        if team.cohort_name is None and team.quota and all(_nominal_is_zero(e) for e in team.quota):
            warnings.add(
                (*here, "quota"),
                "every nominal quota is 0 and the team has no cohort to borrow from: Kueue accepts the "
                "ClusterQueue, but it can admit nothing; give it slices or set cohortName",
            )
        if team.cohort_name is None:
            pre = team.preemption
            if pre.reclaim_within_cohort != "Never":
                warnings.add(
                    (*here, "preemption", "reclaimWithinCohort"),
                    "has no effect without a cohort: Kueue accepts and ignores it; set cohortName or "
                    "remove it",
                )
            borrow = pre.borrow_within_cohort
            if borrow is not None and borrow.policy != "Never":
                warnings.add(
                    (*here, "preemption", "borrowWithinCohort"),
                    "has no effect without a cohort: Kueue accepts and ignores it; set cohortName or "
                    "remove it",
                )
    declared = [c.name for c in cfg.cohorts]
    for index, cohort in enumerate(cfg.cohorts):
        parent = cohort.parent_name
        if parent is not None and parent not in declared:
            warnings.add(
                ("cohorts", index, "parentName"),
                f"parent cohort {parent!r} is not declared in tpu-platform:cohorts"
                f"{did_you_mean(parent, declared)}: Kueue creates it implicitly (no quota of its own, no "
                "fair-sharing weight); declare it so the hierarchy is explicit and reviewed",
            )
