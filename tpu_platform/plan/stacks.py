"""Read a stack file offline exactly as the program reads ``pulumi.Config``.

Stack names resolve inside the Pulumi project of the working directory (``tpu_platform.project``):
``STACKS_DIR`` and ``PLANS_DIR`` are that project's folders, looked up when first used.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..config import PlatformConfig, StackConfigError, read_stack
from ..config.decode import pulumi_text, qualified_config
from ..config.problems import PROJECT_NAMESPACE
from ..project import ProjectError, find_project, resolve_stack
from ..yaml_errors import yaml_error_line


def __getattr__(name: str) -> Path:
    """``STACKS_DIR`` / ``PLANS_DIR``: the folders of the project the working directory is in."""
    if name == "STACKS_DIR":
        return find_project().stacks_dir
    if name == "PLANS_DIR":
        return find_project().plans_dir
    raise AttributeError(name)


def stack_file(stack: str, stacks_dir: Path | None = None) -> Path:
    """A stack's file: a name in ``stacks_dir`` (default: the project's), or a path (or ``-``) as it
    is, needing no Pulumi project (:func:`tpu_platform.project.resolve_stack`)."""
    return resolve_stack(stack, stacks_dir).path


def list_stacks(stacks_dir: Path | None = None) -> list[str]:
    """Stack names, from the stack files present; a folder that is missing or holds none is an
    error (``ProjectError``), never an empty success."""
    folder = stacks_dir if stacks_dir is not None else find_project().stacks_dir
    if not folder.is_dir():
        raise ProjectError(
            f"{folder}: no such folder of stack files; pass --stacks-dir with the folder of the stack files"
        )
    names = _names_in(folder)
    if not names:
        raise ProjectError(
            f"{folder}: no Pulumi.<stack>.yaml stack file here; name a stack file or pass --stacks-dir"
        )
    return names


def _names_in(folder: Path) -> list[str]:
    """The stack names a hint can offer (none when the folder is missing)."""
    if not folder.is_dir():
        return []
    return sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in folder.glob("Pulumi.*.yaml"))


def problem_lines(err: StackConfigError, path: Path) -> list[str]:
    """Each problem of a stack file as one line that names the file (once)."""
    return [p if p.startswith(str(path)) else f"{path}: {p}" for p in err.problems]


def load_stack_config(path: Path) -> dict[str, Any]:
    """The ``config:`` map of a stack file (``-``: standard input), as ``namespace:key`` -> value."""
    return stack_config_from_text(*_stack_text(path))


def check_stack_file(path: Path) -> PlatformConfig:
    """A stack file validated with every problem in one ``StackConfigError``: keys written twice and
    encrypted values, then what the program's reader finds in the config."""
    stack = read_stack_text(*_stack_text(path))
    secrets = _secret_lines(stack.config, stack.source)
    if secrets:  # an encrypted value cannot be checked offline, nor the stack without it
        raise StackConfigError(stack.duplicates + secrets)
    try:
        cfg = parse_stack_config(stack.config)
    except StackConfigError as err:
        raise StackConfigError(stack.duplicates + err.problems) from None
    if stack.duplicates:
        raise StackConfigError(stack.duplicates)
    return cfg


def stack_file_config(path: Path) -> dict[str, Any]:
    """The config map of a stack file for a reader of a few of its keys (encrypted values are fine
    here); no file, no keys."""
    if not path.is_file():
        return {}
    stack = read_stack_text(path.read_text(), str(path))
    if stack.duplicates:
        raise StackConfigError(stack.duplicates)
    return stack.config


def _stack_text(path: Path) -> tuple[str, str]:
    """A stack file's text and the name errors give it (``-``: standard input)."""
    if str(path) == "-":
        return sys.stdin.read(), "<stdin>"
    if not path.exists():
        there = ", ".join(_names_in(path.parent)) or "none there"
        raise StackConfigError([f"{path}: no such stack file; create it or pick one of {there}"])
    if path.is_dir():
        raise StackConfigError([f"{path}: is a folder; name a stack file (Pulumi.<stack>.yaml) or a stack"])
    return path.read_text(), str(path)


def stack_config_from_text(text: str, path: str) -> dict[str, Any]:
    """The ``config:`` map of a stack file's text; ``path`` names it in errors."""
    stack = read_stack_text(text, path)
    problems = stack.duplicates + _secret_lines(stack.config, path)
    if problems:
        raise StackConfigError(problems)
    return stack.config


def _secret_lines(config: dict[str, Any], path: str) -> list[str]:
    return [
        f"{path}: {key} is an encrypted secret; the offline plan cannot read it"
        for key, value in config.items()
        if isinstance(value, dict) and "secure" in value
    ]


@dataclass(frozen=True)
class StackText:
    """A stack file as read: its ``config:`` map (keys as Pulumi qualifies them) and a problem line
    per key written twice."""

    source: str
    config: dict[str, Any]
    duplicates: list[str]


def read_stack_text(text: str, source: str) -> StackText:
    """The one reader of a stack file's YAML; ``source`` names it in errors."""
    doc, duplicates = _parse(text, source)
    doc = doc or {}
    if not isinstance(doc, dict) or not isinstance(doc.get("config", {}), dict):
        raise StackConfigError([f"{source}: a stack file is a mapping with a 'config:' mapping inside"])
    return StackText(source, qualified_config(doc.get("config") or {}, source), duplicates)


def _parse(text: str, source: str) -> tuple[Any, list[str]]:
    """The YAML document, and a line per key its mappings hold twice (the Pulumi CLI refuses a stack
    file with one; PyYAML would keep the last silently)."""
    try:
        loader = StackFileLoader(text)
        try:
            node = loader.get_single_node()
            duplicates = duplicate_key_lines(node, source) if node is not None else []
            return (loader.construct_document(node) if node is not None else None), duplicates
        finally:
            loader.dispose()
    except yaml.YAMLError as err:
        raise StackConfigError([yaml_error_line(err, source)]) from None
    except RecursionError:
        raise StackConfigError([f"{source}: not valid YAML: nested too deeply"]) from None


def duplicate_key_lines(root: yaml.Node, source: str) -> list[str]:
    """``FILE:LINE:COL: PATH: key 'count' is written twice (lines 23 and 24); ...`` for every repeat."""
    return [
        f"{source}:{again.line + 1}:{again.column + 1}: {path}: key {key!r} is written twice (lines "
        f"{first.line + 1} and {again.line + 1}); the Pulumi CLI rejects a stack file with a duplicate "
        "key: keep one of them"
        for key, path, first, again in _repeats(root, "", set())
    ]


_MERGE = "tag:yaml.org,2002:merge"


def _repeats(node: yaml.Node, path: str, seen: set[int]) -> Iterator[tuple[str, str, yaml.Mark, yaml.Mark]]:
    """Each key a mapping holds again: the key, its path, where it was first and where again (a node
    an alias repeats is walked once)."""
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            yield from _repeats(item, f"{path}[{index}]", seen)
    if not isinstance(node, yaml.MappingNode):
        return
    first: dict[tuple[str, str], yaml.Mark] = {}
    for key_node, value in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE:
            yield from _repeats(value, path, seen)
            continue
        key = str(key_node.value)
        where = _key_path(path, key)  # ``cluster`` and ``tpu-platform:cluster`` are one config key
        mark = first.setdefault((key_node.tag, where), key_node.start_mark)
        if mark is not key_node.start_mark:
            yield key, where, mark, key_node.start_mark
        yield from _repeats(value, where, seen)


def _key_path(parent: str, key: str) -> str:
    """``config`` -> ``tpu-platform:cluster`` (a config key as Pulumi qualifies it) -> ``....name``."""
    if parent == "":
        return key
    if parent == "config":
        return key if ":" in key else f"{PROJECT_NAMESPACE}:{key}"
    return f"{parent}.{key}"


class StackFileLoader(yaml.SafeLoader):
    """YAML as the Pulumi CLI reads a stack file: timestamps stay text (no ``datetime``), so a
    maintenance window's ``2026-01-01T00:00:00Z`` reaches the program as the string it is."""


StackFileLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def parse_stack_config(config: dict[str, Any]) -> PlatformConfig:
    """Validate a stack's config map with the same reader the Pulumi program uses: each value goes
    through the text Pulumi would pass (``pulumi_text``) and the program's own decoding."""

    def get(namespace: str, key: str) -> str | None:
        full = f"{namespace}:{key}"
        return pulumi_text(config[full]) if full in config else None

    config = qualified_config(config)

    def present(namespace: str) -> list[str]:
        prefix = f"{namespace}:"
        return [key.removeprefix(prefix) for key in config if key.startswith(prefix)]

    return read_stack(get, present)
