"""Structural OpenAPI v3 (what CRDs carry) as the API server reads it.

jsonschema does the value validation; this module supplies the Kubernetes parts around it:
the ``x-kubernetes-*`` extensions and ``nullable`` become plain JSON Schema, nulls are pruned
and defaults applied before validation (the API server does both on decode), and list-type
invariants are checked the way ``ValidateListSetsAndMaps`` does.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

Schema = dict[str, Any]

_JUNCTORS = ("anyOf", "allOf", "oneOf")
EMBEDDED_FIELDS = ("apiVersion", "kind", "metadata")


def to_json_schema(node: Schema, *, root: bool = False, structural: bool = True) -> Schema:
    """A Draft 4 JSON Schema that rejects what the API server prunes as unknown.

    At the root, ``metadata`` is left open: ObjectMeta is checked on its own, like the
    API server does. Inside ``anyOf``/``allOf``/``oneOf``/``not`` (value validation only in a
    structural schema) no unknown-field rule is added.
    """
    out: Schema = {
        k: v
        for k, v in node.items()
        if k not in ("properties", "items", "additionalProperties", "not", *_JUNCTORS)
        and not k.startswith("x-kubernetes-")
        and k not in ("nullable", "description", "default", "example")
    }
    properties = node.get("properties")
    if isinstance(properties, dict):
        out["properties"] = {
            name: to_json_schema(sub, structural=structural) for name, sub in properties.items()
        }
    items = node.get("items")
    if isinstance(items, dict):
        out["items"] = to_json_schema(items, structural=structural)
    additional = node.get("additionalProperties")
    if isinstance(additional, dict):
        out["additionalProperties"] = to_json_schema(additional, structural=structural)
    elif isinstance(additional, bool):
        out["additionalProperties"] = additional
    for junctor in _JUNCTORS:
        if isinstance(node.get(junctor), list):
            out[junctor] = [to_json_schema(sub, structural=False) for sub in node[junctor]]
    if isinstance(node.get("not"), dict):
        out["not"] = to_json_schema(node["not"], structural=False)

    if node.get("x-kubernetes-int-or-string") and "anyOf" not in node:
        out["type"] = ["integer", "string"]
    if structural and node.get("x-kubernetes-embedded-resource"):
        props = out.setdefault("properties", {})
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
        props.setdefault("metadata", {"type": "object"})
    if (
        structural
        and node.get("type") == "object"
        and "additionalProperties" not in node
        and not node.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    if root:
        out.setdefault("properties", {})["metadata"] = {"type": "object"}
    if node.get("nullable"):
        if isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
        elif isinstance(out.get("type"), list):
            out["type"] = [*out["type"], "null"]
        if isinstance(out.get("enum"), list) and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
    return out


def _child_schema(schema: Schema, key: str) -> Schema | None:
    props = schema.get("properties") or {}
    if key in props:
        sub = props[key]
        return sub if isinstance(sub, dict) else None
    additional = schema.get("additionalProperties")
    return additional if isinstance(additional, dict) else None


def prune_nulls_and_default(value: Any, schema: Schema) -> Any:
    """A copy with non-nullable nulls dropped and defaults filled in, as the API server decodes it."""
    value = copy.deepcopy(value)
    _default(value, schema)
    return value


def _default(value: Any, schema: Schema) -> None:
    if isinstance(value, dict):
        for key in list(value):
            sub = _child_schema(schema, key)
            if value[key] is None and sub is not None and not sub.get("nullable"):
                del value[key]
        for key, sub in (schema.get("properties") or {}).items():
            if isinstance(sub, dict) and "default" in sub and key not in value:
                value[key] = copy.deepcopy(sub["default"])
        for key, item in value.items():
            sub = _child_schema(schema, key)
            if sub is not None:
                _default(item, sub)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            _default(item, schema["items"])


@dataclass(frozen=True)
class Node:
    """A present value together with the schema that describes it."""

    path: str
    value: Any
    schema: Schema


def walk(value: Any, schema: Schema, path: str = "") -> Iterator[Node]:
    """Every value the schema describes, depth first; unknown fields are not visited."""
    if value is None:
        return
    yield Node(path, value, schema)
    if isinstance(value, dict):
        for key, item in value.items():
            sub = _child_schema(schema, key)
            if sub is not None:
                yield from walk(item, sub, join(path, key))
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            yield from walk(item, schema["items"], f"{path}[{index}]")


def join(path: str, key: str) -> str:
    """``spec`` + ``resourceGroups`` -> ``spec.resourceGroups``; odd keys are quoted."""
    if key.replace("-", "").replace("_", "").isalnum():
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key)}]"


def list_type_problems(node: Node) -> list[tuple[str, str]]:
    """Duplicate keys in a ``map`` list or duplicate items in a ``set`` list: (path, message)."""
    list_type = node.schema.get("x-kubernetes-list-type")
    if not isinstance(node.value, list) or list_type not in ("map", "set"):
        return []
    problems: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    keys: list[str] = list(node.schema.get("x-kubernetes-list-map-keys") or [])
    for index, item in enumerate(node.value):
        if list_type == "map":
            if not isinstance(item, dict):
                continue
            identity = json.dumps({k: item.get(k) for k in keys}, sort_keys=True)
        else:
            identity = json.dumps(item, sort_keys=True)
        if identity in seen:
            problems.append(
                (
                    f"{node.path}[{index}]",
                    f"Duplicate value: {identity} (also at index {seen[identity]}); "
                    + (
                        f"items of this list are keyed by {', '.join(keys)} and must be unique"
                        if list_type == "map"
                        else "this list is a set"
                    ),
                )
            )
        else:
            seen[identity] = index
    return problems
