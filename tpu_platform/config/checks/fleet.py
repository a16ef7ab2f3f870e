"""Checks of a fleet stack: the manager's queues against the whole fleet, each worker as a platform.

The manager's teams are checked against the fleet view (``PlatformConfig._fleet_view``: every
worker's slices), so a manager quota above the sum of the workers' capacity of a shape is the
same capacity error a single cluster gets. Each worker is then checked as the whole platform it
is (``PlatformConfig.worker_platform``), its problems reported at its place under
``tpu-platform:fleet.workers[i]``.
"""

from __future__ import annotations

from collections.abc import Callable

from ...constants import RESERVED_NAMESPACES
from ..cluster import ClusterConfig
from ..fleet import FLEET_FRAMEWORKS, FleetConfig, FleetWorkerConfig, never_bound_namespaces
from ..platform import PlatformConfig
from ..problems import Loc, Problem, Problems

WORKER_KEYS = frozenset({"project", "region", "zone", "cluster", "slicePools"})


def check_fleet_names(fleet: FleetConfig, cfg: PlatformConfig) -> Problems:
    """Worker and cluster names unique; worker teams are the manager's teams, each once."""
    problems = Problems()
    teams = {team.name for team in cfg.teams}
    seen_workers: dict[str, int] = {}
    clusters = {fleet.manager.cluster.name: "the manager"}
    for index, worker in enumerate(fleet.workers):
        here: Loc = ("fleet", "workers", index)
        if worker.name in seen_workers:
            problems.add(
                (*here, "name"),
                f"worker {worker.name!r} is already workers[{seen_workers[worker.name]}]; "
                "each worker is one MultiKueueCluster: rename it",
            )
        seen_workers.setdefault(worker.name, index)
        owner = clusters.setdefault(worker.cluster.name, f"workers[{index}]")
        if owner != f"workers[{index}]":
            problems.add(
                (*here, "cluster", "name"),
                f"cluster name {worker.cluster.name!r} is already used by {owner}; "
                "give each cluster its own name",
            )
        listed: dict[str, int] = {}
        for position, team in enumerate(worker.teams):
            loc: Loc = (*here, "teams", position, "name")
            if team.name not in teams:
                problems.add(
                    loc,
                    f"no team {team.name!r} in tpu-platform:teams; a worker's queues mirror the manager's "
                    f"(teams: {', '.join(sorted(teams)) or 'none'})",
                )
            elif team.name in listed:
                problems.add(loc, f"team {team.name!r} is already teams[{listed[team.name]}]: merge the two")
            listed.setdefault(team.name, position)
        for name in sorted(teams - set(listed)):
            problems.add(
                (*here, "teams"),
                f"team {name!r} has no entry on worker {worker.name!r}; every worker mirrors the "
                f"manager's queues: add {{name: {name}, quota: [...]}} (slices: 0 with a cohort to only "
                "borrow)",
            )
    return problems


def check_fleet_access(fleet: FleetConfig, cfg: PlatformConfig) -> Problems:
    """Workers the manager's Kueue can reach with the token the stack creates for it, allowed
    to touch only the frameworks the fleet runs, and only in team namespaces."""
    problems = Problems()
    _check_binding_namespaces(cfg, problems)
    for index, framework in enumerate(cfg.kueue.integrations):
        if framework not in FLEET_FRAMEWORKS:
            problems.add(
                ("kueue", "integrations", index),
                f"a fleet's workers grant MultiKueue only {', '.join(FLEET_FRAMEWORKS)}; MultiKueue "
                f"watches every integration on each worker, so {framework!r} would leave the workers "
                "unreachable: remove it",
            )
    for index, worker in enumerate(fleet.workers):
        here: Loc = ("fleet", "workers", index, "cluster")
        if worker.cluster.mode != "create":
            problems.add(
                (*here, "mode"),
                "fleet workers are created by the stack, which lets their DNS endpoint accept the "
                "MultiKueue service-account token (enable_k8s_tokens_via_dns): use mode: create",
            )
        elif worker.cluster.access != "dns":
            problems.add(
                (*here, "controlPlaneAccess"),
                "the manager's Kueue reaches a worker through its DNS-based endpoint with a "
                "service-account token (no network path into the worker's VPC needed): use "
                "controlPlaneAccess: dns",
            )
    if fleet.manager.cluster.mode == "create" and fleet.manager.cluster.access != "dns":
        problems.add(
            ("fleet", "manager", "cluster", "controlPlaneAccess"),
            "pulumi up creates the kubeconfig Secrets on the manager through its DNS-based endpoint; "
            "use controlPlaneAccess: dns",
        )
    return problems


def _check_binding_namespaces(cfg: PlatformConfig, problems: Problems) -> None:
    """Every team namespace gets the worker's MultiKueue RoleBinding: none may be a namespace it
    is never bound in. ``check_teams`` already refuses the reserved ones at the same place."""
    never = never_bound_namespaces(cfg.hotswap.namespace) - RESERVED_NAMESPACES
    for index, team in enumerate(cfg.teams):
        for position, name in enumerate(team.namespace_names()):
            if name not in never:
                continue
            loc: Loc = (
                ("teams", index, "namespaces", position)
                if team.namespaces is not None
                else ("teams", index, "name")
            )
            problems.add(
                loc,
                f"{name!r} is the hotswap controller's namespace (tpu-platform:hotswap.namespace); every "
                "team namespace gets the MultiKueue worker's RoleBinding, which must never reach a "
                "controller's namespace: give the team its own namespace",
            )


def check_fleet_collisions(fleet: FleetConfig, cfg: PlatformConfig) -> Problems:
    """Google Cloud names two clusters of one project would both create: the node service account
    (``<first 24 characters of the cluster name>-nodes``, components/gke_cluster.py) and, when the
    controller image is built, the Artifact Registry repository of the worker's region."""
    problems = Problems()
    accounts: dict[tuple[str, str], str] = {}
    clusters: list[tuple[Loc, str, ClusterConfig, str]] = [
        (("fleet", "manager", "cluster"), cfg.project, fleet.manager.cluster, "the manager")
    ]
    clusters += [
        (("fleet", "workers", i, "cluster"), w.project or cfg.project, w.cluster, f"workers[{i}]")
        for i, w in enumerate(fleet.workers)
    ]
    for loc, project, cluster, who in clusters:
        if cluster.mode != "create" or cluster.node_service_account:
            continue
        key = (project, f"{cluster.name[:24]}-nodes")
        owner = accounts.setdefault(key, who)
        if owner != who:
            problems.add(
                (*loc, "name"),
                f"the node service account {key[1]!r} in project {project!r} is already {owner}'s "
                "(the first 24 characters of the cluster name): make the names differ earlier, or set "
                "nodeServiceAccount",
            )
    if cfg.hotswap.enabled and cfg.hotswap.image is None:
        repositories: dict[tuple[str, str], int] = {}
        for index, worker in enumerate(fleet.workers):
            key = (worker.project or cfg.project, worker.region)
            first = repositories.setdefault(key, index)
            if first != index:
                problems.add(
                    ("fleet", "workers", index, "region"),
                    f"workers[{first}] already builds the controller image into an Artifact Registry "
                    f"repository in {key[1]!r} of project {key[0]!r}: set tpu-platform:hotswap.image",
                )
    return problems


def _worker_loc(
    cfg: PlatformConfig, worker: FleetWorkerConfig, index: int, loc: Loc
) -> tuple[Loc, str] | None:
    """Where a worker platform's problem sits in the fleet stack, and a prefix when the place is
    a section the workers share (priorities, kueue, teams' other settings)."""
    here: Loc = ("fleet", "workers", index)
    if loc and loc[0] in WORKER_KEYS:
        return (*here, *loc), ""
    if len(loc) >= 3 and loc[0] == "teams" and loc[2] == "quota" and isinstance(loc[1], int):
        name = cfg.teams[loc[1]].name
        positions = [i for i, team in enumerate(worker.teams) if team.name == name]
        if not positions:
            return None  # the team has no entry on this worker: check_fleet_names says so
        return (*here, "teams", positions[0], *loc[2:]), ""
    return loc, f"on worker {worker.name}: "


def check_workers(
    cfg: PlatformConfig, fleet: FleetConfig, check: Callable[[PlatformConfig], Problems]
) -> Problems:
    """Every worker as a whole platform, with the single-cluster checks (``check``)."""
    problems = Problems()
    for index, worker in enumerate(fleet.workers):
        for problem in check(cfg.worker_platform(worker)):
            placed = _worker_loc(cfg, worker, index, problem.loc)
            if placed is not None:
                problems.items.append(Problem(placed[0], placed[1] + problem.message))
    return problems
