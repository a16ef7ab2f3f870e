"""The state the real engine wrote, held against the offline plan and the charts' rendering.

The state file is the engine's record of what ``pulumi up`` registered: each resource's type, URN
(name and parent chain), provider, dependencies and checked inputs. Put in the plan's words
(``as_plan_entry``), it must be the plan; a Chart's children must be what ``helm template``
renders with the same inputs; and no credential of the stack may sit in it in plain text.
"""

from __future__ import annotations

import base64
import re
from typing import Any

import yaml

from . import charts

CHART_TYPE = "kubernetes:helm.sh/v4:Chart"


def urn_parts(urn: str) -> tuple[str, str]:
    """``urn:pulumi:stack::project::parent$type::name`` -> (type, name)."""
    _, _, qualified, name = urn.split("::", 3)
    return qualified.rsplit("$", 1)[-1], name


NOT_IN_PLAN = ("pulumi:pulumi:Stack", "pulumi:providers:pulumi")


def label(urn: str) -> str:
    rtype, name = urn_parts(urn)
    return f"{rtype}::{name}"


def planned_labels(plan: dict[str, Any]) -> set[str]:
    return {f"{r['type']}::{r['name']}" for r in plan["resources"]}


def is_chart_child_urn(urn: str) -> bool:
    qualified = urn.split("::", 3)[2]
    return CHART_TYPE in qualified.split("$")[:-1]


def comparable(resources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The state's resources the plan shows: all but the stack, default providers and chart children."""
    return [
        r
        for r in resources
        if r["type"] not in NOT_IN_PLAN
        and not is_chart_child_urn(r["urn"])
        and not (r["type"].startswith("pulumi:providers:") and urn_parts(r["urn"])[1].startswith("default"))
    ]


def as_plan_entry(resource: dict[str, Any]) -> dict[str, Any]:
    """A state resource in the plan's words: type, name, parent, provider, dependsOn, inputs."""
    entry: dict[str, Any] = {"type": resource["type"], "name": urn_parts(resource["urn"])[1]}
    if resource.get("parent"):
        entry["parent"] = label(resource["parent"])
    if resource.get("provider"):
        entry["provider"] = label(resource["provider"].rsplit("::", 1)[0])
    deps = sorted(label(d) for d in resource.get("dependencies") or [])
    if deps:
        entry["dependsOn"] = deps
    if resource.get("inputs"):
        inputs = unsecret(resource["inputs"])
        if resource["type"].startswith("pulumi:providers:"):
            inputs = {k: v for k, v in inputs.items() if k not in ENGINE_PROVIDER_INPUTS}
        entry["inputs"] = inputs
    return entry


SECRET_SIG = "4dabf18193072939515e22adb298388d"  # the engine's secret marker (sdk/go/common/resource/sig)
# Inputs the engine adds to every provider resource: the plugin version the SDK asked for and the
# engine's own bookkeeping; the program sets neither.
ENGINE_PROVIDER_INPUTS = ("version", "__internal")


def unsecret(value: Any) -> Any:
    """State secrets as the plan shows them (``[secret]``)."""
    if isinstance(value, dict):
        if SECRET_SIG in value:
            return "[secret]"
        return {k: unsecret(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unsecret(v) for v in value]
    return value


COMPARED = ("type", "name", "parent", "dependsOn", "provider", "inputs")


def plan_mismatches(plan: dict[str, Any], resources: list[dict[str, Any]]) -> list[str]:
    """Where the engine's registered resources and the offline plan disagree, one line each."""
    planned = {f"{r['type']}::{r['name']}": r for r in plan["resources"]}
    state = {f"{e['type']}::{e['name']}": e for e in map(as_plan_entry, comparable(resources))}
    out = [f"registered, not in the plan: {k}" for k in sorted(set(state) - set(planned))]
    out += [f"in the plan, not registered: {k}" for k in sorted(set(planned) - set(state))]
    custom = {label(r["urn"]): bool(r.get("custom")) for r in resources}
    for key in sorted(set(state) & set(planned)):
        # A component's inputs and provider are not kept in the state (a Chart's children are
        # compared with helm's rendering instead).
        fields = COMPARED if custom.get(key) else COMPARED[:4]
        want = {k: planned[key].get(k) for k in fields}
        want["dependsOn"] = sorted(want["dependsOn"] or [])
        for field_name, value in want.items():
            got = state[key].get(field_name) or ([] if field_name == "dependsOn" else None)
            if value != got:
                out.append(f"{key} {field_name}: plan {value!r}, engine {got!r}")
    return out


def chart_children(resources: list[dict[str, Any]]) -> dict[str, set[tuple[str, str]]]:
    """Each Chart's registered children as (kind, namespace/name), by the Chart's resource name."""
    charts_by_urn = {r["urn"]: urn_parts(r["urn"])[1] for r in resources if r["type"] == CHART_TYPE}
    out: dict[str, set[tuple[str, str]]] = {name: set() for name in charts_by_urn.values()}
    for r in resources:
        chart = charts_by_urn.get(r.get("parent", ""))
        if chart is not None:
            inputs = r.get("inputs") or {}
            out[chart].add((str(inputs.get("kind")), _object_name(inputs.get("metadata") or {})))
    return out


def chart_resource_name(plan: dict[str, Any], release: str) -> str:
    """The plan's name of the Chart resource that installs ``release``."""
    for res in plan["resources"]:
        if res["type"] == CHART_TYPE and (res.get("inputs") or {}).get("name") == release:
            return str(res["name"])
    raise KeyError(f"no Chart of release {release!r} in the plan")


def _object_name(meta: dict[str, Any]) -> str:
    return f"{meta['namespace']}/{meta.get('name')}" if meta.get("namespace") else str(meta.get("name"))


def rendered_objects(chart: charts.RenderedChart) -> set[tuple[str, str]]:
    """What ``helm template`` renders for the same chart inputs, as (kind, namespace/name)."""
    return {(str(o["kind"]), _object_name(o.get("metadata") or {})) for o in chart.objects}


PEM_KEY = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----(?:\\n|\s)+[A-Za-z0-9+/=]{32}")


def leaked_secrets(text: str, kubeconfig: str) -> list[str]:
    """Credentials of ``kubeconfig`` (client keys, tokens) found as plain text in ``text`` (a
    state file): any 32-character piece of a value, of its decoded PEM body, or any PEM private key
    with a body (a CRD's description may name the header alone)."""
    config = yaml.safe_load(kubeconfig)
    found = []
    for user in config.get("users") or []:
        for key in ("client-key-data", "token"):
            value = str((user.get("user") or {}).get(key) or "")
            if not value:
                continue
            forms = [value]
            if key.endswith("-data"):
                pem = base64.b64decode(value).decode()
                forms.append("".join(line for line in pem.splitlines() if not line.startswith("-----")))
            if any(piece in text for form in forms for piece in _pieces(form)):
                found.append(f"user {user['name']}: {key}")
    if PEM_KEY.search(text):
        found.append("a PEM private key")
    return found


def _pieces(value: str, size: int = 32) -> list[str]:
    return [value[i : i + size] for i in range(0, max(len(value) - size, 0) + 1, size)]
