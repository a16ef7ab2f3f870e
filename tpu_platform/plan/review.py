"""The reviewer's view of a plan change: TPU slices lost first, then every resource by action.

``plan --check`` prints this for a stale plan (committed vs freshly rendered), and CI prints it
in the job summary for a pull request (the base branch's plans vs the branch's):

    tpu-platform review BASE_PLANS_DIR PLANS_DIR [--stacks-dir stacks]

Exit status: 0, or 1 when a TPU slice pool would be replaced or deleted and the stack does not
list that pool under ``tpu-platform:acknowledgeReplacement``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from .changes import Change, Review, review
from .stacks import stack_file_config

ACK_KEY = "tpu-platform:acknowledgeReplacement"
_MAX_VALUE = 80


def _value(value: Any) -> str:
    if value is None:
        return "(unset)"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= _MAX_VALUE else text[: _MAX_VALUE - 3] + "..."


def _field_lines(change: Change, indent: str) -> list[str]:
    lines = []
    for f in change.deciding:
        lines.append(f"{indent}{f.path}: {_value(f.old)} -> {_value(f.new)}")
        if f.replaces:
            lines.append(f"{indent}  replaces: {f.replaces}")
    return lines


def format_review(result: Review) -> str:
    """Plain text: the loud TPU section at the top, then each action with its deciding fields."""
    out: list[str] = [f"== stack {result.stack}"]
    losses = result.tpu_losses
    if losses:
        out.append("!! TPU SLICES REPLACED OR DELETED: every job running on them is killed")
        for change in losses:
            ack = " (acknowledged in " + ACK_KEY + ")" if change.pool_name in result.acknowledged else ""
            out.append(f"!!   {change.action.upper()} node pool {change.pool_name} ({change.name}){ack}")
            out += ["!!   " + line for line in _field_lines(change, "  ")]
        if result.unacknowledged_losses:
            names = ", ".join(c.pool_name for c in result.unacknowledged_losses)
            out.append(
                f"!!   to go ahead on purpose, list the pools under {ACK_KEY} in the stack file: [{names}]"
            )
    if result.installs:
        out.append(
            "chart installs change (what Kueue and JobSet create: tpu_platform/plan/data/installs.yaml):"
        )
        out += [f"  {f.path}: {_value(f.old)} -> {_value(f.new)}" for f in result.installs]
    counts = ", ".join(f"{len(result.by_action(a))} {a}" for a in ("create", "update", "replace", "delete"))
    out.append(f"{counts}, {result.unchanged} unchanged")
    for change in result.changes:
        out.append(f"  {change.action:<7} {change.label}")
        if change.action in ("update", "replace"):
            out += _field_lines(change, "            ")
    return "\n".join(out) + "\n"


def acknowledged_pools(stack_config: dict[str, Any]) -> list[str]:
    """The pool names a stack file acknowledges; anything but a list of strings acknowledges nothing."""
    value = stack_config.get(ACK_KEY)
    return [str(v) for v in value] if isinstance(value, list) else []


def review_texts(stack: str, old_text: str, new_text: str, acknowledged: Sequence[str] = ()) -> Review:
    """Review two plan files' texts; an empty or missing old plan means every resource is created."""
    old = yaml.safe_load(old_text) if old_text.strip() else None
    new = yaml.safe_load(new_text) if new_text.strip() else None
    return review(
        stack, old if isinstance(old, dict) else None, new if isinstance(new, dict) else None, acknowledged
    )


def check_plan(stack: str, committed: str, rendered: str, stack_config: dict[str, Any]) -> tuple[str, bool]:
    """What ``plan --check`` prints for a stale plan, and whether it loses an unacknowledged TPU slice."""
    result = review_texts(stack, committed, rendered, acknowledged_pools(stack_config))
    return format_review(result), bool(result.unacknowledged_losses)


def review_folders(base: Path, head: Path, stacks_dir: Path) -> tuple[str, int]:
    """The review of every stack in two plan folders, and 1 if one loses an unacknowledged TPU slice."""
    stacks = sorted({p.stem for d in (base, head) if d.is_dir() for p in d.glob("*.yaml")})
    out: list[str] = []
    status = 0
    for stack in stacks:
        old, new = base / f"{stack}.yaml", head / f"{stack}.yaml"
        result = review_texts(
            stack,
            old.read_text() if old.exists() else "",
            new.read_text() if new.exists() else "",
            acknowledged_pools(stack_file_config(stacks_dir / f"Pulumi.{stack}.yaml")),
        )
        out.append(format_review(result))
        status = max(status, 1 if result.unacknowledged_losses else 0)
    return "".join(out), status
