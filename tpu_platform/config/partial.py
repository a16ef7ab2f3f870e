"""The sections of a stack that validated, for the cross-field checks of a stack whose structure failed.

Pydantic builds no ``PlatformConfig`` while any part of the stack is malformed, yet the checks need
one, and an author fixing a stack wants every problem at once. So an unknown key is dropped (nothing
reads it: the rest is what the program sees once it is removed), a section with any other structural
problem is left out (``None``), and only the checks that read no left-out section run
(``checks.READS``): no problem reported comes from a stand-in value.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Mapping
from typing import Any

from pydantic import ValidationError, create_model
from pydantic_core import ErrorDetails

from .platform import PlatformConfig

FIELDS = {field.alias or name: name for name, field in PlatformConfig.model_fields.items()}
REQUIRED = frozenset(key for key, name in FIELDS.items() if PlatformConfig.model_fields[name].is_required())


def _optional(key: str) -> tuple[Any, None]:
    """A required section's type, allowed to be absent (the checks that read it do not run)."""
    annotation: Any = PlatformConfig.model_fields[FIELDS[key]].annotation
    return (annotation | None, None)


# The whole stack's model with every section optional: what validated builds a model on its own.
_OPTIONAL: dict[str, Any] = {FIELDS[key]: _optional(key) for key in REQUIRED}
Sections = create_model("Sections", __base__=PlatformConfig, **_OPTIONAL)


def parsed_sections(
    raw: Mapping[str, Any], error: ValidationError, unread: Collection[str] = ()
) -> tuple[PlatformConfig, frozenset[str]] | None:
    """The stack as far as it validates, with its left-out sections as ``None``, and the keys of
    those sections; ``None`` when nothing builds. ``unread`` names keys whose value never reached
    ``raw`` (it could not be decoded): left out too, not replaced by a default."""
    data = copy.deepcopy(dict(raw))
    left_out = set(unread)
    errors = error.errors(include_url=False)
    while True:
        if not _drop_unknown_keys(data, errors) and not _leave_out(data, errors, left_out):
            return None
        try:
            sections = Sections.model_validate(data)
        except ValidationError as again:
            errors = again.errors(include_url=False)
            continue
        left_out |= {key for key in REQUIRED if getattr(sections, FIELDS[key]) is None}
        return without(sections, left_out), frozenset(left_out)


def without(cfg: PlatformConfig, keys: Collection[str]) -> PlatformConfig:
    """The stack with these sections ``None``: a check that reads one fails loudly rather than
    judging a default the stack never had."""
    return cfg.model_copy(update={FIELDS[key]: None for key in keys if key in FIELDS})


def _drop_unknown_keys(data: dict[str, Any], errors: list[ErrorDetails]) -> bool:
    """Remove every unknown key the raw stack holds; whether one was removed."""
    dropped = False
    for item in errors:
        if item["type"] == "extra_forbidden" and _delete(data, tuple(item["loc"])):
            dropped = True
    return dropped


def _delete(data: Any, loc: tuple[int | str, ...]) -> bool:
    """Delete the key at ``loc`` if the raw stack has that path (a fleet's derived view it has not)."""
    parent = data
    for part in loc[:-1]:
        if not _holds(parent, part):
            return False
        parent = parent[part]
    if not loc or not isinstance(parent, dict) or loc[-1] not in parent:
        return False
    del parent[loc[-1]]
    return True


def _holds(node: Any, part: int | str) -> bool:
    """Whether a raw mapping has the key, or a raw list the index."""
    if isinstance(node, dict):
        return part in node
    return isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)


def _leave_out(data: dict[str, Any], errors: list[ErrorDetails], left_out: set[str]) -> bool:
    """Leave out each section with a problem; whether a section was newly left out (an error about
    the stack as a whole leaves nothing to build on)."""
    keys = {e["loc"][0] if e["loc"] else None for e in errors}
    if None in keys or not all(isinstance(key, str) for key in keys):
        return False
    new = {str(key) for key in keys} - left_out
    left_out |= new
    for key in new:
        data.pop(key, None)
    return bool(new)
