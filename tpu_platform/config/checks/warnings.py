"""Stack warnings: deployable, but probably not what was meant. Reported, never fatal.

Where Kueue would accept a stack that we advise against, the rule is a warning here, never an
error, and says so: a ClusterQueue whose nominal quotas are all 0 with no cohort (Kueue v0.19.2
accepts any non-negative ``nominalQuota``, ``pkg/webhooks/clusterqueue_webhook.go``),
``reclaimWithinCohort`` or ``borrowWithinCohort`` without a cohort (Kueue ignores them:
``pkg/scheduler/preemption/preemption.go`` ``findCandidates`` looks at other ClusterQueues only
when ``cq.HasParent()``), a ``parentName`` naming a cohort the stack does not declare (Kueue
creates it implicitly: ``pkg/cache/hierarchy/manager.go`` ``UpdateCohortEdge`` and
``getOrCreateCohort``; an implicit cohort has no quota of its own).

A kubeconfig-mode controller says what it lacks or what it needs outside the stack: without Compute
Engine corroboration, what is lost and the key that gets it back; with a named Google identity, that
the cluster's Workload Identity cannot be checked, and the ``gcloud`` commands of the access the stack
does not register (all of it with ``manage: false``; the node pools' tag, which are the cluster's,
with ``manage: true``).
"""

from __future__ import annotations

from ...hotswap import iam_commands
from ...hotswap.iam_commands import GoogleAccess
from ..google_identity import named_google_access
from ..platform import PlatformConfig
from ..problems import Problems, did_you_mean
from ..quota import QuotaConfig
from .kubeconfig_mode import WITHOUT_CORROBORATION


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
    _kubeconfig_controller(cfg, warnings)
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


def _kubeconfig_controller(cfg: PlatformConfig, warnings: Problems) -> None:
    hotswap = cfg.hotswap
    if not (cfg.cluster.reached_by_kubeconfig and cfg.fleet is None and hotswap.enabled):
        return
    if not hotswap.compute_corroboration and not hotswap.settings.force_delete_unconfirmed:
        warnings.add(
            ("hotswap", "computeCorroboration"),
            f"is off: {WITHOUT_CORROBORATION}; on a GKE cluster, name the controller's Google service "
            "account with hotswap.googleIdentity and set computeCorroboration: true to get it back",
        )
    access = named_google_access(cfg)
    if access is None:
        return
    warnings.add(
        ("hotswap", "googleIdentity"),
        "the stack cannot see whether the cluster runs Workload Identity: it needs the workload pool "
        f"{cfg.project}.svc.id.goog and the GKE metadata server (workloadMetadataConfig mode "
        "GKE_METADATA) on a node pool the controller can run on, or every Compute Engine read fails "
        "and suspect nodes take the conservative path",
    )
    warnings.extend(google_identity_steps(cfg).items)


def google_identity_steps(cfg: PlatformConfig) -> Problems:
    """What a named Google identity needs that the stack does not register, as the ``gcloud``
    commands that do it and the roles they grant (``validate``, ``plan``)."""
    steps = Problems()
    access = named_google_access(cfg)
    identity = cfg.hotswap.google_identity
    if access is None or identity is None:
        return steps
    if identity.manage:
        commands = [
            *iam_commands.account_commands(access),
            "# After pulumi up (the stack has created the tag):",
            *iam_commands.tag_id_commands(access),
            *iam_commands.node_pool_commands(access),
        ]
        what = (
            "true: the stack registers the custom roles, their bindings, the Workload Identity binding "
            "and the tag, for an account that must exist; the TPU node pools are the cluster's, not the "
            "stack's, so they carry the tag only once you run (the stack exports them, IDs filled in, "
            "as hotswapGoogleIdentity)"
        )
    else:
        commands = iam_commands.setup_commands(access)
        what = (
            "false: the stack registers no Google resource; Compute Engine corroboration works once you "
            "run, as a project IAM and tag administrator (the stack exports them as hotswapGoogleIdentity)"
        )
    body = "\n".join(f"    {line}" for line in commands)
    steps.add(("hotswap", "googleIdentity", "manage"), f"{what}:\n{body}\n  {roles_line(access)}")
    return steps


def roles_line(access: GoogleAccess) -> str:
    """The grants, in a line: each custom role's permissions, and the Workload Identity binding."""
    vm_role, operations_role = access.roles()
    roles = access.roles()
    return (
        f"roles for {access.service_account}: {vm_role} ({', '.join(roles[vm_role])}; only on VMs "
        f"carrying the tag), {operations_role} ({', '.join(roles[operations_role])}); "
        f"roles/iam.workloadIdentityUser on it for {access.workload_identity_member}"
    )
