"""The kubeconfig check of ``validate`` and ``plan``: ``config.checks.kubeconfig_file`` on files read now.

``validate`` reports a missing file or context as a problem of the stack; ``plan`` renders without
the file (the committed plan of a kubeconfig stack is made where it does not exist, as in CI) and
says what ``pulumi up`` will need.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pydantic import ValidationError

from .config import ClusterConfig, PlatformConfig, StackConfigError
from .config.checks.kubeconfig_file import ENV, Read, kubeconfig_problems, kubeconfig_source
from .config.decode import DecodeError, decode_value, pulumi_text
from .config.problems import PROJECT_NAMESPACE, Problems
from .plan.stacks import load_stack_config
from .project import ProjectError, find_project


def project_folder() -> Path:
    """Where Pulumi runs the program: the project folder, else (no project) the working directory."""
    try:
        return find_project().root
    except ProjectError:
        return Path.cwd()


def cluster_problems(
    cluster: ClusterConfig | None, root: Path, environ: Mapping[str, str] | None = None
) -> Problems:
    """The problems of a kubeconfig-mode cluster's file and context, its files read now."""
    if cluster is None or not cluster.reached_by_kubeconfig:
        return Problems()
    env = os.environ if environ is None else environ
    home = Path(env.get("HOME") or Path.home())
    source = kubeconfig_source(cluster.kubeconfig, env=env.get(ENV), home=home, root=root)
    return kubeconfig_problems(cluster, source, {path: _read(path) for path in source.paths})


def _read(path: Path) -> Read:
    try:
        return path.read_text()
    except OSError as err:
        return err
    except UnicodeDecodeError:
        return OSError(0, "not a text file")


def platform_cluster(cfg: PlatformConfig) -> ClusterConfig | None:
    """The one cluster a stack reaches (a fleet's are GKE clusters: none to check here)."""
    return None if cfg.fleet is not None else cfg.cluster


def stack_file_cluster(path: Path) -> ClusterConfig | None:
    """The ``tpu-platform:cluster`` section of a stack file on its own, for a stack whose other
    sections fail: ``None`` when the file or that section does not read."""
    try:
        config = load_stack_config(path)
    except StackConfigError:
        return None
    raw = config.get(f"{PROJECT_NAMESPACE}:cluster")
    if raw is None or f"{PROJECT_NAMESPACE}:fleet" in config:
        return None
    try:
        return ClusterConfig.model_validate(decode_value(PROJECT_NAMESPACE, "cluster", pulumi_text(raw)))
    except (DecodeError, ValidationError):
        return None


def kubeconfig_warnings(cfg: PlatformConfig, root: Path) -> list[str]:
    """The problems as ``plan`` says them: the offline plan does without the file."""
    return [
        f"{problem.line} (the offline plan is made without it; pulumi up needs it)"
        for problem in cluster_problems(platform_cluster(cfg), root).items
    ]
