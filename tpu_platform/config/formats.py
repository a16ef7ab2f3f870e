"""Value formats checked the way the receiving system checks them, each with its source.

Every function raises ``ValueError`` with a message that names the fix; the models call them
from field validators, so a problem carries its config path.
"""

from __future__ import annotations

import ipaddress
import re
from decimal import Decimal

from ..constants import DOMAIN
from ..hotswap.formats.quantity import QuantityError, split_quantity
from ..hotswap.formats.quantity import parse_quantity as api_quantity

# A decimal exponent beyond this is no container resource or weight, only a typo.
MAX_QUANTITY_EXPONENT = 30

# Label keys and values: k8s.io/apimachinery pkg/util/validation/validation.go
# (IsQualifiedName: optional DNS-subdomain prefix of at most 253 characters, a name of at most 63;
# IsValidLabelValue: at most 63, alphanumeric at both ends).
LABEL_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
DNS_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

# Node label prefixes the platform may not set on a pool. Kubernetes reserves kubernetes.io and
# k8s.io for its components (https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/);
# GKE sets cloud.google.com/gke-* labels itself, among them gke-tpu-accelerator and gke-tpu-topology
# from the machine type and placement (https://cloud.google.com/kubernetes-engine/docs/concepts/plan-tpus),
# and the platform sets its own tpu-platform.dev labels.
RESERVED_LABEL_PREFIXES = ("kubernetes.io", "k8s.io", "cloud.google.com", DOMAIN)

# Project ids: 6-30 lowercase letters, digits or hyphens, starting with a letter, not ending with a
# hyphen (https://cloud.google.com/resource-manager/docs/creating-managing-projects); legacy
# domain-scoped ids carry a "domain:" prefix.
PROJECT_ID_RE = re.compile(r"^([a-z0-9.-]+:)?[a-z][-a-z0-9]{4,28}[a-z0-9]$")
# Service account emails (https://cloud.google.com/iam/docs/service-accounts-create: account ids of
# 6-30 characters) in a project, or a project's Compute Engine default service account.
SA_EMAIL_RE = re.compile(
    r"^([a-z][-a-z0-9]{4,28}[a-z0-9]@[a-z][-a-z0-9]{4,28}[a-z0-9]\.iam\.gserviceaccount\.com"
    r"|[0-9]{6,20}-compute@developer\.gserviceaccount\.com)$"
)
# GKE versions as the container API takes them (pulumi-gcp container.Cluster min_master_version:
# "latest", a minor "1.31", a patch "1.31.2" or a full "1.31.2-gke.1115000").
GKE_VERSION_RE = re.compile(r"^(latest|1\.[0-9]{1,3}(\.[0-9]{1,3}(-gke\.[0-9]{1,10})?)?)$")
# Compute Engine machine type names (https://cloud.google.com/compute/docs/machine-resource):
# series-type-size such as e2-standard-8, n2-highmem-16, e2-custom-4-8192.
MACHINE_TYPE_RE = re.compile(r"^[a-z][a-z0-9]{1,4}-[a-z0-9]+(-[a-z0-9]+){0,3}$")


def parse_quantity(text: str) -> Decimal:
    """A Kubernetes quantity's value as the API server's ``ParseQuantity`` gives it, or ``ValueError``.

    Stricter than the server where it can only be a typo: the number must hold a digit (the server
    reads ``Gi`` or ``.`` as 0) and a decimal exponent be at most 30 either way."""
    not_a_quantity = f"{text!r} is not a Kubernetes quantity such as '500m', '2', '512Mi' or '1Gi'"
    try:
        parts = split_quantity(text)
    except QuantityError:
        raise ValueError(not_a_quantity) from None
    if not parts.has_digits:
        raise ValueError(not_a_quantity)
    if parts.exponent is not None and abs(parts.exponent) > MAX_QUANTITY_EXPONENT:
        raise ValueError(f"{text!r}: exponent out of range for a container resource")
    try:
        return api_quantity(text)
    except QuantityError:
        raise ValueError(not_a_quantity) from None


def check_quantity(text: str, what: str, maximum: str) -> Decimal:
    """A non-negative quantity no larger than ``maximum`` (a cap on absurd sizes)."""
    value = parse_quantity(text)
    if value < 0:
        raise ValueError(f"{what} {text!r} must not be negative")
    if value > parse_quantity(maximum):
        raise ValueError(f"{what} {text!r} is larger than any node offers; use at most {maximum}")
    return value


def check_label_key(key: str) -> str:
    """``prefix/name`` or ``name``, as ``IsQualifiedName`` accepts."""
    prefix, _, name = key.rpartition("/")
    if "/" in prefix or not name or len(name) > 63 or not LABEL_NAME_RE.match(name):
        raise ValueError(
            f"label key {key!r} is not a qualified name: an optional DNS prefix and '/', then at most 63 "
            "letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
        )
    if key.count("/") == 1 and (len(prefix) > 253 or not DNS_SUBDOMAIN_RE.match(prefix)):
        raise ValueError(f"label key {key!r}: prefix {prefix!r} is not a lowercase DNS subdomain")
    return key


def check_label_value(key: str, value: str) -> str:
    if len(value) > 63 or not LABEL_VALUE_RE.match(value):
        raise ValueError(
            f"label {key}={value!r} is not a valid Kubernetes label value: use at most 63 letters, digits, "
            "'-', '_' or '.', starting and ending with a letter or digit"
        )
    return value


def reserved_label_prefix(key: str) -> str | None:
    """The reserved prefix a node label key falls under, if any."""
    prefix = key.rpartition("/")[0]
    for reserved in RESERVED_LABEL_PREFIXES:
        if prefix == reserved or prefix.endswith("." + reserved):
            return reserved
    return None


def check_ipv4_cidr(text: str) -> str:
    """An IPv4 network such as 10.0.0.0/8; host bits must be zero, as the GKE API requires."""
    try:
        network = ipaddress.IPv4Network(text, strict=True)
    except ValueError as err:
        raise ValueError(f"{text!r} is not an IPv4 CIDR such as '10.0.0.0/8' ({err})") from None
    return str(network)


def check_project_id(text: str) -> str:
    if not PROJECT_ID_RE.match(text):
        raise ValueError(
            f"{text!r} is not a Google Cloud project id: 6-30 lowercase letters, digits or hyphens, starting "
            "with a letter (the id, not the project number or display name)"
        )
    return text


def check_service_account_email(text: str) -> str:
    if not SA_EMAIL_RE.match(text):
        raise ValueError(
            f"{text!r} is not a service account email such as 'tpu-nodes@PROJECT.iam.gserviceaccount.com' "
            "(account ids are 6-30 characters)"
        )
    return text


def check_gke_version(text: str) -> str:
    if not GKE_VERSION_RE.match(text):
        raise ValueError(f"{text!r} is not a GKE version: 'latest', '1.31', '1.31.2' or '1.31.2-gke.1115000'")
    return text


def check_machine_type(text: str) -> str:
    if not MACHINE_TYPE_RE.match(text):
        raise ValueError(f"{text!r} is not a Compute Engine machine type such as 'e2-standard-8'")
    if text.startswith("ct"):
        raise ValueError(
            f"{text!r} is a TPU machine type; the system pool runs CPU nodes such as 'e2-standard-8'"
        )
    return text
