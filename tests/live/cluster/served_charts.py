"""The JobSet and Kueue charts as chart folders whose webhooks are the local controllers'.

A Python program on the real engine points the charts' webhooks at the local controllers with a
resource transform (``engine_addons``); a Pulumi YAML program can register no transform. So the
controllers are started first (``LiveCluster.install``, from the same rendering), and the program
installs each chart from a folder made here: the pinned chart's ``Chart.yaml`` (name and version,
which the platform checks) and, as plain files, the objects ``helm template`` renders with the
plan's values, the webhooks and CRD conversion calling the running controller (a ``url`` and the
session CA, as ``LiveCluster.install`` applies them). The aggregated API is left out, as
``LiveCluster.install`` leaves it out: no Service of this control plane leads to the controller.
The engine then registers every object of the chart and applies it over the one the harness
created, taking its fields over (``pulumi.com/patchForce``, pulumi-kubernetes' way for an object
another manager applied: a webhook's ``rules`` list is atomic and the API server fills in its
defaults, so an equal apply by a second manager still conflicts).

The platform reads what a kubeconfig-mode cluster already runs before it installs anything
(``tpu_platform.kueue.existing``): CRDs and webhooks whose controller runs as no Deployment would
stop it. The two namespaces carry the platform's labels, as after an earlier ``pulumi up``, so the
program reads them as its own install and applies the charts over it.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from tpu_platform.kueue.objects import MANAGED_LABELS

from . import charts
from .addons import Addon
from .kube import Kube

LEFT_OUT = {"APIService"}
PATCH_FORCE = "pulumi.com/patchForce"


def prepare(folder: Path, name: str, version: str) -> Path:
    """``folder`` holding chart ``name`` ``version``'s ``Chart.yaml`` alone (what the offline plan reads)."""
    upstream = charts.local_chart(name, version)
    folder.mkdir(parents=True, exist_ok=True)
    meta = yaml.safe_load((upstream / "Chart.yaml").read_text())
    meta.pop("dependencies", None)
    (folder / "Chart.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    return folder


def fill(folder: Path, addon: Addon, ca_pem: bytes) -> list[dict[str, Any]]:
    """The chart's objects written into ``folder`` pointed at ``addon``; returns them."""
    rendered = addon.chart
    crds = [charts.local_conversion(c, addon.webhook_url, ca_pem) for c in rendered.crds]
    webhooks = charts.local_webhooks(rendered.webhooks, addon.webhook_url, ca_pem)
    rest = [o for o in rendered.objects if o not in rendered.crds and o not in rendered.webhooks]
    objects = [taken_over(o) for o in [*rest, *webhooks] if o.get("kind") not in LEFT_OUT]
    crds = [taken_over(c) for c in crds]
    for sub in ("crds", "templates"):
        shutil.rmtree(folder / sub, ignore_errors=True)
        (folder / sub).mkdir()
    (folder / "crds" / "crds.yaml").write_text(yaml.safe_dump_all(crds, sort_keys=False))
    (folder / "templates" / "objects.yaml").write_text(literal(yaml.safe_dump_all(objects, sort_keys=False)))
    return [*crds, *objects]


def taken_over(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` applied with force over the harness's own apply of it."""
    meta = dict(obj.get("metadata") or {})
    meta["annotations"] = {**dict(meta.get("annotations") or {}), PATCH_FORCE: "true"}
    return {**obj, "metadata": meta}


def literal(text: str) -> str:
    """``text`` as a Go template that renders it unchanged (``crds/`` is not templated)."""
    return text.replace("{{", '{{ "{{" }}')


def as_platform_install(kube: Kube, addon: Addon) -> None:
    """The add-on's namespace labelled as the platform labels the namespaces it installs into."""
    meta = {"name": addon.chart.namespace, "labels": dict(MANAGED_LABELS)}
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": meta})
