"""ObjectMeta checks the API server makes on every object (``ValidateObjectMeta``).

A CRD's schema says only ``metadata: {type: object}``: the API server checks the name,
namespace, labels and annotations itself, so a schema alone would pass a bad name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from .issues import SchemaIssue

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_ANNOTATIONS_MAX_BYTES = 256 * 1024


def dns1123_subdomain(name: str) -> str | None:
    if len(name) > 253:
        return "must be no more than 253 characters"
    if not _DNS1123_SUBDOMAIN.match(name):
        return (
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
            "'-' or '.', and must start and end with an alphanumeric character"
        )
    return None


def dns1123_label(name: str) -> str | None:
    if len(name) > 63:
        return "must be no more than 63 characters"
    if not _DNS1123_LABEL.match(name):
        return (
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
            "and must start and end with an alphanumeric character"
        )
    return None


def dns1035_label(name: str) -> str | None:
    if len(name) > 63:
        return "must be no more than 63 characters"
    if not _DNS1035_LABEL.match(name):
        return (
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
            "start with an alphabetic character, and end with an alphanumeric character"
        )
    return None


def path_segment(name: str) -> str | None:
    if name in (".", ".."):
        return f"may not be {name!r}"
    for bad in ("/", "%"):
        if bad in name:
            return f"may not contain {bad!r}"
    return None


NameCheck = Callable[[str], str | None]

# Kinds whose names follow another rule than the RFC 1123 subdomain most kinds (and every
# custom resource) use.
NAME_RULES: dict[str, NameCheck] = {
    "Namespace": dns1123_label,
    "Service": dns1035_label,
    "Role": path_segment,
    "ClusterRole": path_segment,
    "RoleBinding": path_segment,
    "ClusterRoleBinding": path_segment,
    # ValidatePodDisruptionBudget checks only the spec (kubernetes v1.34.12
    # pkg/apis/policy/validation/validation.go); the registry's path-segment rule is all a name gets.
    "PodDisruptionBudget": path_segment,
}


def qualified_name(key: str) -> str | None:
    """Label and annotation keys: ``[prefix/]name``, the prefix a DNS subdomain."""
    if key.count("/") > 1:
        return "a qualified name has at most one '/' (an optional DNS subdomain prefix, then the name)"
    prefix, slash, name = key.rpartition("/")
    if slash and not prefix:
        return "prefix part must be non-empty"
    if slash and (problem := dns1123_subdomain(prefix)):
        return f"prefix part {problem}"
    if not name:
        return "name part must be non-empty"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if not _QUALIFIED_NAME.match(name):
        return (
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
            "and end with an alphanumeric character"
        )
    return None


def label_value(value: str) -> str | None:
    if len(value) > 63:
        return "must be no more than 63 characters"
    if not _LABEL_VALUE.match(value):
        return (
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
            "or '.', and must start and end with an alphanumeric character"
        )
    return None


def mask_trailing_dash(prefix: str) -> str:
    """A generateName as the server checks it: apimachinery v0.34.12 ``pkg/api/validation/generic.go``
    ``maskTrailingDash`` drops the last *two* characters of a longer-than-one prefix ending in a dash
    and appends ``a`` (so ``"a.-"`` passes and ``"-"`` does not); the quirk is kept for agreement."""
    if len(prefix) > 1 and prefix.endswith("-"):
        return prefix[:-2] + "a"
    return prefix


def check_object_meta(meta: dict[str, Any], *, kind: str, namespaced: bool | None) -> list[SchemaIssue]:
    """Name (or generateName), namespace, label and annotation rules; ``namespaced=None`` when unknown."""
    problems: list[SchemaIssue] = []
    name_rule = NAME_RULES.get(kind, dns1123_subdomain)
    name = meta.get("name")
    generate = meta.get("generateName")
    if not name and not generate:
        problems.append(
            SchemaIssue("metadata.name", "Required value: name or generateName is required", code="metadata")
        )
    if isinstance(name, str) and name and (problem := name_rule(name)):
        problems.append(SchemaIssue("metadata.name", f"Invalid value: {name!r}: {problem}", code="metadata"))
    if isinstance(generate, str) and generate and (problem := name_rule(mask_trailing_dash(generate))):
        problems.append(
            SchemaIssue("metadata.generateName", f"Invalid value: {generate!r}: {problem}", code="metadata")
        )
    namespace = meta.get("namespace")
    if isinstance(namespace, str) and namespace:
        if namespaced is False:
            problems.append(
                SchemaIssue(
                    "metadata.namespace",
                    f"namespace {namespace!r} is ignored: {kind} is cluster-scoped",
                    severity="warning",
                    code="metadata",
                )
            )
        elif problem := dns1123_label(namespace):
            problems.append(
                SchemaIssue("metadata.namespace", f"Invalid value: {namespace!r}: {problem}", code="metadata")
            )
    labels = meta.get("labels")
    if isinstance(labels, dict):
        for key, value in labels.items():
            if problem := qualified_name(str(key)):
                problems.append(
                    SchemaIssue(
                        f"metadata.labels[{json.dumps(key)}]",
                        f"Invalid label key {key!r}: {problem}",
                        code="metadata",
                    )
                )
            if isinstance(value, str) and (problem := label_value(value)):
                problems.append(
                    SchemaIssue(
                        f"metadata.labels[{json.dumps(key)}]",
                        f"Invalid label value {value!r}: {problem}",
                        code="metadata",
                    )
                )
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        for key in annotations:
            if problem := qualified_name(str(key).lower()):
                problems.append(
                    SchemaIssue(
                        f"metadata.annotations[{json.dumps(key)}]",
                        f"Invalid annotation key {key!r}: {problem}",
                        code="metadata",
                    )
                )
        size = sum(len(str(k)) + len(str(v or "")) for k, v in annotations.items())
        if size > _ANNOTATIONS_MAX_BYTES:
            problems.append(
                SchemaIssue(
                    "metadata.annotations",
                    f"Too long: annotations total {size} bytes, limit 262144",
                    code="metadata",
                )
            )
    return problems
