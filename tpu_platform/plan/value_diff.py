"""A changed value as a reviewer reads it: whole, and as a line diff when it spans lines.

A multi-line string (a ConfigMap's config file, a chart's Kueue Configuration), a JSON document
held in a string (a dashboard) and a mapping or list too long for one line show as a unified diff
of their lines (the structure as YAML); any other value shows whole, never cut short. A value the
plan redacted stays ``[secret]``, and so does every value of a Kubernetes Secret's ``data`` and
``stringData``.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

import yaml

from .harness import REDACTED

SECRET_TYPE = "kubernetes:core/v1:Secret"
SECRET_FIELDS = ("data", "stringData")
CONTEXT_LINES = 2
ONE_LINE = 100  # a mapping or list longer than this in JSON diffs by lines


def masked(resource_type: str, path: str, value: Any) -> Any:
    """``[secret]`` for a Secret's data, the value otherwise."""
    if value is None or resource_type != SECRET_TYPE:
        return value
    head = path.split(".", 1)[0].split("[", 1)[0]
    return REDACTED if head in SECRET_FIELDS else value


def inline(value: Any) -> str:
    if value is None:
        return "(unset)"
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _lines(value: Any) -> list[str] | None:
    """The lines a value diffs by: a multi-line string's, a JSON document's pretty-printed, a long
    mapping's or list's as YAML."""
    if isinstance(value, dict | list) and len(inline(value)) > ONE_LINE:
        return yaml.safe_dump(value, sort_keys=True, default_flow_style=False, width=100).splitlines()
    if not isinstance(value, str):
        return None
    if "\n" in value:
        return value.splitlines()
    if value[:1] in "{[":
        try:
            doc = json.loads(value)
        except ValueError:
            return None
        return json.dumps(doc, indent=2, sort_keys=True).splitlines()
    return None


def value_lines(path: str, old: Any, new: Any, indent: str) -> list[str]:
    """``path: old -> new``, or ``path:`` and a unified diff when either side spans lines."""
    before, after = _lines(old), _lines(new)
    if (before is None and after is None) or REDACTED in (old, new):
        return [f"{indent}{path}: {inline(old)} -> {inline(new)}"]
    diff = difflib.unified_diff(
        before if before is not None else ([] if old is None else [inline(old)]),
        after if after is not None else ([] if new is None else [inline(new)]),
        lineterm="",
        n=CONTEXT_LINES,
    )
    body = [line for line in diff if not line.startswith(("---", "+++"))]
    return [f"{indent}{path}:"] + [f"{indent}  {line}" for line in body]
