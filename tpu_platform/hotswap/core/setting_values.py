"""Coercion of one settings value per kind (duration, int, fraction, bool, strings), naming the field
on any error, apart from the fields themselves so ``settings.py`` holds only the thresholds and their
cross-field rules."""

from __future__ import annotations

import math
import re
from typing import Any

from tpu_platform.hotswap.formats.duration import DurationError, duration_seconds


class SettingsError(ValueError):
    """A settings value is invalid; ``field`` names it (``""`` for the document as a whole)."""

    def __init__(self, field_name: str, message: str) -> None:
        self.field = field_name
        super().__init__(f"settings field {field_name!r}: {message}" if field_name else message)


_SECONDS = re.compile(r"[0-9]+(\.[0-9]+)?")


def _as_duration(name: str, value: Any) -> float:
    if isinstance(value, bool):
        raise SettingsError(name, f"expected a duration in seconds, got {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        seconds = _duration_text(name, value)
    else:
        raise SettingsError(name, f"expected seconds or a duration like '30s', '2m', got {value!r}")
    if not math.isfinite(seconds) or seconds < 0:
        raise SettingsError(name, f"must be a finite number >= 0, got {value!r}")
    return seconds


def _duration_text(name: str, value: str) -> float:
    """A bare number is seconds; anything else a Go duration (``90s``, ``1h30m``, ``500ms``), read by
    the one parser the stack's Kueue timeouts go through too."""
    text = value.strip()
    if _SECONDS.fullmatch(text):
        return float(text)
    try:
        return duration_seconds(text)
    except DurationError as err:
        raise SettingsError(name, f"expected seconds or a duration like '30s', '2m', got {value!r}") from err


def _as_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SettingsError(name, f"expected an integer, got {value!r}")
    return value


def _as_fraction(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SettingsError(name, f"expected a number in (0, 1], got {value!r}")
    return float(value)


def _as_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise SettingsError(name, f"expected true or false, got {value!r}")
    return value


def _as_strings(name: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise SettingsError(name, f"expected a list of strings, got {value!r}")
    for item in value:
        if not isinstance(item, str) or not item:
            raise SettingsError(name, f"expected non-empty strings, got {item!r}")
    return tuple(value)


_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def _as_teams(name: str, value: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``{team: [namespace, ...]}`` (or its tuple form) as sorted pairs. Teams may share a namespace
    (the stack allows it with ``create: false``); they are then one tenant (core/tenancy.py)."""
    items = value.items() if isinstance(value, dict) else value
    if not isinstance(items, list | tuple) and not isinstance(value, dict):
        raise SettingsError(name, f"expected a mapping of team name to its namespaces, got {value!r}")
    out: list[tuple[str, tuple[str, ...]]] = []
    for item in items:
        if not isinstance(item, list | tuple) or len(item) != 2:
            raise SettingsError(name, f"expected a mapping of team name to its namespaces, got {value!r}")
        team, namespaces = item
        if not isinstance(team, str) or not _DNS_LABEL.match(team):
            raise SettingsError(name, f"team name {team!r} is not a DNS label")
        listed = _as_strings(f"{name}.{team}", namespaces)
        for ns in listed:
            if not _DNS_LABEL.match(ns):
                raise SettingsError(f"{name}.{team}", f"namespace {ns!r} is not a DNS label")
        out.append((team, tuple(sorted(set(listed)))))
    if len({team for team, _ in out}) != len(out):
        raise SettingsError(name, "a team is listed twice")
    return tuple(sorted(out))


COERCE = {
    "duration": _as_duration,
    "int": _as_int,
    "fraction": _as_fraction,
    "bool": _as_bool,
    "strings": _as_strings,
    "teams": _as_teams,
}
