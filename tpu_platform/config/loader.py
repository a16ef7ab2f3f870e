"""Reading a stack: structure by pydantic, then every cross-field check, all problems at once.

Nothing is registered with Pulumi until the stack passes all of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from typing import Any

from pydantic import ValidationError

from .checks import check_stack
from .decode import DecodeError, decode_value
from .explain import explain
from .partial import parsed_sections, without
from .platform import PlatformConfig
from .problems import GCP_KEYS, StackConfigError, format_path, unknown_key

# A fleet stack's own cluster and pools are the manager's and the workers' (``PlatformConfig``).
FLEET_DERIVED = ("cluster", "slicePools")
FLEET_DERIVED_PATHS = tuple(f"tpu-platform:{key}" for key in FLEET_DERIVED)


def parse_platform(raw: Mapping[str, Any]) -> PlatformConfig:
    """Validate a raw stack (camelCase keys) into a ``PlatformConfig`` or raise ``StackConfigError``
    with every problem: structure and cross-field checks together."""
    cfg, lines = platform_problems(raw)
    if cfg is None or lines:
        raise StackConfigError(name_items(lines, raw))
    return cfg


def platform_problems(
    raw: Mapping[str, Any], unread: Collection[str] = ()
) -> tuple[PlatformConfig | None, list[str]]:
    """The stack, if its structure holds, and a line per problem: the structure's, then the checks'
    on the sections that validated. ``unread`` names keys whose value could not be decoded (already
    reported): neither required nor checked here."""
    lines, data = _fleet_clash(raw)
    try:
        cfg = PlatformConfig.model_validate(data)
    except ValidationError as err:
        return None, lines + _structure_lines(err, raw, unread) + _checks_despite(err, data, unread)
    if unread:  # a default stands where the stack has a value: check without it
        return None, lines + check_stack(without(cfg, unread), unread).lines
    return cfg, lines + check_stack(cfg).lines


def _fleet_clash(raw: Mapping[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """A fleet stack's own cluster and pools, each a problem; the stack without them (the fleet's
    view stands in for them) to check the rest."""
    clash = [key for key in FLEET_DERIVED if key in raw] if "fleet" in raw else []
    lines = [
        f"tpu-platform:{key}: a fleet stack has no cluster of its own; name the clusters and "
        "their slices under tpu-platform:fleet.manager.cluster and fleet.workers[]: remove it"
        for key in clash
    ]
    return lines, {key: value for key, value in raw.items() if key not in clash}


def _structure_lines(err: ValidationError, raw: Mapping[str, Any], unread: Collection[str]) -> list[str]:
    """Pydantic's problems as lines, less the ones another line already covers."""
    lines = explain(err, PlatformConfig)
    if "fleet" in raw:  # the view's cluster and pools repeat what fleet.* already reports
        lines = [line for line in lines if not line.startswith(FLEET_DERIVED_PATHS)] or lines
    undecoded = tuple(f"{format_path((key,))}: " for key in unread)
    return [line for line in lines if not line.startswith(undecoded)] if undecoded else lines


def _checks_despite(err: ValidationError, data: Mapping[str, Any], unread: Collection[str]) -> list[str]:
    """The cross-field problems of the sections that validated (none when nothing builds)."""
    parsed = parsed_sections(data, err, unread)
    if parsed is None:
        return []
    cfg, left_out = parsed
    return check_stack(cfg, left_out).lines


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
    raw, undecoded = _decoded(get, known)
    lines = list(undecoded.values())
    valid = [key for key in known if key not in GCP_KEYS]
    unknown = sorted(set(present_keys("tpu-platform")) - set(known))
    lines += [f"tpu-platform:{key}: {unknown_key(key, valid, 'stack key')}" for key in unknown]
    cfg, problems = platform_problems(raw, list(undecoded))
    lines += problems
    if cfg is None or lines:
        raise StackConfigError(name_items(lines, raw))
    return cfg


def _decoded(
    get: Callable[[str, str], str | None], known: list[str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """The raw stack (every set key's decoded value), and by key the problem of each value that
    does not decode."""
    raw: dict[str, Any] = {}
    undecoded: dict[str, str] = {}
    for key in known:
        namespace = "gcp" if key in GCP_KEYS else "tpu-platform"
        text = get(namespace, key)
        if text is None:
            continue
        try:
            raw[key] = decode_value(namespace, key, text)
        except DecodeError as err:
            undecoded[key] = str(err)
    return raw, undecoded
