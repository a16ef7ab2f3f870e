"""Shared pieces of the stack model: strict camelCase models and readable errors.

Stack files are YAML written by people, so every error names the exact config path
(``tpu-platform:slicePools[1].topology``) and says what to do about it.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

PROJECT_NAMESPACE = "tpu-platform"
GCP_KEYS = frozenset({"project", "region", "zone"})

GKE_NAME_RE = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class StackModel(BaseModel):
    """Base for every stack section: camelCase keys, unknown keys rejected, immutable."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        extra="forbid",
        frozen=True,
        str_strip_whitespace=True,
    )

    # Keys people copy from other tools or older APIs, mapped to what to write instead. An
    # unknown key found here gets this message instead of the generic "unknown key".
    misused_keys: ClassVar[dict[str, str]] = {}


class StackConfigError(ValueError):
    """A stack file that cannot be deployed; ``problems`` holds one line per mistake."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        joined = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"invalid stack configuration ({len(problems)} problem(s)):\n{joined}")


def check_gke_name(value: str, what: str, max_len: int = 40) -> str:
    """Names GKE accepts for clusters and node pools: lowercase, digits, dashes."""
    if len(value) > max_len or not GKE_NAME_RE.match(value):
        raise ValueError(
            f"{what} {value!r} is not a valid GKE name: use 1-{max_len} lowercase letters, digits "
            "and dashes, starting with a letter and not ending with a dash"
        )
    return value


def check_dns_label(value: str, what: str) -> str:
    """Kubernetes namespace-style names (RFC 1123 labels, at most 63 characters)."""
    if len(value) > 63 or not DNS_LABEL_RE.match(value):
        raise ValueError(
            f"{what} {value!r} is not a valid Kubernetes name: use at most 63 lowercase letters, "
            "digits and dashes, starting and ending with a letter or digit"
        )
    return value


def check_dns_subdomain(value: str, what: str) -> str:
    """Kubernetes object names for cluster-scoped objects (RFC 1123 subdomains)."""
    if len(value) > 253 or not DNS_SUBDOMAIN_RE.match(value):
        raise ValueError(
            f"{what} {value!r} is not a valid Kubernetes object name: use lowercase letters, digits, "
            "dashes and dots, starting and ending with a letter or digit"
        )
    return value


def format_path(loc: tuple[int | str, ...] | list[int | str]) -> str:
    """``("slicePools", 1, "topology")`` -> ``tpu-platform:slicePools[1].topology``.

    The first element is a stack key; ``project``, ``region`` and ``zone`` live in the
    ``gcp:`` namespace (pulumi-gcp reads them too), everything else under ``tpu-platform:``.
    """
    if not loc:
        return "tpu-platform"
    head, *rest = loc
    namespace = "gcp" if head in GCP_KEYS else PROJECT_NAMESPACE
    path = f"{namespace}:{head}"
    for part in rest:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part == "__root__":
            continue
        else:
            path += f".{part}"
    return path


def _owner_model(model: type[BaseModel] | None, loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """Walk ``loc`` through the model to the model class where the last key of ``loc`` stood."""
    current: Any = model
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        field = next(
            (f for name, f in current.model_fields.items() if part in (name, f.alias)),
            None,
        )
        if field is None:
            return None
        current = _innermost_model(field.annotation)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return current
    return None


def _known_keys(model: type[BaseModel] | None, loc: tuple[int | str, ...]) -> list[str] | None:
    """The keys valid where an unknown key stood."""
    owner = _owner_model(model, loc)
    if owner is None:
        return None
    return sorted(f.alias or name for name, f in owner.model_fields.items())


def _misused_key_hint(model: type[BaseModel] | None, loc: tuple[int | str, ...]) -> str | None:
    """A model's explanation for a key people copy from elsewhere (``StackModel.misused_keys``)."""
    owner = _owner_model(model, loc)
    hints: dict[str, str] = getattr(owner, "misused_keys", {}) if owner is not None else {}
    return hints.get(str(loc[-1])) if loc else None


def _innermost_model(annotation: Any) -> Any:
    """Find the model class inside ``list[X]``, ``X | None``, ``dict[str, X]``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _innermost_model(arg)
        if found is not None:
            return found
    return None


def explain(error: ValidationError, model: type[BaseModel] | None = None) -> list[str]:
    """Turn a pydantic error on the whole stack into one actionable line per problem."""
    lines: list[str] = []
    for item in error.errors(include_url=False):
        loc = tuple(item["loc"])
        path = format_path(loc)
        kind = item["type"]
        msg = str(item["msg"])
        if kind == "extra_forbidden" and (misused := _misused_key_hint(model, loc)):
            lines.append(f"{path}: {misused}")
        elif kind == "extra_forbidden":
            known = _known_keys(model, loc)
            hint = f"; valid keys here: {', '.join(known)}" if known else ""
            lines.append(f"{path}: unknown key; remove it or fix its spelling{hint}")
        elif kind == "missing":
            lines.append(f"{path}: required; add it to the stack file")
        elif kind == "value_error":
            lines.append(f"{path}: {msg.removeprefix('Value error, ')}")
        else:
            lines.append(f"{path}: {msg} (got {item.get('input')!r})")
    return lines
