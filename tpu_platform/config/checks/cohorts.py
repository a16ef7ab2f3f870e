"""Checks of the ``cohorts`` section: distinct names, declared parents, no cycles, their quotas."""

from __future__ import annotations

from ..platform import PlatformConfig
from ..problems import Loc, Problems
from .quota import check_quota_entries


def check_cohorts(cfg: PlatformConfig) -> Problems:
    """Distinct names, declared parents, weights that take effect, quotas, no cycles."""
    problems = Problems()
    declared: dict[str, int] = {}
    for index, cohort in enumerate(cfg.cohorts):
        if cohort.name in declared:
            problems.add(
                ("cohorts", index, "name"), f"cohort {cohort.name!r} is also cohorts[{declared[cohort.name]}]"
            )
        else:
            declared[cohort.name] = index
    for index, cohort in enumerate(cfg.cohorts):
        here: Loc = ("cohorts", index)
        parent = cohort.parent_name
        if cohort.fair_sharing_weight is not None and not cfg.kueue.fair_sharing.enabled:
            problems.add(
                (*here, "fairSharingWeight"),
                "has no effect while tpu-platform:kueue.fairSharing.enabled is false; remove it or enable "
                "fair sharing",
            )
        check_quota_entries(
            cohort.quota, here, has_parent=parent is not None, kind="cohort", cfg=cfg, problems=problems
        )
    # Cycles: Kueue deactivates every cohort on a cycle.
    parents = {c.name: c.parent_name for c in cfg.cohorts}
    reported: set[str] = set()
    for start in parents:
        path: list[str] = []
        node: str | None = start
        while node is not None and node in parents and node not in path:
            path.append(node)
            node = parents[node]
        if node is not None and node in path:
            cycle = path[path.index(node) :]
            if not reported.intersection(cycle):
                reported.update(cycle)
                problems.add(
                    ("cohorts", declared[node], "parentName"),
                    f"cohorts form a cycle ({' -> '.join([*cycle, node])}); Kueue deactivates every cohort "
                    f"on "
                    "it: make one of them a root (no parentName)",
                )
    return problems
