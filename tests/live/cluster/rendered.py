"""A committed plan's Kubernetes objects, per cluster, in the order ``pulumi up`` would create them.

Every ``kubernetes:<group>/<version>:<Kind>`` resource of a plan carries its whole manifest as its
inputs; the Helm charts are installed by the harness itself (``addons``). Objects are grouped by
the Kubernetes provider (one per cluster: a fleet plan has three) and ordered by the plan's own
``dependsOn`` edges, then by kind, so a namespace exists before what lives in it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[3]
PLANS = REPO / "plans"
CHART = "kubernetes:helm.sh/v4:Chart"
# Values the offline plan cannot show (the mocks redact secrets); a placeholder of the right type.
SECRET_PLACEHOLDER = {"kubeconfig": "redacted in the offline plan"}
KIND_ORDER = (
    "Namespace",
    "CustomResourceDefinition",
    "ServiceAccount",
    "Secret",
    "ConfigMap",
    "ClusterRole",
    "Role",
    "ClusterRoleBinding",
    "RoleBinding",
    "PriorityClass",
)


def load_plan(stack: str) -> dict[str, Any]:
    return dict(yaml.safe_load((PLANS / f"{stack}.yaml").read_text()))


def plan_stacks() -> list[str]:
    return sorted(p.stem for p in PLANS.glob("*.yaml"))


@dataclass(frozen=True)
class PlannedObject:
    label: str  # "<type>::<name>" as the plan's dependsOn names it
    manifest: dict[str, Any]
    depends_on: tuple[str, ...]

    @property
    def kind(self) -> str:
        return str(self.manifest["kind"])

    def describe(self) -> str:
        meta = self.manifest.get("metadata") or {}
        ns = f"{meta['namespace']}/" if meta.get("namespace") else ""
        return f"{self.kind} {ns}{meta.get('name')}"


def is_kubernetes_object(resource: dict[str, Any]) -> bool:
    t = str(resource.get("type", ""))
    return t.startswith("kubernetes:") and t != CHART and not t.startswith("pulumi:")


def _fill_redacted(manifest: dict[str, Any]) -> dict[str, Any]:
    doc = json.loads(json.dumps(manifest))
    if doc.get("kind") == "Secret":
        for key in ("stringData", "data"):
            if doc.get(key) == "[secret]":
                doc[key] = dict(SECRET_PLACEHOLDER) if key == "stringData" else {}
    return doc


def clusters(plan: dict[str, Any]) -> dict[str, list[PlannedObject]]:
    """provider label -> that cluster's objects in creation order."""
    groups: dict[str, list[PlannedObject]] = {}
    for res in plan.get("resources", []):
        if not is_kubernetes_object(res):
            continue
        obj = PlannedObject(
            f"{res['type']}::{res['name']}", _fill_redacted(res["inputs"]), tuple(res.get("dependsOn") or ())
        )
        groups.setdefault(str(res.get("provider", "")).split("::")[-1], []).append(obj)
    return {provider: creation_order(objs) for provider, objs in sorted(groups.items())}


def charts(plan: dict[str, Any], provider: str) -> dict[str, dict[str, Any]]:
    """release name -> Chart inputs, for one cluster's provider."""
    out = {}
    for res in plan.get("resources", []):
        if res.get("type") == CHART and str(res.get("provider", "")).endswith(f"::{provider}"):
            out[str(res["inputs"]["name"])] = json.loads(json.dumps(res["inputs"]))
    return out


def creation_order(objects: Iterable[PlannedObject]) -> list[PlannedObject]:
    """A topological order of the plan's ``dependsOn`` edges; ties broken by kind, then label."""
    objs = list(objects)
    by_label = {o.label: o for o in objs}

    def rank(o: PlannedObject) -> tuple[int, str]:
        kind_rank = KIND_ORDER.index(o.kind) if o.kind in KIND_ORDER else len(KIND_ORDER)
        return kind_rank, o.label

    done: set[str] = set()
    ordered: list[PlannedObject] = []
    pending = sorted(objs, key=rank)
    while pending:
        ready = [o for o in pending if all(d in done or d not in by_label for d in o.depends_on)]
        if not ready:
            raise ValueError("dependency cycle among: " + ", ".join(o.label for o in pending))
        first = ready[0]
        ordered.append(first)
        done.add(first.label)
        pending.remove(first)
    return ordered
