"""Checks of the ``cluster`` section: adopted clusters, GKE versions, authorized networks."""

from __future__ import annotations

import re

from ... import catalog
from ..platform import PlatformConfig
from ..problems import Loc, Problems


def parse_version(version: str) -> tuple[int, ...] | None:
    """``1.31.2-gke.1115000`` -> ``(1, 31, 2, 1115000)``; None for aliases like ``latest``."""
    match = re.match(r"^(\d+)\.(\d+)(?:\.(\d+))?(?:-gke\.(\d+))?$", version)
    if not match:
        return None
    return tuple(int(g) if g is not None else 0 for g in match.groups())


def check_cluster(cfg: PlatformConfig) -> Problems:
    """Creation-only keys on an adopted cluster, TPU-capable GKE versions, IPv4 CIDRs."""
    problems = Problems()
    cluster = cfg.cluster
    if cluster.mode == "adopt":
        for key in cluster.creation_only_fields_set():
            problems.add(
                ("cluster", key),
                "only applies when the platform creates the cluster (mode: create); "
                "remove it when adopting an existing cluster",
            )
    if cluster.min_master_version:
        check_tpu_version(("cluster", "minMasterVersion"), cluster.min_master_version, problems)
    return problems


def check_tpu_version(loc: Loc, version: str, problems: Problems) -> None:
    """Versions older than the first GKE release with TPU v6e on Standard clusters."""
    parsed = parse_version(version)
    minimum = parse_version(catalog.MIN_GKE_VERSION)
    if parsed is not None and minimum is not None and parsed < minimum:
        problems.add(
            loc,
            f"TPU v6e on GKE Standard needs GKE {catalog.MIN_GKE_VERSION} or later; got {version!r}",
        )
