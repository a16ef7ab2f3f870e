"""What the Kueue 0.19.2 and JobSet 0.12.0 Helm charts create, as reviewable data.

The offline plan renders ``helm.v4.Chart`` as one resource with its values: the chart's own
objects stay invisible, so an upgrade would show no CRD, RBAC or webhook change. This module
summarizes each chart's templates at the pinned upstream tag (kubernetes-sigs/kueue
``charts/kueue/``, kubernetes-sigs/jobset ``charts/jobset/``): every object's kind and name, CRD
API versions (served, storage, deprecated), RBAC rules, webhooks and their rules, and the
containers of Deployments, with the condition that guards it and the sha256 of every file read.
The summary is committed as package data (``data/installs.yaml``); each plan carries its digest
and counts, so an upgrade is a reviewable diff of that file and of every plan.

    python -m tpu_platform.plan.installs --kueue-git DIR --jobset-git DIR [--write]

Templates are not rendered: lines that are only template actions are dropped, the chart's
``fullname`` and the release namespace are substituted, any other inline action reads
``<templated>``. No upstream file is committed, only this summary of names and kinds.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from ..constants import JOBSET_NAMESPACE, KUEUE_NAMESPACE
from ..kueue import configuration as kc
from .upstream_git import git_ls, git_show, write_or_print

DATA_FILE = "installs.yaml"
_COMMENT = re.compile(r"\{\{-?\s*/\*.*?\*/\s*-?\}\}", re.S)
_ACTION_LINE = re.compile(r"^\s*\{\{.*\}\}\s*$")
_IF = re.compile(r"^\s*\{\{-?\s*if\s+(.*?)\s*-?\}\}\s*$")
_END = re.compile(r"^\s*\{\{-?\s*end\s*-?\}\}\s*$")
_INLINE = re.compile(r"\{\{-?.*?-?\}\}")
_DOC = re.compile(r"^---\s*$", re.M)
_DEFINE = re.compile(r'\{\{-?\s*define "([^"]+)"\s*-?\}\}(.*?)\{\{-?\s*end\s*-?\}\}', re.S)
_INCLUDE = re.compile(r'\{\{-?\s*include "([^"]+)" \.\s*-?\}\}')


def helper_names(helpers: Sequence[str], chart: str, release: str) -> dict[str, str]:
    """Named templates that reduce to a plain name (``jobset.controller.name`` -> ``jobset-controller``).

    ``<chart>.fullname`` is the release name when it contains the chart name (Helm's scaffold,
    used by both charts); a helper counts only if nothing but includes of known names remains.
    """
    known = {f"{chart}.fullname": release}
    bodies = {
        name: body.strip() for text in helpers for name, body in _DEFINE.findall(_COMMENT.sub("", text))
    }
    changed = True
    while changed:
        changed = False
        for name, body in bodies.items():
            if name in known:
                continue
            resolved = _INCLUDE.sub(lambda m: known.get(m.group(1), m.group(0)), body)
            if "{{" not in resolved and "\n" not in resolved and resolved:
                known[name] = resolved
                changed = True
    return known


def _skeleton(text: str, names: Mapping[str, str], namespace: str) -> tuple[str, list[str]]:
    """Template text as plain YAML, and the top-level ``if`` guards open at the first object line."""
    text = _COMMENT.sub("", text)
    out: list[str] = []
    guards: list[str] = []
    depth = 0
    seen_object = False
    for line in text.splitlines():
        if _ACTION_LINE.match(line):
            guard = _IF.match(line)
            if guard and not seen_object and not line.startswith(" "):
                guards.append(guard.group(1))
            if guard:
                depth += 1
            elif _END.match(line) and depth:
                depth -= 1
            continue
        if line.startswith("apiVersion:"):
            seen_object = True
        named = _INCLUDE.sub(lambda m: names.get(m.group(1), m.group(0)), line)
        out.append(_INLINE.sub("<templated>", named.replace("{{ .Release.Namespace }}", namespace)))
    return "\n".join(out), guards


def _rules(rules: Any) -> list[str]:
    """RBAC rules as ``group/resource: verbs`` lines (``core`` for the empty group)."""
    lines: set[str] = set()
    for rule in rules if isinstance(rules, list) else []:
        if not isinstance(rule, Mapping):
            continue
        verbs = ",".join(sorted(str(v) for v in rule.get("verbs") or []))
        for url in rule.get("nonResourceURLs") or []:
            lines.add(f"url {url}: {verbs}")
        for group in rule.get("apiGroups") or [""]:
            for resource in rule.get("resources") or []:
                lines.add(f"{group or 'core'}/{resource}: {verbs}")
    return sorted(lines)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _object(doc: Mapping[str, Any], guards: list[str]) -> dict[str, Any]:
    meta = _mapping(doc.get("metadata"))
    kind = str(doc.get("kind"))
    entry: dict[str, Any] = {
        "kind": kind,
        "name": str(meta.get("name")),
        "apiVersion": str(doc.get("apiVersion")),
    }
    if guards:
        entry["if"] = " and ".join(guards)
    spec = _mapping(doc.get("spec"))
    if kind == "CustomResourceDefinition":
        entry["versions"] = [
            {
                "name": v.get("name"),
                "served": bool(v.get("served")),
                "storage": bool(v.get("storage")),
                **({"deprecated": True} if v.get("deprecated") else {}),
            }
            for v in spec.get("versions") or []
            if isinstance(v, Mapping)
        ]
    elif kind in ("ClusterRole", "Role"):
        entry["rules"] = _rules(doc.get("rules"))
    elif kind in ("ClusterRoleBinding", "RoleBinding"):
        ref = _mapping(doc.get("roleRef"))
        entry["roleRef"] = f"{ref.get('kind')}/{ref.get('name')}"
    elif kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        entry["webhooks"] = sorted(
            f"{w.get('name')}: {','.join(_webhook_resources(w))}"
            for w in doc.get("webhooks") or []
            if isinstance(w, Mapping)
        )
    elif kind in ("Deployment", "StatefulSet", "DaemonSet"):
        pod = _mapping(_mapping(spec.get("template")).get("spec"))
        entry["containers"] = sorted(
            str(c.get("name")) for c in pod.get("containers") or [] if isinstance(c, Mapping)
        )
    return entry


def _webhook_resources(webhook: Mapping[str, Any]) -> list[str]:
    found: set[str] = set()
    for rule in webhook.get("rules") or []:
        if isinstance(rule, Mapping):
            ops = "|".join(str(o) for o in rule.get("operations") or [])
            for group in rule.get("apiGroups") or [""]:
                for resource in rule.get("resources") or []:
                    found.add(f"{group or 'core'}/{resource}[{ops}]")
    return sorted(found)


def summarize_template(text: str, names: Mapping[str, str], namespace: str) -> list[dict[str, Any]]:
    """The objects one chart template creates (an empty list for helpers and notes)."""
    plain, guards = _skeleton(text, names, namespace)
    objects: list[dict[str, Any]] = []
    for chunk in _DOC.split(plain):
        if "kind:" not in chunk:
            continue
        try:
            doc = yaml.safe_load(chunk)
        except yaml.YAMLError:
            doc = None
        if not isinstance(doc, Mapping):
            kind = re.search(r"^kind:\s*(\S+)", chunk, re.M)
            name = re.search(r"^  name:\s*(.+)$", chunk, re.M)
            doc = {
                "kind": kind.group(1) if kind else "?",
                "metadata": {"name": name.group(1).strip("'\"") if name else "?"},
                "apiVersion": "?",
            }
        if doc.get("kind"):
            objects.append(_object(doc, guards))
    return objects


def _git_files(git_dir: Path, tag: str, prefix: str) -> Iterator[tuple[str, str]]:
    for path in git_ls(git_dir, tag, prefix):
        if path.endswith((".yaml", ".yml", ".tpl")) and "/tests/" not in path:
            yield path, git_show(git_dir, tag, path)


def summarize_chart(
    files: Sequence[tuple[str, str]], chart: str, release: str, namespace: str
) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """(sha256 of every file read, every object of the chart's templates and crds)."""
    pins: dict[str, str] = {}
    objects: list[dict[str, Any]] = []
    names = helper_names([text for path, text in files if path.endswith(".tpl")], chart, release)
    for path, text in files:
        pins[path] = hashlib.sha256(text.encode()).hexdigest()
        if ("/templates/" in path or "/crds/" in path) and not path.endswith(".tpl"):
            for obj in summarize_template(text, names, namespace):
                objects.append({**obj, "template": path.split(f"charts/{chart}/", 1)[-1]})
    objects.sort(key=lambda o: (o["kind"], o["name"], o["template"]))
    return pins, objects


CHARTS = (
    (
        "kueue",
        "kubernetes-sigs/kueue",
        f"v{kc.KUEUE_VERSION}",
        kc.KUEUE_RELEASE,
        KUEUE_NAMESPACE,
        kc.KUEUE_CHART,
    ),
    (
        "jobset",
        "kubernetes-sigs/jobset",
        f"v{kc.JOBSET_VERSION}",
        kc.JOBSET_RELEASE,
        JOBSET_NAMESPACE,
        kc.JOBSET_CHART,
    ),
)


def derive(git_dirs: Mapping[str, Path]) -> dict[str, Any]:
    """The whole summary from bare clones of the chart repositories."""
    out: dict[str, Any] = {}
    for chart, repo, tag, release, namespace, oci in CHARTS:
        files = list(_git_files(git_dirs[chart], tag, f"charts/{chart}"))
        pins, objects = summarize_chart(files, chart, release, namespace)
        out[chart] = {
            "chart": oci,
            "version": tag.removeprefix("v"),
            "source": {"repository": repo, "tag": tag, "path": f"charts/{chart}", "sha256": pins},
            "release": release,
            "namespace": namespace,
            "objects": objects,
        }
    return out


def dump(summary: Mapping[str, Any]) -> str:
    header = (
        "# What the Kueue and JobSet charts create, summarized from their templates at the pinned tags.\n"
        "# Generated by `python -m tpu_platform.plan.installs`; do not edit.\n"
    )
    return header + yaml.safe_dump(dict(summary), sort_keys=False, width=110, default_flow_style=False)


def load_text() -> str:
    return resources.files("tpu_platform.plan").joinpath("data", DATA_FILE).read_text()


def load() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(load_text())
    return data


def plan_section(
    resources: Sequence[Mapping[str, Any]] = (), renders: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[str, Any]:
    """What each plan carries: the summary's digest and, per chart the plan installs, its version,
    what its values render (``chart_renders``: counts and names by kind, from ``helm template``, and
    each object's field digests), and of those the CRDs with their versions and the webhooks. A values
    set with no render (the committed ones, or ``renders`` when given) says so, with the command that
    derives it."""
    from . import chart_renders

    text = load_text()
    digest = hashlib.sha256(text.encode()).hexdigest()
    summary = yaml.safe_load(text)
    if renders is None:
        renders = chart_renders.load()["renders"]
    section: dict[str, Any] = {
        "summary": f"tpu_platform/plan/data/{DATA_FILE}",
        "sha256": digest,
        "renders": f"tpu_platform/plan/data/{chart_renders.DATA_FILE}",
    }
    by_chart: dict[str, dict[str, Mapping[str, Any]]] = {}
    for entry in resources:
        if entry.get("type") == chart_renders.CHART_TYPE:
            inputs = entry.get("inputs") or {}
            name = chart_renders.chart_name(str(inputs.get("chart")))
            by_chart.setdefault(name, {})[chart_renders.values_key(inputs)] = {
                **inputs,
                "_entry": entry.get("name"),
            }
    for chart, sets in sorted(by_chart.items()):
        for key, inputs in sorted(sets.items()):
            label = chart if len(sets) == 1 else f"{chart} ({inputs['_entry']})"
            section[label] = _chart_section(summary.get(chart) or {}, inputs, key, renders.get(key))
    return section


def _chart_section(
    summary: Mapping[str, Any], inputs: Mapping[str, Any], key: str, render: Mapping[str, Any] | None
) -> dict[str, Any]:
    from .chart_renders import COMMAND

    out: dict[str, Any] = {"chart": inputs.get("chart"), "version": inputs.get("version"), "values": key[:16]}
    if render is None:
        out["rendered"] = f"not derived for these values: run {COMMAND}"
        return out
    rendered: dict[str, list[str]] = {}
    for item in render["objects"]:
        kind, _, name = str(item).partition("/")
        rendered.setdefault(kind, []).append(name)
    present = {(kind, name) for kind, names in rendered.items() for name in names}
    objects = [o for o in summary.get("objects") or [] if (o["kind"], o["name"]) in present]
    out["objects"] = {kind: len(names) for kind, names in sorted(rendered.items())}
    out["crds"] = {
        obj["name"]: ",".join(
            v["name"] + ("*" if v.get("storage") else "") + ("(deprecated)" if v.get("deprecated") else "")
            for v in obj.get("versions", [])
        )
        for obj in objects
        if obj["kind"] == "CustomResourceDefinition"
    }
    out["webhooks"] = sorted(hook.split(":", 1)[0] for obj in objects for hook in obj.get("webhooks", []))
    out["rendered"] = {kind: sorted(names) for kind, names in sorted(rendered.items())}
    if render.get("children"):
        out["children"] = dict(render["children"])
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tpu_platform.plan.installs", description=__doc__)
    parser.add_argument("--kueue-git", type=Path, required=True, help="bare clone of kubernetes-sigs/kueue")
    parser.add_argument("--jobset-git", type=Path, required=True, help="bare clone of kubernetes-sigs/jobset")
    parser.add_argument("--write", action="store_true", help=f"update tpu_platform/plan/data/{DATA_FILE}")
    args = parser.parse_args(argv)
    text = dump(derive({"kueue": args.kueue_git, "jobset": args.jobset_git}))
    write_or_print(text, DATA_FILE, args.write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
