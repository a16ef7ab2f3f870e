"""A research group's TPU platform on a GKE cluster it already runs, from tpu-platform's components.

Instead of the all-in-one ``TpuPlatform``, it composes the public components itself: it adopts
the cluster (nothing about the cluster is managed here), adds its own slice pools (two Spot
2x4 slices for experiments and one reserved 4x4 slice), installs Kueue and JobSet, and gives
its two teams queues over exactly those slices.

``research_platform`` builds the group's design from the stack's config; Pulumi.yaml names it
(``tpu-platform:entry``), so ``tpu-platform validate``, ``plan``, ``lint``, ``whatif`` and ``policy``
read this project's stacks through it, and ``plan`` renders this program.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import groupby

import pulumi
from tpu_platform.components import (
    GkeCluster,
    GkeClusterArgs,
    KueueInstall,
    KueueInstallArgs,
    KueueQueues,
    KueueQueuesArgs,
    Priorities,
    PrioritiesArgs,
    TpuSlicePool,
    TpuSlicePoolArgs,
)

from tpu_platform.config import PlatformConfig, StackConfigError, parse_platform
from tpu_platform.slices import expand_slices
from tpu_platform.summary import summarize

NAME = "research"
CONFIG_KEYS = (
    "gcp:project",
    "gcp:region",
    "gcp:zone",
    "tpu-research:clusterName",
    "tpu-research:reservation",
)


def research_platform(config: Mapping[str, str]) -> PlatformConfig:
    """The group's design from a stack's config (``namespace:key`` -> text, as Pulumi hands it to the
    program), validated by the same model the platform's stacks use."""
    missing = [key for key in CONFIG_KEYS if not config.get(key)]
    if missing:
        raise StackConfigError([f"{key}: required; set it: pulumi config set {key} VALUE" for key in missing])
    return parse_platform(
        {
            "project": config["gcp:project"],
            "region": config["gcp:region"],
            "zone": config["gcp:zone"],
            "cluster": {"mode": "adopt", "name": config["tpu-research:clusterName"]},
            "slicePools": [
                {"name": "rs-2x4", "topology": "2x4", "count": 2, "capacity": {"type": "spot"}},
                {
                    "name": "rs-4x4",
                    "topology": "4x4",
                    "capacity": {"type": "reservation", "reservation": config["tpu-research:reservation"]},
                },
            ],
            "priorities": [
                {"name": "research-low", "value": 1000},
                {"name": "research-high", "value": 2000},
            ],
            "teams": [
                {"name": "vision", "cohortName": NAME, "quota": [{"topology": "2x4", "slices": 2}]},
                {"name": "language", "cohortName": NAME, "quota": [{"topology": "4x4", "slices": 1}]},
            ],
        }
    )


def pulumi_config() -> dict[str, str]:
    """The keys ``research_platform`` reads, from this program's Pulumi config."""
    values: dict[str, str] = {}
    for key in CONFIG_KEYS:
        namespace, _, name = key.partition(":")
        value = pulumi.Config(namespace).get(name)
        if value is not None:
            values[key] = value
    return values


def main() -> None:
    cfg = research_platform(pulumi_config())
    cluster = GkeCluster(
        NAME,
        GkeClusterArgs(
            project=cfg.project, location=cfg.cluster_location, system_zone=cfg.zone, cluster=cfg.cluster
        ),
    )
    pools = [
        TpuSlicePool(
            f"{NAME}-{group}",
            TpuSlicePoolArgs(
                project=cfg.project,
                cluster_name=cluster.name,
                cluster_location=cluster.location,
                slices=list(specs),
            ),
        )
        for group, specs in groupby(expand_slices(cfg), key=lambda spec: spec.group)
    ]
    kueue = KueueInstall(f"{NAME}-kueue", KueueInstallArgs(config=cfg, provider=cluster.provider))
    Priorities(
        f"{NAME}-priorities", PrioritiesArgs(config=cfg, provider=cluster.provider, kueue_ready=kueue.ready)
    )
    KueueQueues(
        f"{NAME}-queues", KueueQueuesArgs(config=cfg, provider=cluster.provider, kueue_ready=kueue.ready)
    )
    pulumi.export("clusterName", cluster.name)
    pulumi.export(
        "nodePools",
        pulumi.Output.all(*[pool.pool_names for pool in pools]).apply(
            lambda groups: [name for group in groups for name in group]
        ),
    )
    pulumi.export("summary", summarize(cfg).as_dict())


if __name__ == "__main__":
    main()
