"""The example ``local`` stack for the real engine on a live control plane, and its offline plan.

``stacks/Pulumi.local.yaml`` (``cluster.mode: kubeconfig``) pointed at this control plane, with the
pinned Kueue and JobSet charts from ``../shared/upstream`` as local chart folders; the JobSet and
Kueue controllers run here (``engine_addons``). The same stack file renders the offline plan, so
what the engine registers and previews can be held against it.
"""

from __future__ import annotations

import base64
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulumi
import yaml
from tpu_platform.components.program import stack_program

from tpu_platform.plan import chart_renders, installs

from . import LiveCluster, engine_addons
from .addons import chart_inputs_from_plan, chart_workdir
from .charts import UPSTREAM, render
from .nodes import KWOK_ANNOTATION, MANAGED

REPO = Path(__file__).resolve().parents[3]
STACK = "engine"
SYSTEM_NODE = "system-0"


def system_node() -> dict[str, Any]:
    """An untainted kwok node for the charts' and the controller's pods (GKE's system pool)."""
    resources = {"cpu": "16", "memory": "64Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": SYSTEM_NODE,
            "labels": {"kubernetes.io/hostname": SYSTEM_NODE, "kubernetes.io/os": "linux", "type": "kwok"},
            "annotations": {KWOK_ANNOTATION: MANAGED},
        },
        "status": {"allocatable": resources, "capacity": resources},
    }


def engine_config(live: LiveCluster) -> dict[str, Any]:
    """``stacks/Pulumi.local.yaml`` on this control plane: its kubeconfig (contents, a credential)
    and context, and the charts from their local folders."""
    config = yaml.safe_load((REPO / "stacks" / "Pulumi.local.yaml").read_text())["config"]
    config["tpu-platform:cluster"].update(kubeconfig=embedded_kubeconfig(live), context="live")
    kueue = config.setdefault("tpu-platform:kueue", {})
    kueue["controller"] = {"chart": str(UPSTREAM / "kueue-v0.19.2" / "charts" / "kueue")}
    kueue["jobset"] = {"chart": str(UPSTREAM / "jobset-v0.12.0" / "charts" / "jobset")}
    return dict(config)


def embedded_kubeconfig(live: LiveCluster) -> str:
    """The admin kubeconfig with its client certificate and key inline, as GKE and most tools hand
    one out: the credential the state must never hold in plain text."""
    doc = yaml.safe_load(live.cp.admin_kubeconfig.read_text())
    for user in doc["users"]:
        creds = user["user"]
        for key in ("client-certificate", "client-key"):
            if key in creds:
                creds[f"{key}-data"] = base64.b64encode(Path(creds.pop(key)).read_bytes()).decode()
    return str(yaml.safe_dump(doc, sort_keys=False))


def offline_plan(workdir: Path, config: dict[str, Any], live: LiveCluster | None = None) -> dict[str, Any]:
    """``tpu-platform plan`` of the same stack file, rendered under Pulumi's mocks; with ``live``, the
    charts' renders for values sets no committed render covers are added (:func:`with_chart_renders`)."""
    stack_file = workdir / f"Pulumi.{STACK}.yaml"
    stack_file.write_text(yaml.safe_dump({"config": config}, sort_keys=False))
    plans = workdir / "plans"
    cmd = [sys.executable, "-m", "tpu_platform", "plan", str(stack_file), "--plans-dir", str(plans)]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    plan = dict(yaml.safe_load((plans / f"{STACK}.yaml").read_text()))
    return plan if live is None else with_chart_renders(plan, live.paths["helm"], live.kube_version)


def with_chart_renders(plan: dict[str, Any], helm: Path, kube_version: str) -> dict[str, Any]:
    """The plan as ``tpu-platform plan`` writes it once ``python -m tpu_platform.plan.chart_renders``
    has rendered its Charts' values sets: each one no committed render covers (this stack's charts are
    local folders, and a row may change the values) rendered by the pinned helm from its folder."""
    committed = chart_renders.load()["renders"]
    extra = {
        key: chart_renders.render_entry(helm, Path(str(inputs["chart"])), inputs, kube_version)
        for key, inputs in chart_renders.chart_inputs([plan]).items()
        if key not in committed
    }
    if not extra:
        return plan
    return {**plan, "installs": installs.plan_section(plan["resources"], {**committed, **extra})}


def chart_controllers(cluster: LiveCluster, plan: dict[str, Any]) -> engine_addons.ChartControllers:
    """The local JobSet and Kueue controllers for the plan's chart inputs (rendered by helm)."""
    paths = cluster.paths
    controllers = []
    for release in ("jobset", "kueue"):
        inputs = chart_inputs_from_plan(plan, release)
        chart = render(paths["helm"], inputs, chart_workdir(cluster.cp, inputs), cluster.kube_version)
        controllers.append(engine_addons.LocalController(cluster.cp, cluster.admin, paths[release], chart))
    return engine_addons.ChartControllers(controllers)


def program_with(controllers: engine_addons.ChartControllers) -> Callable[[], None]:
    """The project's program as ``pulumi up`` runs ``__main__.py``, with the harness's transform."""

    def program() -> None:
        pulumi.runtime.register_resource_transform(controllers.transform)
        stack_program()

    return program
