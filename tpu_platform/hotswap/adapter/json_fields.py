"""Total accessors for API objects read as JSON: a wrong type reads as empty, nothing raises."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tpu_platform.hotswap.core.timeutil import parse_time

JSON = Mapping[str, Any]


def as_map(value: Any) -> JSON:
    return value if isinstance(value, Mapping) else {}


def as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else []


def as_maps(value: Any) -> list[JSON]:
    return [v for v in as_list(value) if isinstance(v, Mapping)]


def as_str(value: Any, default: str = "") -> str:
    return value if isinstance(value, str) else default


def as_time(value: Any) -> float | None:
    return parse_time(value) if isinstance(value, str) else None


def metadata(obj: JSON) -> JSON:
    return as_map(obj.get("metadata")) if isinstance(obj, Mapping) else {}


def as_strs(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        return {}
    return {str(key): str(v) for key, v in value.items()}
