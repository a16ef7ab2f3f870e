"""Pydantic's structural errors on a whole stack, as one actionable line per problem."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from .problems import format_path, unknown_key


def _owner_model(model: type[BaseModel] | None, loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """Walk ``loc`` through the model to the model class where the last key of ``loc`` stood."""
    current: Any = model
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        field = next(
            (f for name, f in current.model_fields.items() if part in (name, f.alias)),
            None,
        )
        if field is None:
            return None
        current = _innermost_model(field.annotation)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return current
    return None


def _known_keys(model: type[BaseModel] | None, loc: tuple[int | str, ...]) -> list[str] | None:
    """The keys valid where an unknown key stood."""
    owner = _owner_model(model, loc)
    if owner is None:
        return None
    return sorted(f.alias or name for name, f in owner.model_fields.items())


def _misused_key_hint(model: type[BaseModel] | None, loc: tuple[int | str, ...]) -> str | None:
    """A model's explanation for a key people copy from elsewhere (``StackModel.misused_keys``)."""
    owner = _owner_model(model, loc)
    hints: dict[str, str] = getattr(owner, "misused_keys", {}) if owner is not None else {}
    return hints.get(str(loc[-1])) if loc else None


def _innermost_model(annotation: Any) -> Any:
    """Find the model class inside ``list[X]``, ``X | None``, ``dict[str, X]``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _innermost_model(arg)
        if found is not None:
            return found
    return None


def explain(error: ValidationError, model: type[BaseModel] | None = None) -> list[str]:
    """Turn a pydantic error on the whole stack into one actionable line per problem."""
    lines: list[str] = []
    for item in error.errors(include_url=False):
        loc = tuple(item["loc"])
        path = format_path(loc)
        kind = item["type"]
        msg = str(item["msg"])
        if kind == "extra_forbidden" and (misused := _misused_key_hint(model, loc)):
            lines.append(f"{path}: {misused}")
        elif kind == "extra_forbidden":
            lines.append(f"{path}: {unknown_key(str(loc[-1]), _known_keys(model, loc) or [])}")
        elif kind == "missing":
            lines.append(f"{path}: required; add it to the stack file")
        elif kind == "value_error":
            lines.append(f"{path}: {msg.removeprefix('Value error, ')}")
        else:
            lines.append(f"{path}: {_plain(kind, msg)} (got {item.get('input')!r}); change the value")
    return lines


_SHAPES = {
    "model_type": "must be a mapping (indented key: value lines under it)",
    "model_attributes_type": "must be a mapping (indented key: value lines under it)",
    "dict_type": "must be a mapping (indented key: value lines under it)",
    "list_type": "must be a list (lines starting with '- ' under it)",
    "string_type": "must be text",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
}


def _plain(kind: str, msg: str) -> str:
    """Pydantic's words as a stack author reads them: what the value must be."""
    return _SHAPES.get(kind) or msg.replace("Input should be", "must be").replace("Value should", "must")
