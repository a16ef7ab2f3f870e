"""Shared pieces of the stack models: strict camelCase models and the name and number formats
Kubernetes and GKE accept, each rejected with a message that names the fix.

Stack files are YAML written by people, so every error names the exact config path
(``tpu-platform:slicePools[1].topology``) and says what to do about it.
"""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from .formats import parse_quantity

NANO = Decimal("1e-9")

GKE_NAME_RE = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_VALUE_RE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")


class StackModel(BaseModel):
    """Base for every stack section: camelCase keys, unknown keys rejected, immutable."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        extra="forbid",
        frozen=True,
        str_strip_whitespace=True,
        strict=True,
    )

    # Keys people copy from other tools or older APIs, mapped to what to write instead. An
    # unknown key found here gets this message instead of the generic "unknown key".
    misused_keys: ClassVar[dict[str, str]] = {}


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


def fair_sharing_weight(value: Any) -> str | None:
    """Fair-sharing weights, kept as text: what Kueue v0.19.2 accepts, a Kubernetes quantity that
    is 0 or greater than 1n (``pkg/webhooks/common.go``, ``validateFairSharing``: not negative, and
    "When not 0, weight must be > 10e-9", comparing with ``resource.MustParse("1n")``)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(
            f"fair-sharing weight {value!r} must be a non-negative quantity such as 1, 0.5 or 500m"
        )
    text = str(value).strip()
    try:
        # The API server keeps a quantity to 1n, rounding a finer one up (``ParseQuantity``).
        number: Decimal | None = parse_quantity(text).quantize(NANO, rounding=ROUND_CEILING)
    except (ValueError, ArithmeticError):
        number = None
    if number is None or number < 0:
        raise ValueError(
            f"fair-sharing weight {value!r} must be a non-negative quantity such as 1, 0.5 or 500m"
        )
    if 0 < number <= NANO:
        raise ValueError(
            f"fair-sharing weight {value!r} must be 0 or greater than 1n (1e-9): Kueue rejects a weight "
            "that would collapse to 0"
        )
    return text
