"""JobSet and Kueue for a real ``pulumi up``: the engine installs both charts, the controllers run here.

The engine creates every object the charts render (CRDs, RBAC, ConfigMaps, Deployments, Services,
webhook configurations). As in the rest of the live tier, the controller binary runs as a local
process in place of the chart's pod (kwok runs the pod itself, so the Deployment's readiness is
kwok's), and the API server calls its webhooks on 127.0.0.1, as envtest does
(controller-runtime ``pkg/envtest/webhook.go``): a resource transform rewrites each webhook's
``clientConfig.service`` to a ``url`` with the session CA, and holds the webhook configuration
back until the local controller serves. So the chart completes only once its webhooks answer,
which on GKE the controller's readiness probe ensures, and nothing created after the chart meets
a webhook that is not there.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi

from . import addons, charts
from .controlplane import ControlPlane
from .kube import ApiError, Kube, wait_for

WEBHOOK_TYPES = {
    "kubernetes:admissionregistration.k8s.io/v1:ValidatingWebhookConfiguration",
    "kubernetes:admissionregistration.k8s.io/v1:MutatingWebhookConfiguration",
}
CRD_TYPE = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
API_SERVICE_TYPE = "kubernetes:apiregistration.k8s.io/v1:APIService"
SERVICE_TYPE = "kubernetes:core/v1:Service"
START_TIMEOUT_S = 240.0
BOUND = pulumi.CustomTimeouts(create="4m", update="4m", delete="4m")


@dataclass(eq=False)
class LocalController:
    """One chart's controller, started once the engine has created what it needs."""

    cp: ControlPlane
    kube: Kube
    binary: Path
    chart: charts.RenderedChart
    serving: addons.Serving = field(default_factory=addons.Serving.pick)
    addon: addons.Addon | None = None
    _future: concurrent.futures.Future[addons.Addon] | None = None
    _pool: concurrent.futures.ThreadPoolExecutor = field(
        default_factory=lambda: concurrent.futures.ThreadPoolExecutor(max_workers=1)
    )

    def api_service_backends(self) -> set[str]:
        """The chart's Services behind an APIService (Kueue's visibility server)."""
        return {str(a["spec"]["service"]["name"]) for a in self.chart.find("APIService")}

    def client_config(self, hook: dict[str, Any]) -> dict[str, Any]:
        return charts.to_url(hook.get("clientConfig") or {}, self.serving.webhook_url, self.cp.pki.pem())

    async def serving_ready(self) -> None:
        """Start the controller (once) when its CRDs and ServiceAccount exist; wait until it serves."""
        if self._future is None:
            self._future = self._pool.submit(self._start)
        self.addon = await asyncio.wrap_future(self._future)

    def _start(self) -> addons.Addon:
        crds = [c["metadata"]["name"] for c in self.chart.crds]
        namespace, account = self.chart.namespace, self.chart.service_account()

        def created() -> bool:
            try:
                if not all(addons.crd_established(self.kube, name) for name in crds):
                    return False
                self.kube.get("v1", "ServiceAccount", account, namespace)
            except ApiError as err:
                if err.status == 404:
                    return False
                raise
            return True

        what = f"{self.chart.release}: CRDs and ServiceAccount created by the engine"
        wait_for(what, created, START_TIMEOUT_S)
        return addons.run_controller(self.cp, self.kube, self.binary, self.chart, self.serving)

    def stop(self) -> None:
        if self.addon is not None:
            self.addon.process.stop()
            if self.addon.process in self.cp.group.processes:
                self.cp.group.processes.remove(self.addon.process)
        self._pool.shutdown(wait=False, cancel_futures=True)


class ChartControllers:
    """The local JobSet and Kueue controllers of one engine run, and the transform that binds them."""

    def __init__(self, controllers: list[LocalController]) -> None:
        self.by_namespace = {c.chart.namespace: c for c in controllers}

    def _owner(self, client_config: dict[str, Any]) -> LocalController | None:
        service = client_config.get("service") or {}
        return self.by_namespace.get(str(service.get("namespace", "")))

    async def transform(self, args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
        """Every custom resource's waits bounded (a stuck one fails the test in minutes, not the
        provider's default 10); the charts' webhooks and aggregated APIs on the local controllers."""
        result = await self._local(args)
        if not args.custom:
            return result
        props = result.props if result is not None else args.props
        opts = result.opts if result is not None else args.opts
        bounded = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(custom_timeouts=BOUND))
        return pulumi.ResourceTransformResult(props=props, opts=bounded)

    async def _local(self, args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
        if args.type_ in WEBHOOK_TYPES:
            props: dict[str, Any] = dict(args.props)
            hooks = [dict(h) for h in props.get("webhooks") or []]
            owners = {self._owner(h.get("clientConfig") or {}) for h in hooks} - {None}
            for hook in hooks:
                owner = self._owner(hook.get("clientConfig") or {})
                if owner is not None:
                    hook["clientConfig"] = owner.client_config(hook)
            if not pulumi.runtime.is_dry_run():  # a preview creates nothing to wait for
                for owner in owners:
                    assert owner is not None
                    await owner.serving_ready()
            props["webhooks"] = hooks
            return pulumi.ResourceTransformResult(props=props, opts=args.opts)
        if args.type_ == API_SERVICE_TYPE:
            return self._api_service(args)
        if args.type_ == SERVICE_TYPE:
            return self._api_backend(args)
        if args.type_ == CRD_TYPE:
            spec: dict[str, Any] = dict(args.props.get("spec") or {})  # type: ignore[arg-type]
            conversion = dict(spec.get("conversion") or {})
            webhook = dict(conversion.get("webhook") or {})
            owner = self._owner(webhook.get("clientConfig") or {})
            if conversion.get("strategy") != "Webhook" or owner is None:
                return None
            webhook["clientConfig"] = owner.client_config(webhook)
            conversion["webhook"] = webhook
            spec["conversion"] = conversion
            return pulumi.ResourceTransformResult(props={**args.props, "spec": spec}, opts=args.opts)
        return None

    def _api_service(self, args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
        """An aggregated API served by a local controller: its port and the session CA."""
        spec: dict[str, Any] = dict(args.props.get("spec") or {})  # type: ignore[arg-type]
        service = dict(spec.get("service") or {})
        owner = self.by_namespace.get(str(service.get("namespace", "")))
        if owner is None:
            return None
        service["port"] = owner.serving.visibility_port
        spec["service"] = service
        spec["caBundle"] = base64.b64encode(owner.cp.pki.pem()).decode()
        spec.pop("insecureSkipTLSVerify", None)
        return pulumi.ResourceTransformResult(props={**args.props, "spec": spec}, opts=args.opts)

    def _api_backend(self, args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
        """The Service behind an APIService as an ExternalName of 127.0.0.1: the aggregator
        resolves it to that host and the APIService's port (k8s.io/apiserver
        ``pkg/util/proxy.ResolveCluster``), where the local controller serves; with no kube-proxy a
        ClusterIP leads nowhere, the API stays unavailable and namespaces cannot be deleted."""
        meta: dict[str, Any] = dict(args.props.get("metadata") or {})  # type: ignore[arg-type]
        owner = self.by_namespace.get(str(meta.get("namespace", "")))
        if owner is None or meta.get("name") not in owner.api_service_backends():
            return None
        spec: dict[str, Any] = dict(args.props.get("spec") or {})  # type: ignore[arg-type]
        spec.update(type="ExternalName", externalName="127.0.0.1")
        spec.pop("selector", None)
        return pulumi.ResourceTransformResult(props={**args.props, "spec": spec}, opts=args.opts)

    def stop(self) -> None:
        for controller in self.by_namespace.values():
            controller.stop()
