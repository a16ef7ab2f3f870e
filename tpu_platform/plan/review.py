"""The reviewer's view of a plan change: TPU slices lost first, then every resource by action.

``plan --check`` prints this for a stale plan (committed vs freshly rendered), ``tpu-platform review
STACK`` for a stack against a git ref, and CI in the job summary for a pull request:

    tpu-platform review STACK [--base REF]
    tpu-platform review BASE_PLANS_DIR PLANS_DIR [--stacks-dir stacks]

A component whose inputs change (a Chart's values) is listed apart: the engine runs no step for
it, and what it changes is listed with the resources (the Chart's children, from what the pinned
chart renders).

Exit status: 2 when the review cannot be trusted (a resource type or field no provider source
covers, a changed Chart whose rendered children no plan holds, an acknowledged name that is no TPU
slice pool), else 1 when a TPU slice pool would be
replaced or deleted and the stack does not list it under ``tpu-platform:acknowledgeReplacement``,
else 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .acknowledgements import acknowledgement_problems
from .changes import Change, FieldChange, Review, review
from .chart_renders import COMMAND as RENDERS_COMMAND
from .knowledge import missing_knowledge
from .stacks import stack_file_config
from .value_diff import masked, value_lines

ACK_KEY = "tpu-platform:acknowledgeReplacement"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when built in: a plan is large
FIELD_INDENT = "            "


def _field_lines(change: Change, fields: Sequence[FieldChange], indent: str) -> list[str]:
    lines = []
    for f in fields:
        old, new = masked(change.type, f.path, f.old), masked(change.type, f.path, f.new)
        lines += value_lines(f.path, old, new, indent)
        if f.replaces:
            lines.append(f"{indent}  replaces: {f.replaces}")
    return lines


@dataclass(frozen=True)
class Outcome:
    """A stack's review, with the stack-file problems of its acknowledgements."""

    result: Review
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def status(self) -> int:
        if self.errors or not self.result.trustworthy:
            return 2
        return 1 if self.result.unacknowledged_losses else 0


def _untrusted(result: Review) -> list[str]:
    out: list[str] = []
    if result.unknown_types:
        out.append("!! NO REPLACEMENT KNOWLEDGE: this review cannot tell an update from a replacement for")
        out += [f"!!   {missing_knowledge(kind)}" for kind in result.unknown_types]
    for change in result.unclassified:
        out.append(f"!! UNKNOWN EFFECT on {change.label}:")
        out += [f"!!   {f.path}: {f.unknown}" for f in change.unknown]
    for chart in result.untold_children:
        out.append(
            f"!! CHART CHILDREN UNKNOWN: {chart} changes and a plan holds no digests of what it renders "
            f"with its values: run {RENDERS_COMMAND}, then render the plans again"
        )
    return out


def format_review(result: Review, errors: Sequence[str] = (), warnings: Sequence[str] = ()) -> str:
    """Plain text: the loud sections at the top (what cannot be trusted, TPU slices lost,
    acknowledgement problems), then each action with its deciding fields."""
    out: list[str] = [f"== stack {result.stack}"]
    out += _untrusted(result)
    out += [f"!! {line}" for line in errors]
    out += [f"warning: {line}" for line in warnings]
    losses = result.tpu_losses
    if losses:
        out.append("!! TPU SLICES REPLACED OR DELETED: every job running on them is killed")
        for change in losses:
            ack = " (acknowledged in " + ACK_KEY + ")" if change.pool_name in result.acknowledged else ""
            out.append(f"!!   {change.action.upper()} node pool {change.pool_name} ({change.name}){ack}")
            out += ["!!   " + line for line in _field_lines(change, change.deciding, "  ")]
        if result.unacknowledged_losses:
            names = ", ".join(c.pool_name for c in result.unacknowledged_losses)
            out.append(
                f"!!   to go ahead on purpose, list the pools under {ACK_KEY} in the stack file: [{names}]"
            )
    if result.installs:
        out.append(
            "chart installs change (what the Kueue and JobSet charts render with the plan's values: "
            "tpu_platform/plan/data/chart_renders.yaml):"
        )
        for f in result.installs:
            out += value_lines(f.path, f.old, f.new, "  ")
    if result.components:
        out.append(
            "component inputs change (no engine step of their own: what they change below them is listed "
            "with the resources):"
        )
        for change in result.components:
            out.append(f"  inputs  {change.label}")
            out += _field_lines(change, change.fields, FIELD_INDENT)
    counts = ", ".join(f"{len(result.by_action(a))} {a}" for a in ("create", "update", "replace", "delete"))
    out.append(f"{counts}, {result.unchanged} unchanged")
    for change in result.changes:
        unknown = change.type in result.unknown_types or bool(change.unknown)
        action = "unknown" if unknown and change.action == "update" else change.action
        out.append(f"  {action:<7} {change.label}")
        if change.action in ("update", "replace"):
            out += _field_lines(change, change.deciding, FIELD_INDENT)
    return "\n".join(out) + "\n"


def acknowledged_pools(stack_config: dict[str, Any]) -> list[str]:
    """The pool names a stack file acknowledges; anything but a list of strings acknowledges nothing."""
    value = stack_config.get(ACK_KEY)
    return [str(v) for v in value] if isinstance(value, list) else []


def review_texts(stack: str, old_text: str, new_text: str, acknowledged: Sequence[str] = ()) -> Review:
    """Review two plan files' texts; an empty or missing old plan means every resource is created."""
    old = yaml.load(old_text, Loader=_LOADER) if old_text.strip() else None
    new = yaml.load(new_text, Loader=_LOADER) if new_text.strip() else None
    return review(
        stack, old if isinstance(old, dict) else None, new if isinstance(new, dict) else None, acknowledged
    )


def review_stack(
    stack: str, old_text: str, new_text: str, stack_config: dict[str, Any], source: str
) -> Outcome:
    """One stack's review, its acknowledgements held to it; ``source`` names the stack file."""
    names = acknowledged_pools(stack_config)
    result = review_texts(stack, old_text, new_text, names)
    errors, warnings = acknowledgement_problems(result, names)
    return Outcome(result, tuple(f"{source}: {e}" for e in errors), tuple(f"{source}: {w}" for w in warnings))


def render_outcome(outcome: Outcome) -> str:
    return format_review(outcome.result, outcome.errors, outcome.warnings)


def check_plan(
    stack: str, committed: str, rendered: str, stack_config: dict[str, Any], source: str = "the stack file"
) -> tuple[str, bool]:
    """What ``plan --check`` prints for a stale plan, and whether it loses an unacknowledged TPU slice."""
    outcome = review_stack(stack, committed, rendered, stack_config, source)
    return render_outcome(outcome), bool(outcome.result.unacknowledged_losses)


def review_folders(base: Path, head: Path, stacks_dir: Path) -> tuple[str, int]:
    """The review of every stack in two plan folders, and the worst status of them."""
    stacks = sorted({p.stem for d in (base, head) if d.is_dir() for p in d.glob("*.yaml")})
    out: list[str] = []
    status = 0
    for stack in stacks:
        old, new = base / f"{stack}.yaml", head / f"{stack}.yaml"
        stack_file = stacks_dir / f"Pulumi.{stack}.yaml"
        outcome = review_stack(
            stack,
            old.read_text() if old.exists() else "",
            new.read_text() if new.exists() else "",
            stack_file_config(stack_file),
            str(stack_file),
        )
        out.append(render_outcome(outcome))
        status = max(status, outcome.status)
    return "".join(out), status
