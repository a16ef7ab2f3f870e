"""Values the Google provider rejects before any API call, derived from its pinned schema source.

pulumi-gcp bridges Terraform's Google provider, whose SDKv2 schema validates each field before
``pulumi preview`` reaches Google: ``ValidateFunc: validation.StringInSlice([]string{...}, ignoreCase)``
(an enum), ``ConflictsWith: []string{...}`` (fields that cannot be set together), and
``AtLeastOneOf`` / ``ExactlyOneOf`` (groups of a set block of which at least / exactly one must be
set, often a package-level key list such as ``addonsConfigKeys``; the container schema at v7.44.0
has no ``RequiredWith``). As :mod:`tpu_platform.plan.force_new` reads ``ForceNew``, this module
reads them from the Go schema
literals of hashicorp/terraform-provider-google (``google/services/container/``) at the pinned tag and
writes them as package data (``data/provider_rules.json``, with each source file's sha256):

    python -m tpu_platform.plan.provider_rules --git-dir <mirror of terraform-provider-google> --tag v7.44.0

:func:`violations` checks a rendered plan's NodePool and Cluster inputs against them, so a value the
provider would refuse fails ``tpu-platform plan`` and the plan tests before any preview. Semantics of
the two validators: hashicorp/terraform-plugin-sdk v2.38.1 ``helper/validation/strings.go``
(``StringInSlice``: the value must equal one of the list, case-folded when ``ignoreCase``) and
``helper/schema/schema.go`` (``validateConflictingAttributes``: an error when the field and any
listed one are both set).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from .force_new import CLUSTER_FILE, NODE_CONFIG_FILE, NODE_POOL_FILE, camel_path, walk_schema
from .upstream_git import git_show, write_or_print

DATA_FILE = "provider_rules.json"
NODE_POOL = "gcp:container/nodePool:NodePool"
CLUSTER = "gcp:container/cluster:Cluster"
_FUNC = re.compile(r"^func (schema[A-Za-z]+)\(\) \*schema\.Schema \{")
_ENUM = re.compile(r"StringInSlice\(\[\]string\{([^}]*)\},\s*(true|false)\)")
_CONFLICTS = re.compile(r"ConflictsWith:\s*\[\]string\{([^}]*)\}")
_ONE_OF = re.compile(r"(AtLeastOneOf|ExactlyOneOf):\s*(?:\[\]string\{([^}]*)\}|(\w+))")
_KEY_LIST = re.compile(r"^\t(\w+)\s*=\s*\[\]string\{([^}]*)\}", re.M)
_MULTILINE = (
    "StringInSlice([]string{",
    "ConflictsWith: []string{",
    "AtLeastOneOf: []string{",
    "ExactlyOneOf: []string{",
)
ONE_OF_KEYS = {"AtLeastOneOf": "at_least_one_of", "ExactlyOneOf": "exactly_one_of"}
_STRING = re.compile(r'"([^"]*)"')

Facts = dict[str, dict[str, Any]]
"""Dotted snake_case path -> {"enum": [...], "ignore_case": bool} and/or {"conflicts": [...]}."""


def _statements(lines: Iterable[str]) -> Iterator[str]:
    """Lines, with a ``StringInSlice(`` or ``ConflictsWith`` list that spans lines joined into one."""
    pending = ""
    for line in lines:
        if pending:
            pending += " " + line.strip()
            if "}" in line:
                yield pending
                pending = ""
            continue
        if any(opening in line for opening in _MULTILINE) and "}" not in line:
            pending = line
            continue
        yield line


def key_lists(source: str) -> dict[str, list[str]]:
    """Package-level ``name = []string{...}`` lists (``addonsConfigKeys``), which ``AtLeastOneOf``
    and ``ExactlyOneOf`` name instead of listing keys inline."""
    return {m.group(1): _STRING.findall(m.group(2)) for m in _KEY_LIST.finditer(source)}


def schema_facts(
    source: str, helpers: Mapping[str, Facts] | None = None, lists: Mapping[str, list[str]] | None = None
) -> Facts:
    """Every field's enum, conflicts and one-of groups, by dotted snake_case path (gofmt's tab
    nesting, as :func:`~tpu_platform.plan.force_new.force_new_fields`); a field defined by a helper
    call takes the helper's facts under its name."""
    helpers = helpers or {}
    lists = {**key_lists(source), **(lists or {})}
    out: Facts = {}
    for path, line, helper in walk_schema(_statements(source.splitlines())):
        if helper is not None:
            for sub, facts in helpers.get(helper, {}).items():
                out.setdefault(f"{path}.{sub}" if sub else path, {}).update(facts)
        elif path:
            _facts_of(line, out.setdefault(path, {}), lists)
            if not out[path]:
                del out[path]
    return out


def _facts_of(line: str, into: dict[str, Any], lists: Mapping[str, list[str]] | None = None) -> None:
    one_of = _ONE_OF.search(line)
    if one_of:
        keys = _STRING.findall(one_of.group(2)) if one_of.group(2) is not None else None
        if keys is None:
            keys = list((lists or {}).get(one_of.group(3) or "", []))
        if keys:
            into[ONE_OF_KEYS[one_of.group(1)]] = keys
    enum = _ENUM.search(line)
    if enum:
        into["enum"] = _STRING.findall(enum.group(1))
        into["ignore_case"] = enum.group(2) == "true"
    conflicts = _CONFLICTS.search(line)
    if conflicts:
        into["conflicts"] = _STRING.findall(conflicts.group(1))


def helper_facts(source: str) -> dict[str, Facts]:
    """Facts inside each ``func schemaX() *schema.Schema``, relative to the field it defines (``""``:
    the field itself)."""
    bodies: dict[str, list[str]] = {}
    current: str | None = None
    for line in source.splitlines():
        match = _FUNC.match(line)
        if match:
            current = match.group(1)
            bodies[current] = []
            continue
        if current is not None:
            if line == "}":
                current = None
            else:
                bodies[current].append(line)
    lists = key_lists(source)
    out: dict[str, Facts] = {}
    for name, body in bodies.items():
        own: dict[str, Any] = {}
        for line in _statements(body):
            if re.match(r"^\t\t[A-Z]", line):
                _facts_of(line, own, lists)
        facts = schema_facts("\n".join(body), lists=lists)
        if own:
            facts[""] = own
        out[name] = facts
    return out


def derive(git_dir: Path, tag: str) -> dict[str, Any]:
    """``provider_rules.json`` from a mirror of the provider at ``tag``."""
    paths = (NODE_POOL_FILE, NODE_CONFIG_FILE, CLUSTER_FILE)
    texts = {path: git_show(git_dir, tag, path) for path in paths}
    helpers = {**helper_facts(texts[NODE_CONFIG_FILE]), **helper_facts(texts[CLUSTER_FILE])}
    rules = {
        NODE_POOL: schema_facts(texts[NODE_POOL_FILE], helpers),
        CLUSTER: schema_facts(texts[CLUSTER_FILE], helpers),
    }
    return {
        "repository": "hashicorp/terraform-provider-google",
        "tag": tag,
        "files": {path: hashlib.sha256(text.encode()).hexdigest() for path, text in sorted(texts.items())},
        "resources": {
            kind: {camel_path(path): facts for path, facts in sorted(found.items())}
            for kind, found in rules.items()
        },
    }


def load() -> dict[str, Any]:
    """The committed derivation (package data)."""
    text = resources.files("tpu_platform.plan").joinpath("data", DATA_FILE).read_text()
    data: dict[str, Any] = json.loads(text)
    return data


def _values(inputs: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(camelCase dotted path, value) of every set leaf and block; list items share their list's path
    (a Terraform list block's items are addressed ``field.0.sub``, which the rules drop)."""
    if isinstance(inputs, dict):
        for key, value in inputs.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            if value is None:
                continue
            yield path, value
            yield from _values(value, path)
    elif isinstance(inputs, list):
        for item in inputs:
            yield from _values(item, prefix)


def _conflict_path(ref: str) -> str:
    """``private_cluster_config.0.enable_private_endpoint`` -> the plan's camelCase path, list
    indexes dropped."""
    return camel_path(".".join(part for part in ref.split(".") if not part.isdigit()))


def _singular(segment: str) -> str:
    if segment.endswith("ies"):
        return segment[:-3] + "y"
    return segment[:-1] if segment.endswith("s") and not segment.endswith("ss") else segment


def plural_free(path: str) -> str:
    """A camelCase path with every segment singular. The bridge names a Terraform list or set field
    that may hold more than one item in the plural (``event_type`` is ``eventTypes`` in pulumi-gcp:
    pulumi/pulumi-terraform-bridge ``pkg/tfbridge/names.go``, ``TerraformToPulumiNameV2``), so a rule
    and a plan input meet on this form."""
    return ".".join(_singular(part) for part in path.split("."))


def _one_of(name: object, path: str, facts: Mapping[str, Any], present: set[str], tag: str) -> list[str]:
    """``AtLeastOneOf`` / ``ExactlyOneOf`` of a field whose block is set: the SDK checks each field
    of a present block (hashicorp/terraform-plugin-sdk v2.38.1 ``helper/schema/schema.go``,
    ``validateAtLeastOneAttribute`` and ``validateExactlyOneAttribute``: the group is the listed keys
    and the field itself)."""
    out = []
    for key, words, validator in (
        ("at_least_one_of", "at least one", "AtLeastOneOf"),
        ("exactly_one_of", "exactly one", "ExactlyOneOf"),
    ):
        refs = facts.get(key)
        if not refs:
            continue
        group = sorted({_conflict_path(ref) for ref in refs} | {path})
        count = sum(plural_free(p) in present for p in group)
        if (key == "at_least_one_of" and count == 0) or (key == "exactly_one_of" and count != 1):
            out.append(
                f"{name}: {words} of {', '.join(group)} must be set, {count} are "
                f"(terraform-provider-google {tag} {validator})"
            )
    return out


def violations(resources_: Iterable[Mapping[str, Any]], rules: Mapping[str, Any] | None = None) -> list[str]:
    """One line per input of a plan's resources that the provider's own validation would reject."""
    data = rules if rules is not None else load()
    tag = data.get("tag", "")
    out: list[str] = []
    for res in resources_:
        by_path = {plural_free(p): f for p, f in data.get("resources", {}).get(res.get("type"), {}).items()}
        if not by_path:
            continue
        values = dict(_values(res.get("inputs") or {}))
        present = {plural_free(p) for p in values}
        for path, value in sorted(values.items()):
            facts = by_path.get(plural_free(path))
            if not facts:
                continue
            allowed = facts.get("enum")
            items = value if isinstance(value, list) else [value]
            for item in items if allowed is not None else ():
                if not isinstance(item, str):
                    continue
                fold = facts.get("ignore_case", False)
                ok = item.lower() in {a.lower() for a in allowed} if fold else item in allowed
                if not ok:
                    out.append(
                        f"{res.get('name')}: {path} = {item!r} is not one of {', '.join(allowed)} "
                        f"(terraform-provider-google {tag}, the provider pulumi-gcp bridges, rejects it)"
                    )
            for ref in facts.get("conflicts", ()):
                other = _conflict_path(ref)
                if plural_free(other) in present:
                    out.append(
                        f"{res.get('name')}: {path} and {other} cannot both be set "
                        f"(terraform-provider-google {tag} ConflictsWith)"
                    )
        found: list[str] = []
        for path, facts in sorted(by_path.items()):
            parent = path.rpartition(".")[0]
            if not parent or parent in present:  # the SDK validates the fields of a block that is set
                found += [
                    line for line in _one_of(res.get("name"), path, facts, present, tag) if line not in found
                ]
        out += found
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--git-dir", type=Path, required=True, help="bare clone of terraform-provider-google")
    parser.add_argument("--tag", required=True)
    parser.add_argument(
        "--write", action="store_true", help="update tpu_platform/plan/data/provider_rules.json"
    )
    args = parser.parse_args(argv)
    text = json.dumps(derive(args.git_dir, args.tag), indent=2, sort_keys=True) + "\n"
    write_or_print(text, DATA_FILE, args.write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
