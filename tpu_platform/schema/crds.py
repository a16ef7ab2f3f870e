"""Find CustomResourceDefinitions on disk and load only the ones an object needs.

The Workload CRD alone is 1.4 MB, so the index reads just the head of each file
(group, kind, scope) and parses a whole file the first time one of its kinds is validated.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

ENV_CRDS = "TPU_PLATFORM_CRDS"
REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CRDS_DIR = REPO_ROOT.parent / "shared" / "crds"

_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_VERSIONS_LINE = re.compile(r"^  versions:\s*$")
_DOC_START = re.compile(r"^---\s*$")


class CrdsUnavailable(RuntimeError):
    """No CRD files to validate custom resources against; ``str(err)`` says where they were looked for."""


def crds_dir() -> Path:
    """``$TPU_PLATFORM_CRDS`` if set, else ``shared/crds`` next to the repository."""
    configured = os.environ.get(ENV_CRDS)
    return Path(configured).expanduser() if configured else DEFAULT_CRDS_DIR


def locate_crds(explicit: Path | None = None, *, allow_fetch: bool | None = None) -> Path:
    """The CRD folder for a user-facing check, never a silent fallback.

    In order: ``explicit`` (``--crds``), ``$TPU_PLATFORM_CRDS``, the repository's ``shared/crds``,
    the pinned files in the user cache (verified by sha256), and finally a download of the
    pinned files into that cache (``tpu_platform.schema.fetch``) unless ``$TPU_PLATFORM_OFFLINE``
    is set. Raises ``CrdsUnavailable`` naming every place looked at.
    """
    from . import fetch

    if explicit is not None:
        if not explicit.is_dir():
            raise CrdsUnavailable(f"--crds {explicit}: no such folder")
        return explicit
    configured = os.environ.get(ENV_CRDS)
    if configured:
        path = Path(configured).expanduser()
        if not path.is_dir():
            raise CrdsUnavailable(f"{ENV_CRDS}={configured}: no such folder")
        return path
    if DEFAULT_CRDS_DIR.is_dir():
        return DEFAULT_CRDS_DIR
    cache = fetch.cache_dir()
    if fetch.verified(cache):
        return cache
    if allow_fetch is None:
        allow_fetch = not os.environ.get(fetch.ENV_OFFLINE)
    if not allow_fetch:
        raise CrdsUnavailable(
            f"no CRDs in {DEFAULT_CRDS_DIR} or {cache}, and {fetch.ENV_OFFLINE} forbids downloading them"
        )
    try:
        return fetch.fetch(cache)
    except fetch.FetchError as err:
        raise CrdsUnavailable(
            f"no CRDs in {DEFAULT_CRDS_DIR} or {cache}, and fetching them failed: {err}"
        ) from err


@dataclass(frozen=True)
class CrdVersion:
    """One version of a CRD as the API server serves it."""

    name: str
    served: bool
    storage: bool
    deprecated: bool
    deprecation_warning: str | None
    schema: dict[str, Any]


@dataclass
class Crd:
    """One CustomResourceDefinition file; its versions are parsed on first use."""

    path: Path
    group: str
    kind: str
    plural: str
    namespaced: bool

    @cached_property
    def versions(self) -> dict[str, CrdVersion]:
        doc = _load_crd_document(self.path, self.group, self.kind)
        versions: dict[str, CrdVersion] = {}
        for version in doc["spec"].get("versions") or []:
            versions[version["name"]] = CrdVersion(
                name=version["name"],
                served=bool(version.get("served", False)),
                storage=bool(version.get("storage", False)),
                deprecated=bool(version.get("deprecated", False)),
                deprecation_warning=version.get("deprecationWarning"),
                schema=(version.get("schema") or {}).get("openAPIV3Schema") or {},
            )
        return versions

    def recommended_versions(self) -> list[str]:
        """Served versions that are not deprecated, storage version first."""
        good = [v for v in self.versions.values() if v.served and not v.deprecated]
        return [v.name for v in sorted(good, key=lambda v: not v.storage)]


def _load_crd_document(path: Path, group: str, kind: str) -> dict[str, Any]:
    with path.open() as stream:
        for doc in yaml.load_all(stream, Loader=_LOADER):
            if _is_crd(doc) and doc["spec"].get("group") == group and doc["spec"]["names"]["kind"] == kind:
                return dict(doc)
    raise CrdsUnavailable(f"{path} no longer defines {kind}.{group}")


def _is_crd(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and doc.get("kind") == "CustomResourceDefinition"
        and isinstance(doc.get("spec"), dict)
        and isinstance(doc["spec"].get("names"), dict)
    )


def _read_heads(path: Path) -> list[dict[str, Any]]:
    """The CRD documents of a file, each cut before its ``versions:`` (the bulky part)."""
    docs: list[list[str]] = [[]]
    cut = False
    with path.open() as stream:
        for line in stream:
            if _DOC_START.match(line):
                docs.append([])
                cut = False
            elif not cut:
                cut = bool(_VERSIONS_LINE.match(line))
                if not cut:
                    docs[-1].append(line)
    heads = (yaml.load("".join(lines), Loader=_LOADER) for lines in docs if any(s.strip() for s in lines))
    return [head for head in heads if _is_crd(head)]


class CrdCatalog:
    """Every CRD under a directory, keyed by (group, kind)."""

    def __init__(self, root: Path):
        self.root = root
        if not root.is_dir():
            raise CrdsUnavailable(
                f"no CRD directory at {root}; set {ENV_CRDS} to a folder with the Kueue and JobSet CRD files"
            )
        self.by_kind: dict[tuple[str, str], Crd] = {}
        for path in sorted(p for p in root.rglob("*") if p.suffix in (".yaml", ".yml")):
            for head in _read_heads(path):
                spec = head["spec"]
                names = spec["names"]
                key = (spec["group"], names["kind"])
                if key in self.by_kind:
                    raise CrdsUnavailable(
                        f"{names['kind']}.{spec['group']} is defined twice: "
                        f"{self.by_kind[key].path} and {path}"
                    )
                self.by_kind[key] = Crd(
                    path=path,
                    group=spec["group"],
                    kind=names["kind"],
                    plural=names.get("plural", ""),
                    namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                )
        if not self.by_kind:
            raise CrdsUnavailable(f"no CustomResourceDefinition files under {root}")

    @property
    def groups(self) -> set[str]:
        return {group for group, _ in self.by_kind}

    def kinds(self, group: str) -> list[str]:
        return sorted(kind for g, kind in self.by_kind if g == group)

    def get(self, group: str, kind: str) -> Crd | None:
        return self.by_kind.get((group, kind))
