"""``KueueInstall``: JobSet 0.12.0 and Kueue 0.19.2 from their pinned Helm charts.

``helm.v4.Chart`` renders each chart and registers its objects one by one: CustomResourceDefinitions
first, so custom resources created later in the same run resolve, and every object is awaited
(Deployments until their pods are ready). Kueue's readiness probe passes only once its webhook
certificates are injected and the webhook server has started, so everything that depends on
this component (``ready``) is created after the CRDs exist and the webhooks answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from tpu_platform.config import PlatformConfig
from tpu_platform.constants import JOBSET_NAMESPACE, KUEUE_NAMESPACE
from tpu_platform.kueue import configuration as kc
from tpu_platform.kueue.chart_source import local_chart_problem
from tpu_platform.kueue.objects import MANAGED_LABELS


@dataclass(frozen=True)
class KueueInstallArgs:
    """The stack (``kueue`` section and fleet size) and the cluster's provider."""

    config: PlatformConfig
    provider: k8s.Provider
    depends_on: Sequence[pulumi.Resource] = field(default_factory=tuple)


class KueueInstall(pulumi.ComponentResource):
    """Namespaces and charts of JobSet and Kueue; Kueue is installed after JobSet's CRDs exist."""

    jobset: k8s.helm.v4.Chart
    kueue: k8s.helm.v4.Chart
    ready: list[pulumi.Resource]

    def __init__(self, name: str, args: KueueInstallArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("tpu-platform:kueue:Install", name, None, opts)
        cfg = args.config
        provider = args.provider
        for problem in (
            local_chart_problem(kc.jobset_chart(cfg), "kueue.jobset.chart", "jobset", kc.JOBSET_VERSION),
            local_chart_problem(kc.kueue_chart(cfg), "kueue.controller.chart", "kueue", kc.KUEUE_VERSION),
        ):
            if problem is not None:
                raise pulumi.RunError(problem)
        namespaces = {
            ns: k8s.core.v1.Namespace(
                f"{name}-{ns}",
                metadata={"name": ns, "labels": dict(MANAGED_LABELS)},
                opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=list(args.depends_on)),
            )
            for ns in (JOBSET_NAMESPACE, KUEUE_NAMESPACE)
        }
        self.jobset = k8s.helm.v4.Chart(
            f"{name}-jobset",
            chart=kc.jobset_chart(cfg),
            version=kc.JOBSET_VERSION,
            name=kc.JOBSET_RELEASE,
            namespace=JOBSET_NAMESPACE,
            values=kc.jobset_values(cfg),
            opts=pulumi.ResourceOptions(
                parent=self, provider=provider, depends_on=[namespaces[JOBSET_NAMESPACE]]
            ),
        )
        # Kueue's JobSet integration watches JobSets: install it once JobSet's CRD and webhooks are up.
        self.kueue = k8s.helm.v4.Chart(
            f"{name}-kueue",
            chart=kc.kueue_chart(cfg),
            version=kc.KUEUE_VERSION,
            name=kc.KUEUE_RELEASE,
            namespace=KUEUE_NAMESPACE,
            values=kc.kueue_values(cfg),
            opts=pulumi.ResourceOptions(
                parent=self, provider=provider, depends_on=[namespaces[KUEUE_NAMESPACE], self.jobset]
            ),
        )
        self.ready = [self.jobset, self.kueue]
        self.register_outputs({"kueueVersion": kc.KUEUE_VERSION, "jobsetVersion": kc.JOBSET_VERSION})
