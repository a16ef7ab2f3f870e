"""Whether the kubeconfig of a ``cluster.mode: kubeconfig`` stack holds the context it names.

The files are the ones the stack's Kubernetes provider reads: ``cluster.kubeconfig`` is a path
(``~/`` expanded, relative: the project folder's) or contents (pulumi-kubernetes ``util.go``,
``parseKubeconfigString``); unset, client-go's default loading rules (k8s.io/client-go v0.33.3
``tools/clientcmd/loader.go``, ``NewDefaultClientConfigLoadingRules``, ``Load``). Not one of
``CHECKS``: the caller reads the files (``tpu_platform.kubeconfig_check``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..cluster import ClusterConfig
from ..problems import Problems, did_you_mean

FILE = ("cluster", "kubeconfig")
CONTEXT = ("cluster", "context")
ENV = "KUBECONFIG"
CREATE_IT = (
    "write it (gcloud container clusters get-credentials, kind export kubeconfig or your cluster tool's own)"
)


def holds_contents(setting: str) -> bool:
    """``cluster.kubeconfig`` holding a file's contents (several lines, or JSON) rather than its path."""
    return "\n" in setting.strip() or setting.lstrip().startswith("{")


@dataclass(frozen=True)
class KubeconfigSource:
    """Where the provider takes its kubeconfig from: contents, one named file, or client-go's list."""

    named: str
    """How the stack or the environment names it, for messages."""
    paths: tuple[Path, ...] = ()
    contents: str | None = None
    explicit: bool = False
    """A file the stack names must exist; a missing file of the list is skipped."""
    relative_to: Path | None = None
    """The project folder, when the stack's path is relative."""


def kubeconfig_source(setting: str | None, *, env: str | None, home: Path, root: Path) -> KubeconfigSource:
    """Where a stack's kubeconfig is read: ``setting`` is ``cluster.kubeconfig``, ``env`` $KUBECONFIG
    (client-go: split at the OS path separator, each file once, empty names skipped; unset or empty:
    ``$HOME/.kube/config``)."""
    if setting is not None and holds_contents(setting):
        return KubeconfigSource("the kubeconfig contents in cluster.kubeconfig", contents=setting)
    if setting:
        path = Path(setting)
        if setting == "~" or setting.startswith("~/"):
            path = home / setting[2:]
        relative = not path.is_absolute()
        return KubeconfigSource(
            setting,
            paths=(root / path if relative else path,),
            explicit=True,
            relative_to=root if relative else None,
        )
    if env:
        listed = [name for name in dict.fromkeys(env.split(os.pathsep)) if name]
        if listed:
            paths = tuple(Path(name) if Path(name).is_absolute() else root / name for name in listed)
            return KubeconfigSource(f"${ENV} ({env})", paths=paths)
    default = home / ".kube" / "config"
    return KubeconfigSource(f"{default} (${ENV} is unset)", paths=(default,))


@dataclass(frozen=True)
class Kubeconfig:
    """What the check reads of a kubeconfig: its context names and its current context."""

    contexts: tuple[str, ...]
    current: str


def parse_kubeconfig(text: str) -> Kubeconfig | str:
    """A kubeconfig's contexts, or why the text is none (YAML with a ``contexts`` list)."""
    try:
        doc: Any = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        return f"not valid YAML{where}"
    if not isinstance(doc, dict):
        return "not a mapping with contexts:"
    contexts = doc.get("contexts")
    if not isinstance(contexts, list) or not contexts:
        return "it holds no contexts: list"
    names = tuple(str(item["name"]) for item in contexts if isinstance(item, dict) and item.get("name"))
    if len(names) != len(contexts):
        return "a context in its contexts: list has no name"
    current = doc.get("current-context")
    return Kubeconfig(names, current if isinstance(current, str) else "")


Read = str | OSError
"""A file's text, or the error reading it gave."""


def kubeconfig_problems(
    cluster: ClusterConfig, source: KubeconfigSource, files: Mapping[Path, Read]
) -> Problems:
    """The problems of a kubeconfig-mode cluster's file and context; ``files`` holds what reading each
    of ``source.paths`` gave. As client-go merges a list: a missing file is skipped, a context comes
    from the first file that names it, the current context from the first file that sets one."""
    problems = Problems()
    if not cluster.reached_by_kubeconfig:
        return problems
    found: list[Kubeconfig] = []
    if source.contents is not None:
        parsed = parse_kubeconfig(source.contents)
        if isinstance(parsed, str):
            problems.add(
                FILE, f"the contents given here are no kubeconfig: {parsed}; fix them or name the file"
            )
            return problems
        found.append(parsed)
    for path in source.paths:
        read = files[path]
        shown = _shown(source, path)
        if isinstance(read, FileNotFoundError):
            if source.explicit:
                problems.add(FILE, f"no kubeconfig file at {shown}; {CREATE_IT}, or fix the path")
            continue
        if isinstance(read, OSError):
            problems.add(
                FILE, f"cannot read {shown}: {read.strerror or read}; make it readable or name another file"
            )
            continue
        parsed = parse_kubeconfig(read)
        if isinstance(parsed, str):
            problems.add(FILE, f"{shown} is not a kubeconfig: {parsed}; name a kubeconfig file")
            continue
        found.append(parsed)
    if problems.items:
        return problems
    if not found:
        missing = "it does not exist" if len(source.paths) == 1 else "none of them exists"
        problems.add(
            FILE,
            f"unset, so the Kubernetes provider reads {source.named}, and {missing}; {CREATE_IT}, and "
            f"set cluster.kubeconfig to its path or point ${ENV} at it",
        )
        return problems
    contexts = tuple(dict.fromkeys(name for kubeconfig in found for name in kubeconfig.contexts))
    listed = ", ".join(contexts)
    where = _shown(source, source.paths[0]) if source.explicit else source.named
    if cluster.context is not None:
        if cluster.context not in contexts:
            problems.add(
                CONTEXT,
                f"no context {cluster.context!r} in {where}{did_you_mean(cluster.context, contexts)}; "
                f"contexts there: {listed}; set context to one of them or add it to the file",
            )
        return problems
    current = next((kubeconfig.current for kubeconfig in found if kubeconfig.current), "")
    if not current:
        problems.add(CONTEXT, f"unset, and {where} sets no current-context; set context to one of {listed}")
    elif current not in contexts:
        problems.add(
            CONTEXT,
            f"unset, and the current-context {current!r} of {where} is none of its contexts ({listed}); "
            "set context to one of them",
        )
    return problems


def _shown(source: KubeconfigSource, path: Path) -> str:
    """A file as the stack names it and where that is: a relative path is the project folder's."""
    if source.relative_to is not None:
        return f"{path} ({source.named!r} is read from the project folder, where Pulumi runs the program)"
    if source.explicit and str(path) != source.named:
        return f"{path} ({source.named})"
    return str(path)
