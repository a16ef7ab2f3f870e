"""The ``fleet`` section: one CPU-only manager cluster and N worker platforms behind one queue.

Kueue's MultiKueue (``site/content/en/docs/concepts/multikueue.md`` at v0.19.2) runs the team
ClusterQueues on a manager cluster whose AdmissionCheck (controller ``kueue.x-k8s.io/multikueue``)
copies each workload to the worker clusters of a MultiKueueConfig; the first worker that admits
it runs it. Each worker is a whole platform as a single-cluster stack builds it (slice pools,
Kueue, JobSet, the hotswap controller), with the same ClusterQueue and LocalQueue names as the
manager and quotas from its own slices (``setup_multikueue.md``: the worker mirrors the manager's
namespaces and LocalQueues).
"""

from __future__ import annotations

from pydantic import Field, field_validator

from ..constants import RESERVED_NAMESPACES
from .base import StackModel, check_dns_label
from .cluster import ClusterConfig
from .formats import check_project_id
from .pools import SlicePoolConfig
from .quota import QuotaConfig

# The frameworks a fleet's Kueue may manage: the worker's MultiKueue role grants exactly what
# Kueue's create-multikueue-kubeconfig.sh grants for these (tpu_platform.kueue.multikueue).
FLEET_FRAMEWORKS = ("batch/job", "jobset.x-k8s.io/jobset")
# MultiKueueConfig.spec.clusters has maxItems 20 (kueue.x-k8s.io_multikueueconfigs.yaml, v0.19.2).
MAX_WORKERS = 20


def never_bound_namespaces(hotswap_namespace: str) -> frozenset[str]:
    """Namespaces a worker never binds MultiKueue's write role in, whatever the teams say: those of
    Kubernetes, GKE, Kueue and JobSet (``RESERVED_NAMESPACES``) and the hotswap controller's, so a
    leaked manager token cannot create or delete anything next to the controllers."""
    return RESERVED_NAMESPACES | {hotswap_namespace}


class FleetManagerConfig(StackModel):
    """The manager: a small CPU-only cluster that only queues (no TPU pools, no hotswap)."""

    cluster: ClusterConfig


class WorkerTeamConfig(StackModel):
    """A team's ClusterQueue quota on one worker, from that worker's own slices."""

    name: str
    quota: list[QuotaConfig] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_dns_label(value, "team name")


class FleetWorkerConfig(StackModel):
    """One worker cluster: a full platform in its own region and zone."""

    name: str = Field(description="The MultiKueueCluster name on the manager.")
    project: str | None = Field(None, description="Default: gcp:project.")
    region: str
    zone: str
    cluster: ClusterConfig
    slice_pools: list[SlicePoolConfig] = Field(min_length=1, max_length=256)
    teams: list[WorkerTeamConfig] = Field(default_factory=list, max_length=1000)
    credentials_rotation: int = Field(
        0,
        ge=0,
        lt=10**6,
        description=(
            "Raise it to replace the worker's MultiKueue token: pulumi up creates a new token Secret, "
            "rewrites the manager's kubeconfig Secret, then deletes the old token Secret (revoking it)."
        ),
    )

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_dns_label(value, "worker name")

    @field_validator("project")
    @classmethod
    def _project(cls, value: str | None) -> str | None:
        return None if value is None else check_project_id(value)


class FleetConfig(StackModel):
    """The manager and its workers; the stack's teams are the manager's ClusterQueues."""

    manager: FleetManagerConfig
    workers: list[FleetWorkerConfig] = Field(min_length=1, max_length=MAX_WORKERS)
