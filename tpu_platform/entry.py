"""The entry a Pulumi project names for the offline tools: the function that builds its platform.

``config: {tpu-platform:entry: MODULE:FUNCTION}`` in Pulumi.yaml, project-level config Pulumi itself
accepts (pulumi/pulumi v3.274.0 ``sdk/go/common/workspace/project.json``, ``config``; ``project.go``
``Validate``: another namespace's key carries a value). ``__main__`` is the project's program, loaded
as Pulumi loads it but under another name; the function takes the stack's config as Pulumi hands it
to the program and returns a ``PlatformConfig``. Why and how: docs/deploying.md, "Your own project".
"""

from __future__ import annotations

import runpy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import PlatformConfig, StackConfigError
from .config.decode import pulumi_text, qualified_config
from .config.problems import PROJECT_NAMESPACE, did_you_mean
from .plan.stacks import check_stack_file, load_stack_config, parse_stack_config
from .project import Project, ProjectError, find_project

ENTRY_KEY = f"{PROJECT_NAMESPACE}:entry"
PROGRAM_MODULE = "__main__"
LOAD_NAME = "__tpu_platform_entry__"
"""The name the program runs under when only its functions are wanted (not ``__main__``)."""
FIX = f"write {ENTRY_KEY}: MODULE:FUNCTION under config: in Pulumi.yaml (docs/deploying.md)"


@dataclass(frozen=True)
class Entry:
    """A project's named entry: ``module:function``, and the project whose program it belongs to."""

    project: Project
    module: str
    function: str

    @property
    def reference(self) -> str:
        return f"{self.module}:{self.function}"

    @property
    def where(self) -> str:
        return f"{self.project.file}: {ENTRY_KEY}: {self.reference}"

    @property
    def program(self) -> Path:
        return self.project.program or self.project.root

    def run_program(self) -> None:
        """The project's program, as Pulumi runs it (``pulumi-language-python-exec``: ``runpy.run_path``
        of ``main:``, by default the project folder, as ``__main__``); for ``render``."""
        runpy.run_path(str(self.program), run_name="__main__")

    def build(self, config: Mapping[str, Any]) -> PlatformConfig:
        """The entry's ``PlatformConfig`` for a stack's config (``namespace:key`` -> value)."""
        function = self.load()
        text = {key: pulumi_text(value) for key, value in qualified_config(config).items()}
        try:
            built = function(text)
        except StackConfigError:
            raise
        except Exception as err:  # noqa: BLE001 - the user's function: any failure is a line
            raise StackConfigError(
                [
                    f"{ENTRY_KEY} {self.reference} ({self.project.file}) raised {type(err).__name__}: "
                    f"{err}; fix the stack's config or the function"
                ]
            ) from None
        if not isinstance(built, PlatformConfig):
            raise ProjectError(
                f"{self.where} returned {type(built).__name__}, not a PlatformConfig: return "
                "tpu_platform.config.parse_platform({...}) of the stack's design"
            )
        return built

    def load(self) -> Callable[..., Any]:
        """The named function; ``ProjectError`` naming the key and the fix when it cannot be had."""
        namespace = self._program_namespace() if self.module == PROGRAM_MODULE else self._module_namespace()
        head, *rest = self.function.split(".")
        target = namespace.get(head)
        for part in rest:
            target = getattr(target, part, None)
        if target is None:
            options = sorted(k for k, v in namespace.items() if callable(v) and not k.startswith("_"))
            raise ProjectError(
                f"{self.where}: {self.module} has no {self.function!r}"
                f"{did_you_mean(self.function, options)}; define it there or name another function"
            )
        if not callable(target):
            raise ProjectError(
                f"{self.where}: {self.function} is a {type(target).__name__}, not a function; name the "
                "function that takes the stack's config and returns a PlatformConfig"
            )
        return target

    def _program_namespace(self) -> dict[str, Any]:
        """The program's names, loaded as Pulumi loads it but not as ``__main__``: its
        ``if __name__ == "__main__":`` block, which declares the resources, does not run."""
        program = self.program
        if not program.exists():
            raise ProjectError(f"{self.where}: no program at {program}; fix main: in Pulumi.yaml")
        try:
            return runpy.run_path(str(program), run_name=LOAD_NAME)
        except ImportError as err:
            raise ProjectError(
                f"{self.where}: loading the program {program} failed: {err}; a program folder holds "
                f"__main__.py, and what it imports must be installed (or lie in {program})"
            ) from None
        except Exception as err:  # noqa: BLE001 - the user's code at import time
            raise ProjectError(
                f"{self.where}: loading the program {program} raised {type(err).__name__}: {err}; keep "
                'what declares resources under if __name__ == "__main__":'
            ) from None

    def _module_namespace(self) -> dict[str, Any]:
        import importlib

        try:
            return vars(importlib.import_module(self.module))
        except ModuleNotFoundError as err:
            if err.name is None or not self.module.startswith(err.name):
                raise ProjectError(f"{self.where}: importing {self.module} failed: {err}") from None
            raise ProjectError(
                f"{self.where}: no module {self.module!r} is installed; install it in this environment, "
                f"or name a function of the project's program as {PROGRAM_MODULE}:FUNCTION"
            ) from None
        except Exception as err:  # noqa: BLE001 - the user's code at import time
            raise ProjectError(
                f"{self.where}: importing {self.module} raised {type(err).__name__}: {err}"
            ) from None


def parse_entry(project: Project) -> Entry | None:
    """The entry a project names, or ``None``; ``ProjectError`` when the value is no ``MODULE:FUNCTION``."""
    value = project.config.get(ENTRY_KEY)
    if value is None:
        return None
    module, _, function = value.partition(":") if isinstance(value, str) else ("", "", "")
    names = [*module.split("."), *function.split(".")]
    if not all(name.isidentifier() for name in names):
        raise ProjectError(
            f"{project.file}: {ENTRY_KEY}: {value!r} is not MODULE:FUNCTION; name the function that "
            f"builds the platform from the stack's config, e.g. {PROGRAM_MODULE}:build_platform "
            "(a function of the project's program)"
        )
    return Entry(project, module, function)


def entry_here() -> Entry | None:
    """The entry of the working directory's project (``None`` outside a project, or if it names none)."""
    try:
        project = find_project()
    except ProjectError:
        return None
    return parse_entry(project)


def stack_config(path: Path, entry: Entry | None) -> dict[str, Any]:
    """A stack's config as its program sees it: the stack file's, over the project file's values."""
    config = load_stack_config(path)
    return config if entry is None else {**entry.project.config, **config}


def stack_platform(path: Path, entry: Entry | None) -> tuple[dict[str, Any], PlatformConfig]:
    """A stack's config and the ``PlatformConfig`` its project builds from it."""
    config = stack_config(path, entry)
    if entry is None:
        return config, _built_in(lambda: parse_stack_config(config))
    return config, entry.build(config)


def check_platform(path: Path, entry: Entry | None) -> PlatformConfig:
    """``stack_platform`` with every problem of the file at once (validate)."""
    if entry is None:
        return _built_in(lambda: check_stack_file(path))
    return stack_platform(path, entry)[1]


def _built_in(read: Callable[[], PlatformConfig]) -> PlatformConfig:
    """The built-in reading; in a project of another name that names no entry, its problems end with
    a line saying how to name one."""
    try:
        return read()
    except StackConfigError as err:
        try:
            project = find_project()
        except ProjectError:
            raise err from None
        if project.name in ("", PROJECT_NAMESPACE):  # the built-in program's project
            raise
        hint = (
            f"project {project.name} ({project.file}) names no entry, so its stacks are read as the "
            f"built-in program reads them (tpu-platform:* keys); if its program builds the platform "
            f"from its own config, {FIX}"
        )
        raise StackConfigError([*err.problems, hint]) from None
