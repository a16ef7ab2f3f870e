"""Derive which GKE fields force a replacement from the Google provider's own schema source.

pulumi-gcp is a bridge over Terraform's Google provider: a field marked ``ForceNew: true`` in
the provider's SDKv2 schema makes ``pulumi up`` replace the resource. The Python SDK does not
ship that schema, so this module reads the Go schema literals of the upstream provider
(hashicorp/terraform-provider-google, ``google/services/container/``) and writes the result as
package data (``data/force_new.json``) with the sha256 of each source file, so a reviewer can
re-derive it:

    python -m tpu_platform.plan.force_new --git-dir <mirror of terraform-provider-google> --tag v7.44.0

Only a field's own ``ForceNew`` counts. In SDKv2 a ``ForceNew`` list block forces a new
resource only when the block is added or removed (``schemaMap.diffList`` gives the ``.#``
count diff the block's ``ForceNew``; its children keep their own flag): hashicorp/terraform-plugin-sdk,
``helper/schema/schema.go`` (v2.38.1).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from .upstream_git import git_show, write_or_print

DATA_FILE = "force_new.json"
_FIELD = re.compile(r'^(\t+)"([a-z0-9_]+)":\s*(\{|schema[A-Za-z]+\(\),?)')
_HELPER_CALL = re.compile(r'^(\t+)"([a-z0-9_]+)":\s*(schema[A-Za-z]+)\(\),?\s*$')
_FUNC = re.compile(r"^func (schema[A-Za-z]+)\(\) \*schema\.Schema \{")


def snake_to_camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def camel_path(path: str) -> str:
    return ".".join(snake_to_camel(part) for part in path.split("."))


def walk_schema(lines: Iterable[str]) -> Iterator[tuple[str, str, str | None]]:
    """``(path, line, helper)`` over gofmt'd schema literals, nesting by tab indentation. On a
    field's own line ``path`` is that field's dotted snake_case path and ``helper`` the schema
    function the field is defined by (``"node_config": schemaNodeConfig(),``) or ``""``; on any other
    line ``path`` is the enclosing field's (``""`` outside every field) and ``helper`` None. A field
    ends at the ``}`` that closes its block at its own depth, or at any line less indented (a
    package-level ``var`` block of schema maps must not nest the fields that follow it); lines inside a
    multi-line raw string (a backquoted ``Description``) are text, not structure."""
    stack: list[tuple[int, str]] = []
    in_raw = False
    for line in lines:
        starts_raw = in_raw
        in_raw ^= line.count("`") % 2 == 1
        field = None if starts_raw else _FIELD.match(line)
        if field:
            depth = len(field.group(1))
            while stack and stack[-1][0] >= depth:
                stack.pop()
            stack.append((depth, field.group(2)))
            call = _HELPER_CALL.match(line)
            yield ".".join(name for _, name in stack), line, call.group(3) if call else ""
        else:
            stripped = line.lstrip("\t")
            if stripped.strip() and not starts_raw:
                depth = len(line) - len(stripped)
                closes = stripped.startswith("}")
                while stack and (stack[-1][0] > depth or (closes and stack[-1][0] == depth)):
                    stack.pop()
            yield ".".join(name for _, name in stack), line, None


def force_new_fields(source: str, helpers: dict[str, set[str]] | None = None) -> set[str]:
    """Dotted snake_case paths of every field whose own schema says ``ForceNew: true``; a field
    defined by a helper call takes the helper's fields under its name."""
    helpers = helpers or {}
    found: set[str] = set()
    for path, line, helper in walk_schema(source.splitlines()):
        if helper is not None:
            if helper in helpers:
                found |= {f"{path}.{sub}" if sub else path for sub in helpers[helper]}
        elif path and re.match(r"^\s*ForceNew:\s*true,", line):
            found.add(path)
    return found


def helper_fields(source: str, name: str) -> set[str]:
    """ForceNew paths inside ``func <name>() *schema.Schema``, relative to the field it defines."""
    body: list[str] = []
    inside = False
    for line in source.splitlines():
        match = _FUNC.match(line)
        if match:
            inside = match.group(1) == name
            continue
        if inside:
            if line == "}":
                break
            body.append(line)
    text = "\n".join(body)
    own = {""} if re.search(r"^\t\tForceNew:\s*true,", text, re.M) else set()
    return own | force_new_fields(text)


def _sources(git_dir: Path, tag: str, paths: Sequence[str]) -> Iterator[tuple[str, str]]:
    for path in paths:
        yield path, git_show(git_dir, tag, path)


NODE_POOL_FILE = "google/services/container/resource_container_node_pool.go"
NODE_CONFIG_FILE = "google/services/container/node_config.go"
CLUSTER_FILE = "google/services/container/resource_container_cluster.go"


def derive(git_dir: Path, tag: str) -> dict[str, Any]:
    """The GKE part of ``force_new.json`` from a mirror of the provider at ``tag``."""
    texts = dict(_sources(git_dir, tag, (NODE_POOL_FILE, NODE_CONFIG_FILE, CLUSTER_FILE)))
    helpers = {"schemaNodeConfig": helper_fields(texts[NODE_CONFIG_FILE], "schemaNodeConfig")}
    pool = force_new_fields(texts[NODE_POOL_FILE], helpers)
    cluster = force_new_fields(texts[CLUSTER_FILE], helpers)
    return {
        "repository": "hashicorp/terraform-provider-google",
        "tag": tag,
        "files": {path: hashlib.sha256(text.encode()).hexdigest() for path, text in sorted(texts.items())},
        "resources": {
            "gcp:container/nodePool:NodePool": sorted(camel_path(p) for p in pool),
            "gcp:container/cluster:Cluster": sorted(camel_path(p) for p in cluster),
        },
    }


def load() -> dict[str, Any]:
    """The committed derivation (package data)."""
    text = resources.files("tpu_platform.plan").joinpath("data", DATA_FILE).read_text()
    data: dict[str, Any] = json.loads(text)
    return data


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--git-dir", type=Path, required=True, help="bare clone of terraform-provider-google")
    parser.add_argument("--tag", required=True)
    parser.add_argument("--write", action="store_true", help="update tpu_platform/plan/data/force_new.json")
    args = parser.parse_args(argv)
    current = load()
    note = current.get("gke", {}).get("note")
    current["gke"] = derive(args.git_dir, args.tag)
    if note:
        current["gke"]["note"] = note  # the reviewer's reasoning for the tag, kept across re-derivations
    text = json.dumps(current, indent=2, sort_keys=True) + "\n"
    write_or_print(text, DATA_FILE, args.write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
