"""Read a manifest into documents that remember where each field was written.

Findings carry file, line and column, so every document is composed into YAML nodes first
(PyYAML's safe grammar, as kubectl's YAML 1.1 decoder reads it), and each path the rules
report (``spec.replicatedJobs[0].template``, ``metadata.labels["a/b"]``) maps to the mark of
its key (or of the item, for list entries).

Input that is not a manifest at all (empty, binary, not YAML) is a ``SourceProblem`` for the
whole file, which the command turns into one finding and exit 2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import yaml

from ..schema.structural import join

# The API server decodes integers as int64; JSON numbers beyond it are rejected at decode.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_MAX_DEPTH = 100
# Aliases can make a small file expand exponentially ("billion laughs"); stop well before that.
_MAX_VALUES = 200_000


@dataclass(frozen=True)
class Position:
    line: int
    column: int


@dataclass
class Document:
    """One YAML document: its index in the stream, its value, and where each path begins."""

    index: int
    value: Any
    start: Position
    positions: dict[str, Position] = field(default_factory=dict)
    problems: list[tuple[str, str]] = field(default_factory=list)

    def where(self, path: str) -> Position:
        """The position of ``path`` or of its closest written ancestor; the document start otherwise."""
        candidate = path
        while candidate:
            if candidate in self.positions:
                return self.positions[candidate]
            candidate = _parent(candidate)
        return self.start


class SourceProblem(ValueError):
    """The input is not a manifest: ``rule``, message, fix and where."""

    def __init__(self, rule: str, message: str, fix: str, position: Position = Position(1, 1)) -> None:
        super().__init__(message)
        self.rule = rule
        self.message = message
        self.fix = fix
        self.position = position


def _parent(path: str) -> str:
    """``a.b[0]`` -> ``a.b``; ``a["x.y"]`` -> ``a``; ``a.b`` -> ``a``; ``a`` -> ``""``."""
    if path.endswith("]"):
        return path[: path.rindex("[")]
    return path.rsplit(".", 1)[0] if "." in path else ""


def _mark(node: yaml.Node) -> Position:
    return Position(node.start_mark.line + 1, node.start_mark.column + 1)


def _key_text(key: Any) -> str:
    return key if isinstance(key, str) else str(key)


def _walk(node: yaml.Node, path: str, doc: Document, seen: set[int], depth: int = 0) -> None:
    """Record where each path is written; an aliased node is walked once, at its anchor."""
    if depth > _MAX_DEPTH or id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else "<complex key>"
            child = join(path, _key_text(key))
            doc.positions.setdefault(child, _mark(key_node))
            _walk(value_node, child, doc, seen, depth + 1)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            child = f"{path}[{index}]"
            doc.positions.setdefault(child, _mark(item))
            _walk(item, child, doc, seen, depth + 1)


class _Budget:
    def __init__(self) -> None:
        self.left = _MAX_VALUES

    def spend(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise SourceProblem(
                "yaml-invalid",
                f"the document expands to more than {_MAX_VALUES} values (aliases of aliases?)",
                "write the manifest without nested YAML aliases",
            )


def _normalize(
    value: Any,
    path: str,
    problems: list[tuple[str, str]],
    budget: _Budget,
    active: tuple[int, ...] = (),
) -> Any:
    """Plain JSON-like data; keys that are not strings and integers beyond int64 are noted."""
    budget.spend()
    if len(active) > _MAX_DEPTH:
        problems.append((path, f"nested more than {_MAX_DEPTH} levels deep"))
        return None
    if isinstance(value, dict | list) and id(value) in active:
        problems.append((path, "a YAML alias refers to a node that contains it: JSON cannot hold a cycle"))
        return None
    inner = (*active, id(value))
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                problems.append(
                    (join(path, _key_text(key)), f"the key {key!r} is a {type(key).__name__}, not a string")
                )
            text = _key_text(key)
            out[text] = _normalize(item, join(path, text), problems, budget, inner)
        return out
    if isinstance(value, list):
        return [_normalize(item, f"{path}[{i}]", problems, budget, inner) for i, item in enumerate(value)]
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX:
        problems.append((path, f"{value} does not fit in a 64-bit integer"))
        return value
    if isinstance(value, float) and math.isnan(value):  # JSON has no such number
        problems.append((path, "NaN is not a number JSON can carry"))
        return None
    if not isinstance(value, str | int | float) and value is not None:
        # Timestamps, dates and binary scalars: the API server sees them as strings.
        return str(value)
    return value


def normalize(value: Any) -> tuple[Any, list[tuple[str, str]]]:
    """A parsed manifest as JSON-like data, and (path, problem) for what the API server cannot decode."""
    problems: list[tuple[str, str]] = []
    try:
        return _normalize(value, "", problems, _Budget()), problems
    except SourceProblem as err:
        return None, [("", err.message)]


def decode(data: bytes) -> str:
    """UTF-8 text of a manifest, or a ``SourceProblem`` for empty or binary input."""
    if not data.strip():
        raise SourceProblem(
            "input-empty",
            "the input is empty: there is nothing to lint",
            "pass a file with at least one Kubernetes object",
        )
    if b"\x00" in data:
        raise SourceProblem(
            "input-binary", "the input is binary, not a YAML manifest", "pass the YAML manifest itself"
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise SourceProblem(
            "input-binary",
            f"the input is not UTF-8 text (byte {err.start}): not a YAML manifest",
            "save the manifest as UTF-8",
            Position(line, 1),
        ) from err


def _load(loader: yaml.SafeLoader, documents: list[Document]) -> None:
    index = 0
    while loader.check_node():
        node = loader.get_node()
        if node is None:
            break
        value = loader.construct_document(node)
        if value is not None:
            problems: list[tuple[str, str]] = []
            normal = _normalize(value, "", problems, _Budget())
            doc = Document(index, normal, _mark(node), problems=problems)
            _walk(node, "", doc, set())
            documents.append(doc)
        index += 1


def parse(text: str) -> list[Document]:
    """Every non-empty document of a YAML stream, with positions; ``SourceProblem`` for invalid YAML."""
    documents: list[Document] = []
    try:
        loader = yaml.SafeLoader(text)
    except yaml.reader.ReaderError as err:
        raise SourceProblem(
            "input-binary",
            f"character #x{err.character:04x} at offset {err.position} is not allowed in YAML",
            "remove control characters; pass the YAML manifest itself",
            Position(text[: err.position].count("\n") + 1, 1),
        ) from err
    try:
        _load(loader, documents)
    except SourceProblem:
        raise
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = Position(mark.line + 1, mark.column + 1) if mark is not None else Position(1, 1)
        raise SourceProblem(
            "yaml-invalid",
            f"not valid YAML: {err.problem or err}".replace("\n", " "),
            "fix the YAML syntax at the line and column given",
            where,
        ) from err
    except (yaml.YAMLError, RecursionError, ValueError, TypeError) as err:
        # TypeError/ValueError: PyYAML's constructor on unhashable keys (a list or mapping as key).
        raise SourceProblem(
            "yaml-invalid", f"not a usable YAML manifest: {err}", "fix the YAML syntax"
        ) from err
    finally:
        loader.dispose()
    if not documents:
        raise SourceProblem(
            "input-empty",
            "the input has no YAML document with content",
            "pass a file with at least one Kubernetes object",
        )
    return documents
