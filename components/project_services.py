"""``ProjectServices``: the Google Cloud APIs the stack needs, enabled before what uses them.

Each is a pulumi-gcp 10.2.0 ``projects.Service``; ``disable_on_destroy=False`` so destroying a stack
never turns off an API other workloads in the project rely on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

BASE_SERVICES = (
    "compute.googleapis.com",  # networks, routers, firewall rules, TPU VMs
    "container.googleapis.com",  # GKE
    "containerfilesystem.googleapis.com",  # image streaming on the TPU pools (gcfsConfig)
    "iam.googleapis.com",  # the node service account
    "cloudresourcemanager.googleapis.com",  # project IAM bindings
    "logging.googleapis.com",
    "monitoring.googleapis.com",  # managed Prometheus
    "pubsub.googleapis.com",  # the cluster's upgrade notifications
)
BUILD_SERVICES = ("artifactregistry.googleapis.com",)  # the hotswap image repository


def needed_services(builds_image: bool) -> list[str]:
    return [*BASE_SERVICES, *(BUILD_SERVICES if builds_image else ())]


@dataclass(frozen=True)
class ProjectServicesArgs:
    project: str
    services: Sequence[str]


class ProjectServices(pulumi.ComponentResource):
    """One ``projects.Service`` per API; ``ready`` is what dependents wait for."""

    ready: list[pulumi.Resource]

    def __init__(
        self, name: str, args: ProjectServicesArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("tpu-platform:project:Services", name, None, opts)
        self.ready = [
            gcp.projects.Service(
                f"{name}-{service.split('.')[0]}",
                project=args.project,
                service=service,
                disable_on_destroy=False,
                disable_dependent_services=False,
                opts=pulumi.ResourceOptions(parent=self),
            )
            for service in args.services
        ]
        self.register_outputs({"services": list(args.services)})
