"""The stack program behind ``pulumi up``: read the stack through ``pulumi.Config``, build it."""

from __future__ import annotations

import pulumi
from pulumi.runtime import config as runtime_config

from tpu_platform.config import PlatformConfig, read_stack
from tpu_platform.config.checks import stack_warnings
from tpu_platform.summary import summarize

from .fleet import TpuFleet, TpuFleetArgs
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
    pulumi.export(
        "workers",
        {
            name: {
                "clusterName": platform.cluster.name,
                "clusterLocation": platform.cluster.location,
                "kubeconfig": platform.cluster.kubeconfig,
            }
            for name, platform in fleet.workers.items()
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
    pulumi.export("clusterName", platform.cluster.name)
    pulumi.export("clusterLocation", platform.cluster.location)
    pulumi.export("kubeconfig", platform.cluster.kubeconfig)
    pulumi.export("controlPlaneAccess", cfg.cluster.access)
    pulumi.export("controlPlaneServer", platform.cluster.server.apply(lambda host: f"https://{host}"))
    pulumi.export("summary", summarize(cfg).as_dict())
    return platform
