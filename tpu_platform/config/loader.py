"""Reading a stack: structure by pydantic, then every cross-field check, all problems at once.

Nothing is registered with Pulumi until the stack passes all of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from .checks import check_stack
from .decode import DecodeError, decode_value
from .explain import explain
from .platform import PlatformConfig
from .problems import GCP_KEYS, StackConfigError

# A fleet stack's own cluster and pools are the manager's and the workers' (``PlatformConfig``).
FLEET_DERIVED = ("cluster", "slicePools")
FLEET_DERIVED_PATHS = tuple(f"tpu-platform:{key}" for key in FLEET_DERIVED)


def parse_platform(raw: Mapping[str, Any]) -> PlatformConfig:
    """Validate a raw stack (camelCase keys) into a ``PlatformConfig`` or raise ``StackConfigError``."""
    if "fleet" in raw:
        clash = [key for key in FLEET_DERIVED if key in raw]
        if clash:
            raise StackConfigError(
                [
                    f"tpu-platform:{key}: a fleet stack has no cluster of its own; name the clusters and "
                    "their slices under tpu-platform:fleet.manager.cluster and fleet.workers[]: remove it"
                    for key in clash
                ]
            )
    try:
        cfg = PlatformConfig.model_validate(dict(raw))
    except ValidationError as err:
        lines = explain(err, PlatformConfig)
        if "fleet" in raw:  # the view's cluster and pools repeat what fleet.* already reports
            lines = [line for line in lines if not line.startswith(FLEET_DERIVED_PATHS)] or lines
        raise StackConfigError(name_items(lines, raw)) from None
    problems = check_stack(cfg)
    if problems.items:
        raise StackConfigError(name_items(problems.lines, raw))
    return cfg


NAMED_LISTS = {"teams": "team", "slicePools": "slice pool", "cohorts": "cohort", "priorities": "priority"}
_ITEM = re.compile(r"^tpu-platform:(" + "|".join(NAMED_LISTS) + r")\[(\d+)\][^:]*: ")


def name_items(lines: list[str], raw: Mapping[str, Any]) -> list[str]:
    """``tpu-platform:teams[1].quota: ...`` ends ``(in team 'applied')``: an author finds an item of a
    list by its name, not by counting (the path and the message stay as they were)."""
    out = []
    for line in lines:
        match = _ITEM.match(line)
        items = raw.get(match.group(1)) if match else None
        index = int(match.group(2)) if match else 0
        item = items[index] if isinstance(items, list) and index < len(items) else None
        name = item.get("name") if isinstance(item, Mapping) else None
        named = match is not None and isinstance(name, str) and bool(name)
        out.append(f"{line} (in {NAMED_LISTS[match.group(1)]} {name!r})" if match and named else line)
    return out


def stack_keys() -> list[str]:
    """Top-level stack keys, in the order a stack file lists them."""
    return [f.alias or name for name, f in PlatformConfig.model_fields.items()]


def read_stack(
    get: Callable[[str, str], str | None], present_keys: Callable[[str], list[str]]
) -> PlatformConfig:
    """Assemble the raw stack from a config reader, rejecting unknown ``tpu-platform:`` keys.

    ``get(namespace, key)`` returns the value's text as Pulumi passes it to a program, or None;
    ``present_keys(namespace)`` lists the keys set in that namespace. Both come from
    ``pulumi.Config`` in a program and from a stack file offline (``decode.pulumi_text``), and
    ``decode.decode_value`` decodes both, so the program and the plan read a stack the same way.
    """
    known = stack_keys()
    raw: dict[str, Any] = {}
    undecodable: list[str] = []
    for key in known:
        namespace = "gcp" if key in GCP_KEYS else "tpu-platform"
        text = get(namespace, key)
        if text is None:
            continue
        try:
            raw[key] = decode_value(namespace, key, text)
        except DecodeError as err:
            undecodable.append(str(err))
    if undecodable:
        raise StackConfigError(undecodable)
    unknown = sorted(set(present_keys("tpu-platform")) - set(known))
    if unknown:
        raise StackConfigError(
            [
                f"tpu-platform:{key}: unknown stack key; remove it or fix its spelling "
                f"(valid keys: {', '.join(k for k in known if k not in GCP_KEYS)})"
                for key in unknown
            ]
        )
    return parse_platform(raw)
