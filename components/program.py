"""The stack program behind ``pulumi up``: read the stack through ``pulumi.Config``, build it."""

from __future__ import annotations

import pulumi
from pulumi.runtime import config as runtime_config

from tpu_platform.config import PlatformConfig, read_stack
from tpu_platform.config.checks import stack_warnings
from tpu_platform.summary import summarize

from .fleet import TpuFleet, TpuFleetArgs
from .gke_cluster import GkeCluster
from .platform import TpuPlatform, TpuPlatformArgs

PLATFORM_NAME = "tpu"


def _get(namespace: str, key: str) -> str | None:
    """A stack value's text as Pulumi passes it; ``read_stack`` decodes it (``config.decode``)."""
    return pulumi.Config(namespace).get(key)


def _present_keys(namespace: str) -> list[str]:
    """Keys set in a namespace; ``pulumi.Config`` has no listing, the runtime's config does."""
    everything = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    prefix = f"{namespace}:"
    return [key.removeprefix(prefix) for key in everything if key.startswith(prefix)]


def read_platform_config() -> PlatformConfig:
    """The validated stack; raises ``StackConfigError`` before any resource is registered."""
    return read_stack(_get, _present_keys)


def fleet_program(cfg: PlatformConfig) -> TpuFleet:
    """A fleet stack: the manager and every worker, with what consumers of each need."""
    fleet = TpuFleet(PLATFORM_NAME, TpuFleetArgs(config=cfg))
    pulumi.export("clusterName", fleet.manager.name)
    pulumi.export("clusterLocation", fleet.manager.location)
    pulumi.export("kubeconfig", fleet.manager.kubeconfig)
    pulumi.export("controlPlaneAccess", cfg.cluster.access)
    pulumi.export("controlPlaneServer", fleet.manager.server.apply(lambda host: f"https://{host}"))
    workers = {name: platform.cluster for name, platform in fleet.workers.items()}
    pulumi.export(
        "workers",
        {
            name: {"clusterName": gke.name, "clusterLocation": gke.location, "kubeconfig": gke.kubeconfig}
            for name, gke in workers.items()
            if isinstance(gke, GkeCluster)  # always: a fleet's workers are created (check_workers)
        },
    )
    pulumi.export("summary", summarize(cfg).as_dict())
    return fleet


def stack_program() -> TpuPlatform | TpuFleet:
    """Validate the stack, then declare the platform (or the fleet) and export what consumers need."""
    cfg = read_platform_config()
    for line in stack_warnings(cfg).lines:
        pulumi.log.warn(line)
    if cfg.fleet is not None:
        return fleet_program(cfg)
    platform = TpuPlatform(PLATFORM_NAME, TpuPlatformArgs(config=cfg))
    cluster = platform.cluster
    pulumi.export("clusterName", cluster.name)
    if isinstance(cluster, GkeCluster):
        pulumi.export("clusterLocation", cluster.location)
        pulumi.export("kubeconfig", cluster.kubeconfig)
        pulumi.export("controlPlaneAccess", cfg.cluster.access)
        pulumi.export("controlPlaneServer", cluster.server.apply(lambda host: f"https://{host}"))
    else:  # the user's own kubeconfig: nothing to hand out but which context the stack used
        pulumi.export("kubeconfigContext", cfg.cluster.context or "(current context)")
    if platform.google_identity_steps is not None:  # what the stack's named Google identity needs
        pulumi.export("hotswapGoogleIdentity", platform.google_identity_steps)
    pulumi.export("summary", summarize(cfg).as_dict())
    return platform
