"""Read a stack file offline exactly as the program reads ``pulumi.Config``.

Stack names resolve inside the Pulumi project of the working directory (``tpu_platform.project``):
``STACKS_DIR`` and ``PLANS_DIR`` are that project's folders, looked up when first used.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from ..config import PlatformConfig, StackConfigError, read_stack
from ..config.decode import pulumi_text, qualified_config
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
    if str(path) == "-":
        return stack_config_from_text(sys.stdin.read(), "<stdin>")
    if not path.exists():
        there = ", ".join(_names_in(path.parent)) or "none there"
        raise StackConfigError([f"{path}: no such stack file; create it or pick one of {there}"])
    if path.is_dir():
        raise StackConfigError([f"{path}: is a folder; name a stack file (Pulumi.<stack>.yaml) or a stack"])
    return stack_config_from_text(path.read_text(), str(path))


def stack_config_from_text(text: str, path: str) -> dict[str, Any]:
    """The ``config:`` map of a stack file's text; ``path`` names it in errors."""
    try:
        doc = yaml.load(text, Loader=StackFileLoader) or {}
    except yaml.YAMLError as err:
        raise StackConfigError([yaml_error_line(err, path)]) from None
    except RecursionError:
        raise StackConfigError([f"{path}: not valid YAML: nested too deeply"]) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("config", {}), dict):
        raise StackConfigError([f"{path}: a stack file is a mapping with a 'config:' mapping inside"])
    config = doc.get("config") or {}
    config = qualified_config(config, path)
    for key, value in config.items():
        if isinstance(value, dict) and "secure" in value:
            raise StackConfigError([f"{path}: {key} is an encrypted secret; the offline plan cannot read it"])
    return dict(config)


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
