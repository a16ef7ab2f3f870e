"""``TpuFleet``: a CPU-only MultiKueue manager and N worker platforms, in one stack.

Each worker is a ``TpuPlatform`` as a single-cluster stack builds it, plus the identity the
manager's Kueue uses there (``tpu_platform.kueue.multikueue``). The manager gets Kueue and JobSet
(MultiKueue is a Beta feature gate, on by default since Kueue 0.9: ``pkg/features/kube_features.go``
at v0.19.2), the priorities, the fleet's ClusterQueues with MultiKueue's AdmissionCheck, the
LocalQueues, and per worker a kubeconfig Secret and a MultiKueueCluster. JobSets are submitted to
the manager; Kueue defaults their ``spec.managedBy`` to ``kueue.x-k8s.io/multikueue`` when their
queue's ClusterQueue has the check (``site/content/en/docs/tasks/run/multikueue/jobsets.md``), so
the manager's JobSet controller leaves them alone (it skips JobSets with a custom ``spec.managedBy``:
the JobSet v0.12.0 CRD's description of the field) and the copy on the worker runs; the adapter clears
``managedBy`` on that copy (``pkg/controller/jobs/jobset/jobset_multikueue_adapter.go``).
"""

from __future__ import annotations

import base64
import functools
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from tpu_platform.config import PlatformConfig
from tpu_platform.config.fleet import FleetWorkerConfig, never_bound_namespaces
from tpu_platform.kueue import multikueue as mk

from .gke_cluster import GkeCluster, GkeClusterArgs
from .kube_object import KubeObject
from .kueue_install import KueueInstall, KueueInstallArgs
from .kueue_queues import KueueQueues, KueueQueuesArgs
from .platform import TpuPlatform, TpuPlatformArgs
from .priorities import Priorities, PrioritiesArgs


@dataclass(frozen=True)
class TpuFleetArgs:
    """A validated fleet stack (``PlatformConfig`` with ``fleet`` set)."""

    config: PlatformConfig


def _token(data: Any) -> str:
    """The token the token controller wrote into the Secret (``data.token``, base64)."""
    encoded = (data or {}).get("token") if isinstance(data, dict) else None
    if not encoded:
        raise ValueError(
            "the MultiKueue token Secret has no data.token yet; the API server's token controller "
            "fills it in after creation"
        )
    return base64.b64decode(encoded).decode()


def _worker_kubeconfig(worker: FleetWorkerConfig, parts: list[Any]) -> str:
    """The worker's kubeconfig once its DNS endpoint and token are known."""
    server, data = parts
    return mk.worker_kubeconfig(worker, f"https://{server}", _token(data), None)


class WorkerAccess(pulumi.ComponentResource):
    """On one worker: MultiKueue's ServiceAccount, its write role bound by a RoleBinding in each
    team namespace, its cluster-wide watch role, and its token Secret.

    Rotation: the token Secret's ``metadata.name`` carries ``credentialsRotation`` under one
    logical name, so raising it is a replacement (pulumi-kubernetes marks ``.metadata.name``
    force-new). No ``delete_before_replace``: pulumi-kubernetes asks for delete-before-replace
    only when the replacement keeps the old name (``provider.go``, ``Diff``), so with a new name
    Pulumi's default holds: create the new Secret (waiting for its token), update what depends on
    it (the manager's kubeconfig Secret), and delete the old Secret last, which invalidates its
    token. Deleting first would leave the manager with a revoked token until the update ends.
    """

    token_secret: k8s.core.v1.Secret

    def __init__(
        self,
        name: str,
        worker: FleetWorkerConfig,
        *,
        frameworks: list[str],
        namespaces: dict[str, pulumi.Resource | None],
        never_bound: frozenset[str],
        provider: k8s.Provider,
        ready: list[pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("tpu-platform:fleet:WorkerAccess", name, None, opts)
        objects = mk.worker_access_objects(worker, frameworks, list(namespaces), never_bound)

        def options(*deps: pulumi.Resource | None) -> pulumi.ResourceOptions:
            found = [dep for dep in deps if dep is not None]
            return pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[*ready, *found])

        sa = objects.service_account
        account = k8s.core.v1.ServiceAccount(
            f"{name}-sa",
            metadata=sa["metadata"],
            automount_service_account_token=sa["automountServiceAccountToken"],
            opts=options(),
        )
        role = k8s.rbac.v1.ClusterRole(
            f"{name}-role", metadata=objects.role["metadata"], rules=objects.role["rules"], opts=options()
        )
        watch_role = k8s.rbac.v1.ClusterRole(
            f"{name}-watch-role",
            metadata=objects.watch_role["metadata"],
            rules=objects.watch_role["rules"],
            opts=options(),
        )
        binding = objects.watch_binding
        k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-watch-binding",
            metadata=binding["metadata"],
            role_ref=binding["roleRef"],
            subjects=binding["subjects"],
            opts=options(account, watch_role),
        )
        for binding in objects.role_bindings:
            namespace = binding["metadata"]["namespace"]
            k8s.rbac.v1.RoleBinding(
                f"{name}-binding-{namespace}",
                metadata=binding["metadata"],
                role_ref=binding["roleRef"],
                subjects=binding["subjects"],
                opts=options(account, role, namespaces[namespace]),
            )
        # pulumi-kubernetes waits until the token controller has filled data.token in
        # (pulumi/pulumi-kubernetes#2048, the service-account-token awaiter).
        token = objects.token
        self.token_secret = k8s.core.v1.Secret(
            f"{name}-token",
            metadata=token["metadata"],
            type=token["type"],
            opts=options(account),
        )
        self.register_outputs(
            {
                "serviceAccount": mk.WORKER_SERVICE_ACCOUNT,
                "roleBindings": [b["metadata"]["namespace"] for b in objects.role_bindings],
                "tokenSecret": token["metadata"]["name"],
            }
        )


class TpuFleet(pulumi.ComponentResource):
    """The manager cluster and its queues, the workers, and the MultiKueue wiring between them."""

    manager: GkeCluster
    workers: dict[str, TpuPlatform]

    def __init__(self, name: str, args: TpuFleetArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("tpu-platform:index:Fleet", name, None, opts)
        cfg = args.config
        fleet = cfg.fleet
        if fleet is None:
            raise ValueError("TpuFleet needs a fleet stack (tpu-platform:fleet)")
        child = pulumi.ResourceOptions(parent=self)
        self.workers = {}
        access: dict[str, WorkerAccess] = {}
        frameworks = cfg.kueue.frameworks()
        never_bound = never_bound_namespaces(cfg.hotswap.namespace)
        for worker in fleet.workers:
            platform = TpuPlatform(
                f"{name}-{worker.name}",
                TpuPlatformArgs(config=cfg.worker_platform(worker), fleet_worker=True),
                opts=child,
            )
            self.workers[worker.name] = platform
            access[worker.name] = WorkerAccess(
                f"{name}-{worker.name}-multikueue",
                worker,
                frameworks=frameworks,
                namespaces={
                    ns: platform.queues.namespaces.get(ns) for ns in mk.binding_namespaces(cfg.teams)
                },
                never_bound=never_bound,
                provider=platform.cluster.provider,
                ready=list(platform.kueue.ready),
                opts=child,
            )
        self.manager = GkeCluster(
            f"{name}-manager-cluster",
            GkeClusterArgs(
                project=cfg.project, location=cfg.cluster_location, system_zone=cfg.zone, cluster=cfg.cluster
            ),
            opts=child,
        )
        provider = self.manager.provider
        system_pool = [self.manager.system_pool] if self.manager.system_pool is not None else []
        self.kueue = KueueInstall(
            f"{name}-manager-kueue",
            KueueInstallArgs(config=cfg, provider=provider, depends_on=system_pool),
            opts=child,
        )
        self.priorities = Priorities(
            f"{name}-manager-priorities",
            PrioritiesArgs(config=cfg, provider=provider, kueue_ready=self.kueue.ready),
            opts=child,
        )
        check = self._multikueue(name, cfg, access, provider)
        self.queues = KueueQueues(
            f"{name}-manager-queues",
            KueueQueuesArgs(
                config=cfg, provider=provider, kueue_ready=[*self.kueue.ready, check], multikueue=True
            ),
            opts=child,
        )
        self.register_outputs(
            {"manager": self.manager.name, "workers": {w: p.cluster.name for w, p in self.workers.items()}}
        )

    def _multikueue(
        self, name: str, cfg: PlatformConfig, access: dict[str, WorkerAccess], provider: k8s.Provider
    ) -> pulumi.Resource:
        """Kubeconfig Secrets and MultiKueueClusters, the MultiKueueConfig, then the check."""
        assert cfg.fleet is not None
        ready = list(self.kueue.ready)
        clusters: list[pulumi.Resource] = []
        for worker in cfg.fleet.workers:
            platform = self.workers[worker.name]
            gke = platform.cluster
            assert isinstance(gke, GkeCluster), "fleet workers are GKE clusters (check_workers)"
            token = access[worker.name].token_secret
            kubeconfig: pulumi.Output[str] = pulumi.Output.all(gke.server, token.data).apply(
                functools.partial(_worker_kubeconfig, worker)
            )
            secret = k8s.core.v1.Secret(
                f"{name}-manager-kubeconfig-{worker.name}",
                metadata={
                    "name": mk.kubeconfig_secret_name(worker),
                    "namespace": mk.KUEUE_NAMESPACE,
                    "labels": dict(mk.MANAGED_LABELS),
                },
                string_data={"kubeconfig": pulumi.Output.secret(kubeconfig)},  # type: ignore[arg-type]
                # Updated in place on a rotation, after the new token exists and before the old
                # token Secret is deleted (WorkerAccess).
                opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[*ready, token]),
            )
            clusters.append(
                KubeObject(
                    f"{name}-manager-mkcluster-{worker.name}",
                    mk.multikueue_cluster(worker),
                    opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[*ready, secret]),
                )
            )
        config = KubeObject(
            f"{name}-manager-mkconfig",
            mk.multikueue_config(cfg.fleet),
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[*ready, *clusters]),
        )
        return KubeObject(
            f"{name}-manager-check",
            mk.admission_check(),
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[*ready, config]),
        )
