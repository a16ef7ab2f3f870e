"""What the pinned Kueue and JobSet charts render with each values set the plans use.

A plan registers each chart as one ``kubernetes:helm.sh/v4:Chart`` with its values; pulumi-kubernetes
then registers what ``helm template`` renders from them, which depends on those values (Kueue 0.19.2
renders 78 of its 99 templated objects with the values the stacks use: no Ingress, no cert-manager
Certificate). This module renders each distinct values set the committed plans hold with the pinned
helm binary and the charts at the pinned tags (the Go module cache holds each chart's tag:
``sigs.k8s.io/kueue@v0.19.2/charts/kueue``), and commits the kinds and names as package data
(``data/chart_renders.yaml``), with, per object, a digest of each top-level field and of each
nested path a change of which replaces it (pulumi-kubernetes' table: a Deployment's
``spec.selector``); each plan then lists what its own values render, and the review tells from the
digests which child a values change touches (``tpu_platform.plan.chart_children``).

    python upstream/build.py   # once: the pinned helm (./dev upstream)
    python -m tpu_platform.plan.chart_renders [--helm PATH] [--module-cache DIR] [--plans-dir plans] --write

A values set no render covers is listed as not derived in the plan, and the plan tests fail until
this command is run again.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from . import knowledge
from .forcing import values_at
from .upstream_git import write_or_print

DATA_FILE = "chart_renders.yaml"
CHART_TYPE = "kubernetes:helm.sh/v4:Chart"
COMMAND = "python -m tpu_platform.plan.chart_renders --write (needs the pinned helm: ./dev upstream)"
HELM_COMMAND = "helm template RELEASE CHART --namespace NS --include-crds --kube-version KUBE --values VALUES"
CHART_MODULES = {"kueue": "sigs.k8s.io/kueue", "jobset": "sigs.k8s.io/jobset"}


def values_key(inputs: Mapping[str, Any]) -> str:
    """The digest that names what a Chart renders: its chart, version, release, namespace and values."""
    keyed = {k: inputs.get(k) for k in ("chart", "version", "name", "namespace", "values")}
    return hashlib.sha256(json.dumps(keyed, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def chart_name(chart: str) -> str:
    """``oci://registry.k8s.io/kueue/charts/kueue`` -> ``kueue``."""
    return chart.rstrip("/").rsplit("/", 1)[-1]


def chart_inputs(plans: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Every distinct Chart input set of the plans, by values key."""
    found: dict[str, Mapping[str, Any]] = {}
    for plan in plans:
        for entry in plan.get("resources") or []:
            if isinstance(entry, Mapping) and entry.get("type") == CHART_TYPE:
                inputs = entry.get("inputs") or {}
                found.setdefault(values_key(inputs), inputs)
    return found


def objects_of(manifest: str) -> list[str]:
    """``Kind/name`` of every object a ``helm template`` output holds, sorted."""
    docs = yaml.safe_load_all(manifest)
    return sorted(
        f"{doc['kind']}/{(doc.get('metadata') or {}).get('name')}"
        for doc in docs
        if isinstance(doc, Mapping) and doc.get("kind")
    )


# Built-in kinds with no namespace; pulumi-kubernetes puts the Chart's namespace on every other
# object that has none (provider/yaml/v2 yaml.go Normalize).
CLUSTER_SCOPED = frozenset(
    {
        "APIService",
        "ClusterRole",
        "ClusterRoleBinding",
        "CSIDriver",
        "CustomResourceDefinition",
        "IngressClass",
        "MutatingAdmissionPolicy",
        "MutatingAdmissionPolicyBinding",
        "MutatingWebhookConfiguration",
        "Namespace",
        "PersistentVolume",
        "PriorityClass",
        "RuntimeClass",
        "StorageClass",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "ValidatingWebhookConfiguration",
    }
)
DIGEST_CHARS = 16


def type_token(api_version: str, kind: str) -> str:
    """``v1``, ``ConfigMap`` -> ``core/v1:ConfigMap``: a Kubernetes type as pulumi-kubernetes names it."""
    group, _, version = api_version.rpartition("/")
    return f"{group or 'core'}/{version}:{kind}"


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[
        :DIGEST_CHARS
    ]


def _nested_replacing(token: str) -> list[str]:
    """The nested paths a change at or below which replaces an object of this type (outermost only)."""
    paths = [p for p in knowledge.kubernetes_rule("kinds").get(token, []) if "." in p]
    return sorted(p for p in paths if not any(p.startswith(q + ".") for q in paths))


def child_digests(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A rendered object as the review compares it: a digest of each top-level field but its type,
    ``immutable`` as it is (it decides whether a ConfigMap's data replaces), and a digest of each
    nested path that replaces it."""
    token = type_token(str(doc.get("apiVersion")), str(doc.get("kind")))
    out: dict[str, Any] = {
        key: value if key == "immutable" else digest(value)
        for key, value in sorted(doc.items())
        if key not in ("apiVersion", "kind")
    }
    for path in _nested_replacing(token):
        values = list(values_at(doc, path.split(".")))
        if values:
            out[path] = digest(values)
    return out


def children_of(manifest: str, namespace: str) -> dict[str, dict[str, Any]]:
    """Every object of a ``helm template`` output by ``<type>::<namespace>/<name>`` (``<type>::<name>``
    for a cluster-scoped one), as :func:`child_digests`, namespaced as pulumi-kubernetes registers it."""
    docs = [d for d in yaml.safe_load_all(manifest) if isinstance(d, Mapping) and d.get("kind")]
    cluster = CLUSTER_SCOPED | {
        str((d.get("spec") or {}).get("names", {}).get("kind"))
        for d in docs
        if d["kind"] == "CustomResourceDefinition" and (d.get("spec") or {}).get("scope") == "Cluster"
    }
    out: dict[str, dict[str, Any]] = {}
    for doc in docs:
        meta = dict(doc.get("metadata") or {})
        if not meta.get("namespace") and doc["kind"] not in cluster:
            meta["namespace"] = namespace
        where = f"{meta['namespace']}/{meta.get('name')}" if meta.get("namespace") else str(meta.get("name"))
        token = type_token(str(doc.get("apiVersion")), str(doc["kind"]))
        out[f"{token}::{where}"] = child_digests({**doc, "metadata": meta})
    return dict(sorted(out.items()))


def chart_folder(module_cache: Path, inputs: Mapping[str, Any]) -> Path:
    """The chart at its pinned tag in the Go module cache (``sigs.k8s.io/kueue@v0.19.2/charts/kueue``)."""
    name = chart_name(str(inputs["chart"]))
    return module_cache / f"{CHART_MODULES[name]}@v{inputs['version']}" / "charts" / name


def chart_digest(folder: Path) -> str:
    """One sha256 over every file of a chart folder (path and content), in path order."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def helm_template(helm: Path, folder: Path, inputs: Mapping[str, Any], kube_version: str) -> str:
    """``helm template`` of a Chart's inputs, offline, in a throwaway helm home."""
    with tempfile.TemporaryDirectory(prefix="tpu-platform-helm-") as tmp:
        values = Path(tmp) / "values.json"
        values.write_text(json.dumps(inputs.get("values") or {}))
        cmd = [str(helm), "template", str(inputs["name"]), str(folder)]
        cmd += ["--namespace", str(inputs["namespace"]), "--include-crds", "--kube-version", kube_version]
        cmd += ["--values", str(values)]
        env = {"HELM_CACHE_HOME": tmp, "HELM_CONFIG_HOME": tmp, "HELM_DATA_HOME": tmp, "PATH": ""}
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"helm template {folder}: {out.stderr.strip()}")
    return out.stdout


def render_entry(helm: Path, folder: Path, inputs: Mapping[str, Any], kube_version: str) -> dict[str, Any]:
    """What one Chart's inputs render from the chart at ``folder``: its objects, and each one's digests."""
    manifest = helm_template(helm, folder, inputs, kube_version)
    return {
        "chart": chart_name(str(inputs["chart"])),
        "version": str(inputs["version"]),
        "release": str(inputs["name"]),
        "namespace": str(inputs["namespace"]),
        "objects": objects_of(manifest),
        "children": children_of(manifest, str(inputs["namespace"])),
    }


def derive(
    helm: Path, helm_version: str, kube_version: str, module_cache: Path, plans: Iterable[Mapping[str, Any]]
) -> dict[str, Any]:
    """The renders of every values set of ``plans``."""
    charts: dict[str, dict[str, str]] = {}
    renders: dict[str, dict[str, Any]] = {}
    for key, inputs in sorted(chart_inputs(plans).items()):
        folder = chart_folder(module_cache, inputs)
        name = chart_name(str(inputs["chart"]))
        charts[f"{name}@{inputs['version']}"] = {
            "source": f"{CHART_MODULES[name]}@v{inputs['version']}/charts/{name} (Go module cache)",
            "sha256": chart_digest(folder),
        }
        renders[key] = render_entry(helm, folder, inputs, kube_version)
    return {
        "helm": helm_version,
        "kubeVersion": kube_version,
        "command": HELM_COMMAND,
        "charts": charts,
        "renders": renders,
    }


def dump(data: Mapping[str, Any]) -> str:
    header = (
        "# What the pinned charts render with each values set the plans use (kind/name, and each\n"
        "# object's field digests).\n"
        f"# Generated by `{COMMAND}`; do not edit.\n"
    )
    return header + yaml.safe_dump(dict(data), sort_keys=False, width=110, default_flow_style=False)


def load() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(
        resources.files("tpu_platform.plan").joinpath("data", DATA_FILE).read_text()
    )
    return data


def pinned_tools(project_root: Path) -> dict[str, Any]:
    """The manifest of the pinned upstream binaries (``upstream/build.py --print``), or {} without one."""
    script = project_root / "upstream" / "build.py"
    if not script.is_file():
        return {}
    out = subprocess.run(
        [sys.executable, str(script), "--print"], capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        return {}
    manifest: dict[str, Any] = json.loads(out.stdout)
    return manifest


def default_module_cache() -> Path:
    env = os.environ.get("GOMODCACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("GOPATH") or Path.home() / "go") / "pkg" / "mod"


def main(argv: Sequence[str] | None = None) -> int:
    from ..project import find_project

    parser = argparse.ArgumentParser(prog="python -m tpu_platform.plan.chart_renders", description=__doc__)
    parser.add_argument("--helm", type=Path, help="helm binary (default: the pinned one, upstream/build.py)")
    parser.add_argument("--module-cache", type=Path, default=default_module_cache(), help="Go module cache")
    parser.add_argument("--plans-dir", type=Path, help="folder of the plans (default: the project's)")
    parser.add_argument("--kube-version", help="default: the pinned kube-apiserver's (upstream/build.py)")
    parser.add_argument("--write", action="store_true", help=f"update tpu_platform/plan/data/{DATA_FILE}")
    args = parser.parse_args(argv)
    project = find_project()
    tools = pinned_tools(project.root)
    helm = args.helm or Path(tools.get("helm", {}).get("path", "helm"))
    if not helm.is_file():
        print(
            f"no helm at {helm}: run `python upstream/build.py` (./dev upstream) or pass --helm",
            file=sys.stderr,
        )
        return 2
    kube = args.kube_version or tools.get("kube-apiserver", {}).get("version")
    if not kube:
        print(
            "no pinned Kubernetes version: run `python upstream/build.py` or pass --kube-version",
            file=sys.stderr,
        )
        return 2
    plans = [
        yaml.safe_load(p.read_text()) for p in sorted((args.plans_dir or project.plans_dir).glob("*.yaml"))
    ]
    helm_version = str(tools.get("helm", {}).get("version", "")) or "unknown"
    write_or_print(
        dump(derive(helm, helm_version, str(kube), args.module_cache, plans)), DATA_FILE, args.write
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
