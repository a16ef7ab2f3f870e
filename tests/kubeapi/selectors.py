"""Label and field selectors as the API server parses them.

Label selector grammar and semantics: k8s.io/apimachinery/pkg/labels/selector.go (``=``, ``==``,
``!=``, ``in``, ``notin``, ``key`` exists, ``!key``); field selectors: k8s.io/apimachinery/pkg/fields
(``=``, ``==``, ``!=`` only), on the fields each resource registers (``metadata.name``,
``metadata.namespace`` for all; ``spec.nodeName``, ``status.phase`` for pods). An unknown field or a
malformed selector is a 400 BadRequest, as on the real server.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

Matcher = Callable[[Mapping[str, str]], bool]

_KEY = r"(?:[a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?/)?[a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?"
_VALUE = r"(?:[a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?)?"
_SET = re.compile(rf"^\s*({_KEY})\s+(in|notin)\s+\(([^)]*)\)\s*$")
_OP = re.compile(rf"^\s*({_KEY})\s*(==|=|!=)\s*({_VALUE})\s*$")
_EXISTS = re.compile(rf"^\s*(!?)\s*({_KEY})\s*$")

FIELDS: dict[str, tuple[str, ...]] = {
    "pods": ("spec.nodeName", "status.phase", "spec.schedulerName", "spec.serviceAccountName"),
    "events": ("regarding.name", "regarding.kind", "regarding.namespace", "reason", "type"),
}


class SelectorError(ValueError):
    """A selector the API server would reject with 400."""


def _split(text: str) -> list[str]:
    """Split on commas outside parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p for p in parts if p.strip()]


def label_matcher(text: str) -> Matcher:
    """Parse a label selector; empty matches everything."""
    tests: list[tuple[str, str, frozenset[str]]] = []
    for part in _split(text or ""):
        if m := _SET.match(part):
            values = frozenset(v.strip() for v in m.group(5).split(",") if v.strip())
            tests.append((m.group(4), m.group(1), values))
        elif m := _OP.match(part):
            tests.append(("!=" if m.group(4) == "!=" else "=", m.group(1), frozenset([m.group(5)])))
        elif m := _EXISTS.match(part):
            tests.append(("!" if m.group(1) else "exists", m.group(2), frozenset()))
        else:
            raise SelectorError(f"unable to parse requirement: {part!r}")

    def match(labels: Mapping[str, str]) -> bool:
        for op, key, values in tests:
            present, value = key in labels, labels.get(key)
            ok = {
                "in": present and value in values,
                "notin": value not in values,
                "=": present and value in values,
                "!=": value not in values,
                "exists": present,
                "!": not present,
            }[op]
            if not ok:
                return False
        return True

    return match


def _get(obj: Mapping[str, Any], path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        cur = cur.get(part) if isinstance(cur, Mapping) else None
    return "" if cur is None else str(cur)


def field_matcher(resource: str, text: str) -> Callable[[Mapping[str, Any]], bool]:
    """Parse a field selector for ``resource``; only registered fields are accepted."""
    allowed = ("metadata.name", "metadata.namespace", *FIELDS.get(resource, ()))
    tests: list[tuple[str, str, str]] = []
    for part in _split(text or ""):
        m = re.match(r"^\s*([A-Za-z.]+)\s*(==|=|!=)\s*(.*?)\s*$", part)
        if not m:
            raise SelectorError(f"invalid field selector: {part!r}")
        path, op, value = m.groups()
        if path not in allowed:
            raise SelectorError(f'field label not supported: "{path}"')
        tests.append((path, op, value))

    def match(obj: Mapping[str, Any]) -> bool:
        return all((_get(obj, path) == value) == (op != "!=") for path, op, value in tests)

    return match
