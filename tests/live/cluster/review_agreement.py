"""Resource by resource: the real engine's ``preview --diff`` against ``tpu-platform review``.

Each side is put in the same words, per resource label (``type::name``, the plan's key): an
operation (create, update, replace, delete or same) and, for an update or a replace, the set of
top-level input fields that changed (``spec``, ``metadata``, ``data``, ``value``...). Where the
engine's words differ from the plan's only by how the engine reports a step, they are normalised
here, each with the upstream source that says why.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pulumi import automation as auto

from tpu_platform.plan.changes import Review

from .engine_state import NOT_IN_PLAN, is_chart_child_urn, urn_parts

# A replacement is one logical change that the engine carries out as up to three steps, each with
# its own ResourcePreEvent: ``create-replacement``, ``replace`` (the logical step) and
# ``delete-replaced``, in that order or with the delete first when the provider asks for
# deleteBeforeReplace (pulumi pkg/resource/deploy/step_generator.go, generateStepsFromDiff;
# the OpType docs in sdk/python/lib/pulumi/automation/events.py). ``review`` names it once.
REPLACE_STEPS = frozenset({"replace", "create-replacement", "delete-replaced"})
# Steps that change nothing: the engine reports every registered resource, the unchanged as ``same``.
QUIET_STEPS = frozenset({"same", "read", "refresh"})
SAME = "same"
ABSENT = "absent"  # a planned resource the engine reported no step for
FIELD_RE = re.compile(r"[.\[]")


@dataclass(frozen=True)
class Step:
    """One ResourcePreEvent: the step's operation and every property path it names as changed."""

    op: str
    type: str
    name: str
    urn: str
    paths: frozenset[str]


@dataclass
class StepEvents:
    """The engine's steps from an operation's event stream (``on_event``).

    A step's changed properties are its ``detailedDiff`` paths, its ``diffs`` (top-level keys) and
    its ``keys``: "keys causing a replacement" (StepEventMetadata in pulumi's automation events).
    A dependent replacement carries its keys alone: when a resource is deleted before it is
    replaced, the engine replaces each dependent whose provider Diff, with the inputs that depend
    on it made unknown, asks for a replacement, and reports the step with those keys and no diff
    (pulumi pkg/resource/deploy/step_generator.go, calculateDependentReplacements).
    """

    steps: list[Step] = field(default_factory=list)

    def __call__(self, event: auto.EngineEvent) -> None:
        pre = event.resource_pre_event
        if pre is None:
            return
        meta = pre.metadata
        rtype, name = urn_parts(meta.urn)
        paths = {*(meta.detailed_diff or {}), *(meta.diffs or ()), *(meta.keys or ())}
        self.steps.append(Step(str(meta.op.value), rtype, name, meta.urn, frozenset(paths)))


@dataclass(frozen=True)
class Side:
    """What one side says of one resource."""

    op: str
    fields: frozenset[str] = frozenset()

    def __str__(self) -> str:
        return f"{self.op} {{{', '.join(sorted(self.fields))}}}" if self.fields else self.op


@dataclass(frozen=True)
class Verdict:
    label: str
    engine: Side
    review: Side

    @property
    def agrees(self) -> bool:
        return self.engine == self.review

    def __str__(self) -> str:
        return f"{self.label}: engine {self.engine}, review {self.review}"


_STEP = re.compile(r"\[[^\]]*\]|[^.\[\]]+")
_KEYED = re.compile(r"\[([^=\]]+)=([^\]]*)\]")
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_]+")  # pulumi sdk resource/properties_path.go requiresQuote


def _item_index(items: Any, key: str, value: str) -> int | None:
    for index, item in enumerate(items if isinstance(items, list) else []):
        if isinstance(item, dict) and str(item.get(key)) == value:
            return index
    return None


def engine_path(path: str, old: Any, new: Any) -> str:
    """A review path as the engine's detailed diff names it: a list item named by a key
    (``[name=x]``) by its index in the new inputs (the old ones for an item removed), and a map key
    of other characters than letters, digits and ``_`` quoted (``annotations["a.b/c"]``: Pulumi's
    ``PropertyPath.String``, pulumi v3.274.0 sdk/go/common/resource/properties_path.go); the
    review splits such a key at its dots, so it is joined back where the inputs hold it whole."""
    steps = _STEP.findall(path)
    out: list[str] = []
    cursors = [old, new]
    i = 0
    while i < len(steps):
        step = steps[i]
        keyed = _KEYED.fullmatch(step)
        if keyed:
            found = [_item_index(c, *keyed.groups()) for c in cursors]
            index = found[1] if found[1] is not None else found[0]
            out.append(f"[{index}]")
            cursors = [c[f] if f is not None else None for c, f in zip(cursors, found, strict=True)]
            i += 1
            continue
        if step.startswith("["):
            index = int(step.strip("[]"))
            out.append(step)
            cursors = [c[index] if isinstance(c, list) and index < len(c) else None for c in cursors]
            i += 1
            continue
        width = 1
        for span in range(len(steps) - i, 0, -1):  # the longest dotted run a mapping holds as one key
            joined = ".".join(steps[i : i + span])
            if any(isinstance(c, dict) and joined in c for c in cursors):
                width = span
                break
        key = ".".join(steps[i : i + width])
        plain = _PLAIN_KEY.fullmatch(key)
        quoted = key.replace('"', '\\"')
        out.append(("." if out else "") + key if plain else f'["{quoted}"]')
        cursors = [c.get(key) if isinstance(c, dict) else None for c in cursors]
        i += width
    return "".join(out)


def top_field(path: str) -> str:
    """``spec.resourceGroups[0].flavors`` or ``data["config.yaml"]`` -> ``spec`` / ``data``."""
    return FIELD_RE.split(path, maxsplit=1)[0]


def _collapse(ops: set[str]) -> str:
    if ops & REPLACE_STEPS:
        return "replace"
    changing = ops - QUIET_STEPS
    if len(changing) > 1:
        return "+".join(sorted(changing))  # no single operation: never equal to review's
    return next(iter(changing), SAME)


def _in_plan_terms(step: Step) -> bool:
    """Resources the plan has no entry for: the stack itself and the engine's default providers
    (``engine_state.comparable`` leaves out the same ones)."""
    if step.type in NOT_IN_PLAN:
        return False
    return not (step.type.startswith("pulumi:providers:") and urn_parts(step.urn)[1].startswith("default"))


def engine_side(steps: Iterable[Step]) -> dict[str, tuple[Side, bool]]:
    """Per label: the engine's operation and changed top-level fields, and whether it is a chart's child."""
    ops: dict[str, set[str]] = {}
    fields: dict[str, set[str]] = {}
    children: dict[str, bool] = {}
    for step in steps:
        if not _in_plan_terms(step):
            continue
        label = f"{step.type}::{step.name}"
        ops.setdefault(label, set()).add(step.op)
        fields.setdefault(label, set()).update(top_field(p) for p in step.paths)
        children[label] = is_chart_child_urn(step.urn)
    out = {}
    for label, seen in ops.items():
        op = _collapse(seen)
        # The fields an update or a replace changed; a create's or a delete's are the whole object.
        changed = frozenset(fields[label]) if op in ("update", "replace") else frozenset()
        out[label] = (Side(op, changed), children[label])
    return out


def review_side(result: Review) -> dict[str, Side]:
    out = {}
    for change in result.changes:
        changed = (
            {top_field(f.path) for f in change.fields} if change.action in ("update", "replace") else set()
        )
        out[change.label] = Side(change.action, frozenset(changed))
    return out


def compare(steps: Iterable[Step], result: Review, planned: Iterable[str]) -> list[Verdict]:
    """One verdict per resource of either plan, and per chart child either side changes.

    The plans list no chart child as a resource (a Chart's children are helm's rendering: the
    review tells them from the digests each plan's install section holds), so a child neither side
    changes is not counted.
    """
    engine = engine_side(steps)
    reviewed = review_side(result)
    labels = set(planned) | set(reviewed)
    labels |= {label for label, (side, child) in engine.items() if not child or side.op != SAME}
    verdicts = []
    for label in sorted(labels):
        side = engine.get(label, (Side(ABSENT), False))[0]
        verdicts.append(Verdict(label, side, reviewed.get(label, Side(SAME))))
    return verdicts
