"""``tpu-pool-replacement``: a preview must not replace or delete a TPU slice nobody acknowledged.

A replaced or deleted TPU node pool kills every job on the slice (and may lose a reservation's
capacity to someone else). pulumi-policy shows a policy only the new state of each resource, so
the rule compares it with a baseline: the offline plan of what is deployed (``plans/<stack>.yaml``
at the deployed commit, given as ``baselinePlan``), field by field, with the same replacement
fields as ``plan --check`` (``tpu_platform.plan.changes``: the providers' ForceNew fields, and a
slice's zone and topology). A pool the stack lists under ``tpu-platform:acknowledgeReplacement``
may go; without a baseline the rule does not apply (it never guesses).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from ..plan.changes import classify
from ..plan.review import ACK_KEY, acknowledged_pools
from ..plan.stacks import stack_file_config
from ..tpu_pools import NODE_POOL, is_tpu_node_pool
from .resources import Resource, Stack, Violation, is_unknown, urn_name, urn_types
from .rules import Config, Rule

NAME = "tpu-pool-replacement"


def _label(urn: str | None) -> str | None:
    """A URN as the plan writes parents: ``type::name``."""
    if not urn:
        return None
    types = urn_types(urn)
    return f"{types[-1]}::{urn_name(urn)}" if types else urn


def _entry(resource: Resource) -> dict[str, Any]:
    return {
        "type": resource.type,
        "name": resource.name,
        "parent": _label(resource.parent),
        "inputs": dict(resource.props),
    }


def _known(value: Any) -> bool:
    if is_unknown(value):
        return False
    if isinstance(value, Mapping):
        return all(_known(v) for v in value.values())
    if isinstance(value, list):
        return all(_known(v) for v in value)
    return True


def check_tpu_pool_replacement(stack: Stack, config: Config) -> list[Violation]:
    """A violation per baseline TPU pool the stack would replace or delete, unless acknowledged."""
    baseline = [
        e for e in config.get("baseline") or [] if isinstance(e, Mapping) and e.get("type") == NODE_POOL
    ]
    acknowledged = {str(name) for name in config.get("acknowledgeReplacement") or []}
    current = {(r.type, r.name): r for r in stack.of_type(NODE_POOL)}
    violations: list[Violation] = []
    for old in baseline:
        if not is_tpu_node_pool(NODE_POOL, old.get("inputs") or {}):
            continue
        res = current.get((NODE_POOL, str(old.get("name"))))
        new = _entry(res) if res is not None else None
        if new is not None and new["parent"] is None:
            new["parent"] = old.get("parent")  # the engine did not say: no evidence of a move
        change = classify(old, new)
        if change is None or change.action not in ("replace", "delete") or change.pool_name in acknowledged:
            continue
        # A value the preview cannot know yet is not evidence of a replacement.
        forced = [f for f in change.deciding if f.replaces and _known(f.new)]
        if change.action == "replace" and not forced:
            continue
        why = (
            "; ".join(f"{f.path}: {f.old} -> {f.new} ({f.replaces})" for f in forced)
            or "removed from the stack"
        )
        violations.append(
            Violation(
                NAME,
                f"TPU node pool {change.pool_name!r} would be {change.action}d ({why}): every job running on "
                f"the slice is killed. If that is intended, list {change.pool_name!r} under {ACK_KEY} in "
                "the stack file",
                res.urn if res is not None else None,
            )
        )
    return violations


RULE = Rule(
    NAME,
    "No TPU slice node pool is replaced or deleted unless the stack acknowledges it by name "
    f"({ACK_KEY}); compared with the plan of what is deployed (baselinePlan).",
    stack_check=check_tpu_pool_replacement,
    config_properties={
        "baselinePlan": {
            "type": "string",
            "default": "",
            "description": "Path of the offline plan of what is deployed (plans/<stack>.yaml at the deployed "
            "commit). Empty: the policy does not apply.",
        },
        "acknowledgeReplacement": {
            "type": "array",
            "items": {"type": "string"},
            "default": [],
            "description": f"Pools that may be replaced, in addition to the stack's {ACK_KEY}.",
        },
    },
)


def stack_acknowledgements(stack_file: Path) -> list[str]:
    """The pool names a stack file lists under ``tpu-platform:acknowledgeReplacement``."""
    return acknowledged_pools(stack_file_config(stack_file))


def prepare(settings: Mapping[str, Any], stack_file: Path | None) -> dict[str, Any]:
    """Settings with the baseline plan's resources and the stack's acknowledgements read in (the I/O)."""
    out = dict(settings)
    path = str(settings.get("baselinePlan") or "")
    if path:
        plan = yaml.safe_load(Path(path).read_text()) or {}
        out["baseline"] = plan.get("resources") or [] if isinstance(plan, dict) else []
    acknowledged = list(settings.get("acknowledgeReplacement") or [])
    if stack_file is not None:
        acknowledged += stack_acknowledgements(stack_file)
    out["acknowledgeReplacement"] = acknowledged
    return out
