"""Mutants of rendered objects: small, deterministic breakages to compare offline checks with the server.

Each mutant changes one thing a reviewer could get wrong in a stack or a manifest: a name that is not
a DNS label, an unknown field, a value of the wrong JSON type, an empty required reference, an
out-of-range number or an enum value that does not exist. Which of them the real API server (and
webhooks) reject is not assumed here: the comparison asks the server.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Mutant:
    name: str  # "<what the base was> <mutation>"
    manifest: dict[str, Any]


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    if isinstance(value, dict):
        for key in sorted(value):
            yield from _leaves(value[key], (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _leaves(item, (*path, i))
    else:
        yield path, value


def _set(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
    target: Any = doc
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value


def _label(path: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in path)


def mutants(base: str, manifest: dict[str, Any]) -> list[Mutant]:
    """A handful of mutants of one object, each breaking exactly one field."""
    out: list[Mutant] = []

    def add(what: str, doc: dict[str, Any]) -> None:
        out.append(Mutant(f"{base} {what}", doc))

    doc = copy.deepcopy(manifest)
    doc["metadata"]["name"] = "Not_A_Name"
    add("metadata.name=Not_A_Name", doc)

    body = "spec" if isinstance(manifest.get("spec"), dict) else None
    doc = copy.deepcopy(manifest)
    (doc[body] if body else doc)["notAField"] = "x"
    add(f"{body or '(top)'}.notAField", doc)

    if body:
        leaves = list(_leaves(manifest[body], (body,)))
        ints = [(p, v) for p, v in leaves if isinstance(v, int) and not isinstance(v, bool)]
        strings = [(p, v) for p, v in leaves if isinstance(v, str)]
        bools = [(p, v) for p, v in leaves if isinstance(v, bool)]
        if ints:
            path, _ = ints[0]
            doc = copy.deepcopy(manifest)
            _set(doc, path, "not-a-number")
            add(f"{_label(path)}=not-a-number", doc)
            doc = copy.deepcopy(manifest)
            _set(doc, path, -(2**40))
            add(f"{_label(path)}=-2^40", doc)
        if strings:
            path, _ = strings[0]
            doc = copy.deepcopy(manifest)
            _set(doc, path, {"a": "map"})
            add(f"{_label(path)}=a map", doc)
            doc = copy.deepcopy(manifest)
            _set(doc, path, "")
            add(f"{_label(path)}=''", doc)
            doc = copy.deepcopy(manifest)
            _set(doc, path, "Not A Valid Value!")
            add(f"{_label(path)}='Not A Valid Value!'", doc)
        if bools:
            path, _ = bools[0]
            doc = copy.deepcopy(manifest)
            _set(doc, path, "yes")
            add(f"{_label(path)}='yes'", doc)
    return out
