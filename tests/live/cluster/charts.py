"""The Kueue and JobSet charts rendered by the real ``helm template`` with the stack's own values.

The platform installs both as Helm charts (``kubernetes:helm.sh/v4:Chart`` in every plan). The
live tier renders the same chart at the same version with the same values, applies what the chart
creates (CRDs, RBAC, the controller's ConfigMap, webhook configurations), and runs the controller
binary itself as a local process in place of the chart's Deployment. Only what a local process
needs differs: each webhook's ``clientConfig.service`` becomes a ``url`` on 127.0.0.1 with a CA
bundle, as envtest's ``WebhookInstallOptions`` does (controller-runtime
``pkg/envtest/webhook.go``), and CRD conversion webhooks likewise.
"""

from __future__ import annotations

import base64
import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

SHARED = Path(__file__).resolve().parents[4] / "shared"
UPSTREAM = SHARED / "upstream"

# What a local process replaces from the chart (the rest is applied as rendered).
RUN_LOCALLY = {"Deployment", "Service", "PodDisruptionBudget", "Secret"}
WEBHOOK_KINDS = {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}


def local_chart(chart: str, version: str) -> Path:
    """``oci://registry.k8s.io/kueue/charts/kueue`` 0.19.2: ``shared/upstream/kueue-v0.19.2/charts/kueue``."""
    name = chart.rstrip("/").rsplit("/", 1)[-1]
    path = UPSTREAM / f"{name}-v{version}" / "charts" / name
    if not (path / "Chart.yaml").is_file():
        raise FileNotFoundError(f"chart {chart} {version}: no local copy at {path} (shared/upstream)")
    return path


@dataclass
class RenderedChart:
    """A chart's objects split by what the live tier does with them."""

    release: str
    namespace: str
    objects: list[dict[str, Any]]
    crds: list[dict[str, Any]] = field(default_factory=list)
    webhooks: list[dict[str, Any]] = field(default_factory=list)
    applied: list[dict[str, Any]] = field(default_factory=list)
    local: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        for obj in self.objects:
            kind = obj.get("kind")
            if kind == "CustomResourceDefinition":
                self.crds.append(obj)
            elif kind in WEBHOOK_KINDS:
                self.webhooks.append(obj)
            elif kind in RUN_LOCALLY:
                self.local.append(obj)
            else:
                self.applied.append(obj)

    def find(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.objects if o.get("kind") == kind]

    def deployment_container(self) -> dict[str, Any]:
        deployments = self.find("Deployment")
        if len(deployments) != 1:
            raise ValueError(
                f"{self.release}: expected one Deployment in the chart, found {len(deployments)}"
            )
        containers = deployments[0]["spec"]["template"]["spec"]["containers"]
        return dict(containers[0])

    def service_account(self) -> str:
        deployment = self.find("Deployment")[0]
        return str(deployment["spec"]["template"]["spec"]["serviceAccountName"])


def render(helm: Path, chart_inputs: dict[str, Any], workdir: Path, kube_version: str) -> RenderedChart:
    """``helm template`` of a plan's Chart inputs (chart, version, name, namespace, values)."""
    chart = local_chart(str(chart_inputs["chart"]), str(chart_inputs["version"]))
    values = workdir / f"{chart_inputs['name']}-values.json"
    values.write_text(json.dumps(chart_inputs.get("values") or {}))
    cmd = [
        str(helm),
        "template",
        str(chart_inputs["name"]),
        str(chart),
        "--namespace",
        str(chart_inputs["namespace"]),
        "--include-crds",
        "--kube-version",
        kube_version,
        "--values",
        str(values),
    ]
    env = {"HELM_CACHE_HOME": str(workdir / "helm"), "HELM_CONFIG_HOME": str(workdir / "helm"), "PATH": ""}
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"helm template {chart}: {out.stderr.strip()}")
    objects = [d for d in yaml.safe_load_all(out.stdout) if isinstance(d, dict) and d.get("kind")]
    return RenderedChart(str(chart_inputs["name"]), str(chart_inputs["namespace"]), objects)


def to_url(client_config: dict[str, Any], base_url: str, ca_pem: bytes) -> dict[str, Any]:
    """A service-based ``clientConfig`` as a URL on the local serving address, with the CA bundle."""
    service = client_config.get("service") or {}
    path = service.get("path", "/")
    return {"url": f"{base_url}{path}", "caBundle": base64.b64encode(ca_pem).decode()}


def local_webhooks(webhooks: list[dict[str, Any]], base_url: str, ca_pem: bytes) -> list[dict[str, Any]]:
    """Webhook configurations pointed at the local process; everything else as rendered."""
    out = []
    for config in webhooks:
        doc = json.loads(json.dumps(config))
        for hook in doc.get("webhooks") or []:
            hook["clientConfig"] = to_url(hook.get("clientConfig") or {}, base_url, ca_pem)
        out.append(doc)
    return out


def local_conversion(crd: dict[str, Any], base_url: str, ca_pem: bytes) -> dict[str, Any]:
    """A CRD whose conversion webhook (if any) calls the local process."""
    doc = json.loads(json.dumps(crd))
    conversion = (doc.get("spec") or {}).get("conversion") or {}
    webhook = conversion.get("webhook")
    if conversion.get("strategy") == "Webhook" and webhook:
        webhook["clientConfig"] = to_url(webhook.get("clientConfig") or {}, base_url, ca_pem)
    return doc
