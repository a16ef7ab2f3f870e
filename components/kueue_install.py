"""``KueueInstall``: JobSet 0.12.0 and Kueue 0.19.2 from their pinned Helm charts, where the cluster
does not already run them.

``helm.v4.Chart`` renders each chart and registers its objects one by one: CustomResourceDefinitions
first, so custom resources created later in the same run resolve, and every object is awaited
(Deployments until their pods are ready). Kueue's readiness probe passes only once its webhook
certificates are injected and the webhook server has started, so everything that depends on
this component (``ready``) is created after the CRDs exist and the webhooks answer.

What a kubeconfig-mode cluster already runs decides per add-on (``tpu_platform.kueue.existing``):
install the chart, use the install found (no chart), apply the chart over an older one (taken over:
forced field ownership, kept on ``pulumi destroy``), or stop with the fix before anything changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from tpu_platform.config import PlatformConfig
from tpu_platform.kueue import configuration as kc
from tpu_platform.kueue.chart_source import local_chart_problem
from tpu_platform.kueue.existing import Decision, Decisions, decide_all
from tpu_platform.kueue.found import ADOPTED_ANNOTATION, NOTHING
from tpu_platform.kueue.objects import MANAGED_LABELS

PATCH_FORCE = "pulumi.com/patchForce"
"""pulumi-kubernetes: server-side apply with ``force``, taking over fields another manager set
(provider v4.25.0 ``pkg/await/await.go`` ``patchForce``)."""


@dataclass(frozen=True)
class KueueInstallArgs:
    """The stack (``kueue`` section and fleet size), the cluster's provider, and what to do with the
    Kueue and JobSet the cluster already runs (default: install both)."""

    config: PlatformConfig
    provider: k8s.Provider
    depends_on: Sequence[pulumi.Resource] = field(default_factory=tuple)
    decisions: Decisions | None = None


async def _taken_over(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
    """A chart's object that may exist already: applied with force and left on ``pulumi destroy``."""
    if not args.custom:
        return None
    props: dict[str, Any] = dict(args.props)
    meta: dict[str, Any] = dict(props.get("metadata") or {})
    meta["annotations"] = {**dict(meta.get("annotations") or {}), PATCH_FORCE: "true"}
    props["metadata"] = meta
    opts = pulumi.ResourceOptions.merge(args.opts, pulumi.ResourceOptions(retain_on_delete=True))
    return pulumi.ResourceTransformResult(props=props, opts=opts)


def _taken_over_options(decision: Decision) -> dict[str, Any]:
    if not decision.adopt:
        return {}
    return {"retain_on_delete": True, "transforms": [_taken_over]}


def announce(decisions: Decisions, resource: pulumi.Resource) -> None:
    """What the program found and does, in the preview's diagnostics; a refusal stops the run."""
    error = decisions.error()
    if error is not None:
        raise pulumi.RunError(error)
    for decision in decisions:
        if not decision.found.present:
            continue
        text = "\n".join(decision.lines())
        if decision.found.platform_installed:
            pulumi.log.info(text, resource=resource)
        else:
            pulumi.log.warn(text, resource=resource)
    for line in decisions.unread:
        pulumi.log.warn(f"not read: {line}", resource=resource)


class KueueInstall(pulumi.ComponentResource):
    """Namespaces and charts of JobSet and Kueue; Kueue is installed after JobSet's CRDs exist."""

    jobset: k8s.helm.v4.Chart | None
    kueue: k8s.helm.v4.Chart | None
    ready: list[pulumi.Resource]
    decisions: Decisions

    def __init__(self, name: str, args: KueueInstallArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("tpu-platform:kueue:Install", name, None, opts)
        cfg = args.config
        self.decisions = args.decisions or decide_all(NOTHING, cfg)
        announce(self.decisions, self)
        for problem in (
            local_chart_problem(kc.jobset_chart(cfg), "kueue.jobset.chart", "jobset", kc.JOBSET_VERSION),
            local_chart_problem(kc.kueue_chart(cfg), "kueue.controller.chart", "kueue", kc.KUEUE_VERSION),
        ):
            if problem is not None:
                raise pulumi.RunError(problem)
        namespaces = {
            d.addon.key: self._namespace(name, args, d) for d in self.decisions if d.registers_chart
        }
        self.jobset = self._chart(
            name,
            args=args,
            decision=self.decisions.jobset,
            namespaces=namespaces,
            chart=kc.jobset_chart(cfg),
            values=kc.jobset_values(cfg),
            after=[],
        )
        # Kueue's JobSet integration watches JobSets: install it once JobSet's CRD and webhooks are up.
        self.kueue = self._chart(
            name,
            args=args,
            decision=self.decisions.kueue,
            namespaces=namespaces,
            chart=kc.kueue_chart(cfg),
            values=kc.kueue_values(cfg),
            after=[self.jobset] if self.jobset is not None else [],
        )
        self.ready = [c for c in (self.jobset, self.kueue) if c is not None]
        self.register_outputs(
            {
                "kueueVersion": str(self.decisions.kueue.version),
                "jobsetVersion": str(self.decisions.jobset.version),
            }
        )

    def _namespace(self, name: str, args: KueueInstallArgs, decision: Decision) -> k8s.core.v1.Namespace:
        """The add-on's namespace; over an install taken over, it records where the install came from."""
        addon, found = decision.addon, decision.found
        meta: dict[str, Any] = {"name": addon.namespace, "labels": dict(MANAGED_LABELS)}
        if decision.adopt:
            origin = found.adopted_from or (
                f"{addon.title} {found.version}" if found.controllers else f"{addon.title} CRDs"
            )
            meta["annotations"] = {ADOPTED_ANNOTATION: origin}
        return k8s.core.v1.Namespace(
            f"{name}-{addon.namespace}",
            metadata=meta,
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=args.provider,
                depends_on=list(args.depends_on),
                **_taken_over_options(decision),
            ),
        )

    def _chart(
        self,
        name: str,
        *,
        args: KueueInstallArgs,
        decision: Decision,
        namespaces: dict[str, k8s.core.v1.Namespace],
        chart: str,
        values: dict[str, Any],
        after: list[pulumi.Resource],
    ) -> k8s.helm.v4.Chart | None:
        """The add-on's pinned chart, unless the decision uses what the cluster runs."""
        if not decision.registers_chart:
            return None
        addon = decision.addon
        return k8s.helm.v4.Chart(
            f"{name}-{addon.key}",
            chart=chart,
            version=str(addon.pinned),
            name=addon.release,
            namespace=addon.namespace,
            values=values,
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=args.provider,
                depends_on=[namespaces[addon.key], *after],
                **_taken_over_options(decision),
            ),
        )
