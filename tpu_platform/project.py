"""Where a Pulumi project's stack files and offline plans are, found the way the Pulumi CLI finds them.

The Pulumi CLI looks for ``Pulumi.yaml`` in the working directory and then in each parent
(pulumi/pulumi ``sdk/go/common/workspace/paths.go``, ``DetectProjectPathFrom``), and reads stack
files from the project's ``stackConfigDir`` (default: the project folder; Pulumi docs,
https://www.pulumi.com/docs/iac/concepts/projects/project-file/). The offline tools do the same, so
``tpu-platform plan dev`` means what ``pulumi preview -s dev`` means from the same folder, in this
repository or in a user's own project. A project's program is where ``main:`` points (default: the
project folder), and the values of its project-level ``config:`` reach every stack, under the
stack file's own (pulumi/pulumi ``sdk/go/common/workspace/project.go``, ``RewriteShorthandConfigValues``:
a bare value of a key namespaced by another package is that key's ``value``, of the project's own
key its ``default``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .yaml_errors import yaml_error_line

PROJECT_FILE = "Pulumi.yaml"
PLANS_FOLDER = "plans"


class ProjectError(ValueError):
    """No usable Pulumi project here; ``str(err)`` says where it looked and what to do."""


@dataclass(frozen=True)
class Project:
    """A Pulumi project folder: its stack files' folder, the folder of its committed plans, its name,
    its program and the config values it gives every stack (``namespace:key`` -> value)."""

    root: Path
    stacks_dir: Path
    plans_dir: Path
    name: str = ""
    program: Path | None = None
    config: Mapping[str, Any] = field(default_factory=dict)

    @property
    def file(self) -> Path:
        return self.root / PROJECT_FILE


def find_project(start: Path | None = None) -> Project:
    """The project containing ``start`` (default: the working directory)."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / PROJECT_FILE
        if candidate.is_file():
            return _read_project(candidate)
    raise ProjectError(
        f"no {PROJECT_FILE} in {here} or any folder above it: run inside a Pulumi project, "
        "or name the stack file's path (tpu-platform validate path/to/Pulumi.<stack>.yaml)"
    )


def _read_project(path: Path) -> Project:
    try:
        doc = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise ProjectError(yaml_error_line(err, str(path))) from None
    if not isinstance(doc, dict):
        raise ProjectError(f"{path}: a project file is a mapping (name:, runtime:, ...)")
    config_dir = doc.get("stackConfigDir") or "."
    if not isinstance(config_dir, str):
        raise ProjectError(f"{path}: stackConfigDir must be a folder path, got {config_dir!r}")
    name, main = doc.get("name"), doc.get("main") or "."
    name = name if isinstance(name, str) else ""
    if not isinstance(main, str):
        raise ProjectError(f"{path}: main must be the path of the program, got {main!r}")
    root = path.parent
    return Project(
        root=root,
        stacks_dir=root / config_dir,
        plans_dir=root / PLANS_FOLDER,
        name=name,
        program=root / main,
        config=project_config(doc.get("config"), name),
    )


def project_config(config: Any, project: str) -> dict[str, Any]:
    """The values a project file's ``config:`` gives every stack, keys qualified as Pulumi does (a
    bare key is the project's); a declaration with neither ``value`` nor ``default`` gives none, and a
    string (the deprecated config folder) gives nothing."""
    if not isinstance(config, dict):
        return {}
    values: dict[str, Any] = {}
    for key, declared in config.items():
        qualified = str(key) if ":" in str(key) else f"{project}:{key}"
        if not isinstance(declared, dict):
            values[qualified] = declared
        elif "value" in declared:
            values[qualified] = declared["value"]
        elif "default" in declared:
            values[qualified] = declared["default"]
    return values


@dataclass(frozen=True)
class StackRef:
    """A stack named on the command line: by name (``dev``) or by its file (``stacks/Pulumi.dev.yaml``)."""

    name: str
    path: Path


def stack_name_of(path: Path) -> str:
    """``Pulumi.dev.yaml`` -> ``dev``; any other file name stands for itself without its extension."""
    name = path.name
    for suffix in (".yaml", ".yml"):
        name = name.removesuffix(suffix)
    return name.removeprefix("Pulumi.")


def looks_like_path(arg: str) -> bool:
    return "/" in arg or arg.endswith((".yaml", ".yml")) or arg == "-"


def resolve_stack(arg: str, stacks_dir: Path | None = None) -> StackRef:
    """A stack name becomes ``<stacks_dir>/Pulumi.<name>.yaml``; a path is taken as it is."""
    if looks_like_path(arg):
        path = Path(arg)
        return StackRef(name="stdin" if arg == "-" else stack_name_of(path), path=path)
    folder = stacks_dir if stacks_dir is not None else find_project().stacks_dir
    return StackRef(name=arg, path=folder / f"Pulumi.{arg}.yaml")
