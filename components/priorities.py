"""``Priorities``: a PriorityClass and a Kueue WorkloadPriorityClass per stack priority.

Both carry the same name and value: the JobSet label ``kueue.x-k8s.io/priority-class`` names
the WorkloadPriorityClass (admission order, Kueue preemption), the pods' ``priorityClassName``
names the PriorityClass (kube-scheduler preemption, hotswap). A PriorityClass's value is immutable,
so changing it replaces the class; a WorkloadPriorityClass's value may change in place (Kueue 0.19.2's
CRD has no rule on it and no webhook validates it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from tpu_platform.config import PlatformConfig
from tpu_platform.kueue import priority_objects
from tpu_platform.kueue.entitlements import (
    GRANTS_ANNOTATION,
    POLICY_NAME,
    TEAMS_ANNOTATION,
    entitlement_policy,
    entitlements,
)

from .kube_object import KubeObject

IMMUTABLE_FIELDS = ("value", "preemptionPolicy")
"""What the API server refuses to change on a PriorityClass (kubernetes v1.34
pkg/apis/scheduling/validation, ``ValidatePriorityClassUpdate``: ``value: Forbidden: may not be
changed in an update``, and ``preemptionPolicy`` immutable); pulumi-kubernetes has no rule for them, so
the option makes ``up`` replace instead, deleting first since the name is fixed."""


@dataclass(frozen=True)
class PrioritiesArgs:
    """The stack's priorities, the cluster's provider, and what Kueue objects must wait for."""

    config: PlatformConfig
    provider: k8s.Provider
    kueue_ready: Sequence[pulumi.Resource] = field(default_factory=tuple)


class Priorities(pulumi.ComponentResource):
    """PriorityClasses (core) and WorkloadPriorityClasses (Kueue, after its install)."""

    priority_classes: dict[str, k8s.scheduling.v1.PriorityClass]
    workload_priority_classes: dict[str, KubeObject]

    def __init__(self, name: str, args: PrioritiesArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("tpu-platform:kueue:Priorities", name, None, opts)
        self.priority_classes = {}
        self.workload_priority_classes = {}
        for pc, wpc in priority_objects(args.config):
            prio = pc["metadata"]["name"]
            self.priority_classes[prio] = k8s.scheduling.v1.PriorityClass(
                f"{name}-{prio}",
                metadata=pc["metadata"],
                value=pc["value"],
                # False is the API's default, and the engine registers an unset field for it.
                global_default=pc["globalDefault"] or None,
                preemption_policy=pc["preemptionPolicy"],
                description=pc.get("description"),
                opts=pulumi.ResourceOptions(
                    parent=self,
                    provider=args.provider,
                    replace_on_changes=list(IMMUTABLE_FIELDS),
                    delete_before_replace=True,
                ),
            )
            self.workload_priority_classes[prio] = KubeObject(
                f"{name}-{prio}-workload",
                wpc,
                opts=pulumi.ResourceOptions(
                    parent=self, provider=args.provider, depends_on=list(args.kueue_ready)
                ),
            )
        self._entitlements(name, args)
        self.register_outputs({"priorities": sorted(self.priority_classes)})

    def _entitlements(self, name: str, args: PrioritiesArgs) -> None:
        """The admission policy that keeps each granted priority to its teams' namespaces."""
        ent = entitlements(args.config)
        specs = entitlement_policy(ent)
        if specs is None:
            return
        policy_spec, binding_spec = specs
        annotations = {GRANTS_ANNOTATION: ent.annotation(), TEAMS_ANNOTATION: ent.teams_annotation()}
        metadata = {"name": POLICY_NAME, "annotations": annotations}
        opts = pulumi.ResourceOptions(parent=self, provider=args.provider)
        # pulumi-kubernetes types its inputs as TypedDicts that plain dicts do not satisfy; the
        # rendered objects are checked against the Kubernetes schemas by the tests instead.
        vap_type: Any = k8s.admissionregistration.v1.ValidatingAdmissionPolicy
        binding_type: Any = k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding
        policy = vap_type(f"{name}-entitlements", metadata=metadata, spec=policy_spec, opts=opts)
        binding_type(
            f"{name}-entitlements-binding",
            metadata={"name": POLICY_NAME},
            spec={**binding_spec, "policyName": policy.metadata.name},
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[policy]),
        )
