"""Where a Pulumi project's stack files and offline plans are, found the way the Pulumi CLI finds them.

The Pulumi CLI looks for ``Pulumi.yaml`` in the working directory and then in each parent
(pulumi/pulumi ``sdk/go/common/workspace/paths.go``, ``DetectProjectPathFrom``), and reads stack
files from the project's ``stackConfigDir`` (default: the project folder; Pulumi docs,
https://www.pulumi.com/docs/iac/concepts/projects/project-file/). The offline tools do the same, so
``tpu-platform plan dev`` means what ``pulumi preview -s dev`` means from the same folder, in this
repository or in a user's own project.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from .yaml_errors import yaml_error_line

PROJECT_FILE = "Pulumi.yaml"
PLANS_FOLDER = "plans"


class ProjectError(ValueError):
    """No usable Pulumi project here; ``str(err)`` says where it looked and what to do."""


@dataclass(frozen=True)
class Project:
    """A Pulumi project folder: its stack files' folder and the folder of its committed plans."""

    root: Path
    stacks_dir: Path
    plans_dir: Path


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
    root = path.parent
    return Project(root=root, stacks_dir=root / config_dir, plans_dir=root / PLANS_FOLDER)


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
