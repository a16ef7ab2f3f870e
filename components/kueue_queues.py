"""``KueueQueues``: team namespaces, ResourceFlavors, Cohorts, ClusterQueues and LocalQueues.

The objects are rendered by ``tpu_platform.kueue.objects`` (``kueue.x-k8s.io/v1beta2``); this
component only registers them with the cluster's provider, each Kueue object after the Kueue
install (CRDs registered, webhooks serving) and after the objects it references, so Pulumi
also deletes them in the right order (Kueue keeps a finalizer on flavors and queues in use).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from tpu_platform.config import PlatformConfig
from tpu_platform.kueue import queue_objects
from tpu_platform.kueue.multikueue import with_multikueue_check
from tpu_platform.kueue.provisioning import provisioning_objects


@dataclass(frozen=True)
class KueueQueuesArgs:
    """The stack's teams and cohorts, the cluster's provider, and the Kueue install to wait for."""

    config: PlatformConfig
    provider: k8s.Provider
    kueue_ready: Sequence[pulumi.Resource] = field(default_factory=tuple)
    # A fleet's manager: every ClusterQueue carries MultiKueue's check (created before, in
    # ``kueue_ready``) instead of any worker-side check such as DWS provisioning.
    multikueue: bool = False


def _custom(name: str, obj: dict[str, Any], opts: pulumi.ResourceOptions) -> k8s.apiextensions.CustomResource:
    return k8s.apiextensions.CustomResource(
        name,
        api_version=obj["apiVersion"],
        kind=obj["kind"],
        metadata=obj["metadata"],
        spec=obj["spec"],
        opts=opts,
    )


class KueueQueues(pulumi.ComponentResource):
    """The queueing objects of every team, wired in dependency order."""

    namespaces: dict[str, k8s.core.v1.Namespace]
    flavors: dict[str, k8s.apiextensions.CustomResource]
    cohorts: dict[str, k8s.apiextensions.CustomResource]
    cluster_queues: dict[str, k8s.apiextensions.CustomResource]
    local_queues: dict[tuple[str, str], k8s.apiextensions.CustomResource]

    def __init__(self, name: str, args: KueueQueuesArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("tpu-platform:kueue:Queues", name, None, opts)
        cfg = args.config
        objects = queue_objects(cfg)
        ready = list(args.kueue_ready)

        def options(*depends_on: pulumi.Resource) -> pulumi.ResourceOptions:
            return pulumi.ResourceOptions(
                parent=self, provider=args.provider, depends_on=[*ready, *depends_on]
            )

        self.namespaces = {}
        for ns in objects.namespaces:
            ns_name = ns["metadata"]["name"]
            self.namespaces[ns_name] = k8s.core.v1.Namespace(
                f"{name}-ns-{ns_name}",
                metadata=ns["metadata"],
                opts=pulumi.ResourceOptions(parent=self, provider=args.provider),
            )
        self.flavors = {
            rf["metadata"]["name"]: _custom(f"{name}-flavor-{rf['metadata']['name']}", rf, options())
            for rf in objects.resource_flavors
        }
        self.cohorts = {}
        pending = list(objects.cohorts)
        while pending:  # parents before children (the stack validation rules out cycles)
            progressed = False
            for cohort in list(pending):
                parent = cohort["spec"].get("parentName")
                if parent is not None and parent not in self.cohorts:
                    continue
                cohort_name = cohort["metadata"]["name"]
                deps: list[pulumi.Resource] = [self.cohorts[parent]] if parent is not None else []
                deps += self._flavor_deps(cohort)
                self.cohorts[cohort_name] = _custom(f"{name}-cohort-{cohort_name}", cohort, options(*deps))
                pending.remove(cohort)
                progressed = True
            if not progressed:
                raise ValueError(
                    f"cohorts with undeclared or cyclic parents: {[c['metadata']['name'] for c in pending]}"
                )
        # DWS: the ProvisioningRequestConfig, then the AdmissionCheck naming it, before any
        # ClusterQueue that lists the check (an unknown check makes the ClusterQueue inactive).
        self.provisioning: dict[str, k8s.apiextensions.CustomResource] = {}
        for obj in [] if args.multikueue else provisioning_objects(cfg):
            deps = list(self.provisioning.values())
            kind = obj["kind"].lower()
            self.provisioning[obj["kind"]] = _custom(
                f"{name}-{kind}-{obj['metadata']['name']}", obj, options(*deps)
            )
        self.cluster_queues = {}
        for team, rendered in objects.cluster_queues.items():
            cq = with_multikueue_check(rendered) if args.multikueue else rendered
            cq_deps = self._flavor_deps(cq)
            if "admissionChecksStrategy" in cq["spec"] and not args.multikueue:
                cq_deps.append(self.provisioning["AdmissionCheck"])
            cohort_name = cq["spec"].get("cohortName")
            if cohort_name in self.cohorts:
                cq_deps.append(self.cohorts[cohort_name])
            self.cluster_queues[team] = _custom(f"{name}-cq-{cq['metadata']['name']}", cq, options(*cq_deps))
        self.local_queues = {}
        for lq in objects.local_queues:
            lq_deps: list[pulumi.Resource] = [self.cluster_queues[lq.team]]
            if lq.namespace in self.namespaces:
                lq_deps.append(self.namespaces[lq.namespace])
            self.local_queues[(lq.namespace, lq.name)] = _custom(
                f"{name}-lq-{lq.namespace}-{lq.name}", lq.body, options(*lq_deps)
            )
        self.register_outputs(
            {
                "clusterQueues": sorted(cq["metadata"]["name"] for cq in objects.cluster_queues.values()),
                "localQueues": sorted(f"{lq.namespace}/{lq.name}" for lq in objects.local_queues),
                "resourceFlavors": sorted(self.flavors),
            }
        )

    def _flavor_deps(self, obj: dict[str, Any]) -> list[pulumi.Resource]:
        names = [f["name"] for group in obj["spec"].get("resourceGroups", []) for f in group["flavors"]]
        return [self.flavors[n] for n in names if n in self.flavors]
