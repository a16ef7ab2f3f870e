"""The committed offline plan: a sorted, deterministic YAML document of every resource."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from .harness import Rendering, urn_label

PLAN_VERSION = 1


def normalize(value: Any) -> Any:
    """Protobuf structs carry every number as a float; integral ones read better as ints."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: normalize(item) for key, item in sorted(value.items())}
    if isinstance(value, list):
        return [normalize(item) for item in value]
    return value


IMAGE_TYPE = "docker-build:index:Image"


def _portable_build_paths(type_: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """The controller image's build paths relative to its build context, the folder holding the
    ``tpu_platform`` package: the engine gets the machine's real paths, but a committed plan reads
    the same from a checkout and from an installed wheel (``.`` and ``tpu_platform/hotswap/Dockerfile``)."""
    if type_ != IMAGE_TYPE:
        return inputs
    root = Path(str(resources.files("tpu_platform"))).resolve().parent
    out = dict(inputs)
    for key in ("context", "dockerfile"):
        block = out.get(key)
        if isinstance(block, dict) and isinstance(block.get("location"), str):
            where = Path(block["location"]).resolve()
            if where == root or root in where.parents:
                out[key] = {**block, "location": where.relative_to(root).as_posix() or "."}
    return out


def plan_document(stack: str, rendering: Rendering, summary: dict[str, Any]) -> dict[str, Any]:
    """Every registered resource with type, name, parent, provider, dependencies and inputs; for a
    custom resource, which inputs take another resource's outputs (``propertyDependencies``: what
    the engine makes unknown when that resource is deleted before it is replaced), and the
    resource options that change its diff (``options``: ``replaceOnChanges``, ``deleteBeforeReplace``).

    ``installs`` lists what the Kueue and JobSet charts render with the plan's own values
    (``tpu_platform.plan.installs``).
    """
    from .installs import plan_section

    resources = []
    for res in sorted(rendering.resources, key=lambda r: (r.type, r.name)):
        entry: dict[str, Any] = {"type": res.type, "name": res.name}
        if res.parent_label:
            entry["parent"] = res.parent_label
        if res.provider:
            entry["provider"] = res.provider
        if res.dependencies:
            entry["dependsOn"] = sorted(urn_label(dep) for dep in res.dependencies)
        if res.custom and res.property_dependencies:
            entry["propertyDependencies"] = {
                key: sorted(urn_label(dep) for dep in deps)
                for key, deps in sorted(res.property_dependencies.items())
            }
        if res.options:
            entry["options"] = dict(sorted(res.options.items()))
        if res.custom or res.inputs:  # remote components (helm.v4.Chart) have inputs too
            entry["inputs"] = normalize(_portable_build_paths(res.type, res.inputs))
        resources.append(entry)
    return {
        "planVersion": PLAN_VERSION,
        "stack": stack,
        "summary": normalize(summary),
        "outputs": normalize({k: v for k, v in rendering.outputs.items() if k != "summary"}),
        "installs": plan_section(resources),
        "resourceCount": len(resources),
        "resources": resources,
    }


class _PlanDumper(yaml.SafeDumper):
    """Block style, no aliases: a plan must read the same for every reviewer."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str_presenter(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_PlanDumper.add_representer(str, _str_presenter)


def dump_plan(document: dict[str, Any]) -> str:
    header = (
        "# Offline plan: every resource `pulumi up` registers for this stack, rendered under\n"
        "# Pulumi's mocks. Regenerate with `python -m tpu_platform plan <stack>`; do not edit.\n"
    )
    body = yaml.dump(
        document, Dumper=_PlanDumper, sort_keys=False, default_flow_style=False, width=100, allow_unicode=True
    )
    return header + body
