"""The Kueue invariants of the policy pack: Kueue objects only after its install, and per flavor
the TPU quota Kueue may admit within the chips of the node pools it selects.

Pure functions over plain resources, as :mod:`tpu_platform.policy.rules` (which lists them in the
catalogue).
"""

from __future__ import annotations

import re
from typing import Any

from ..claims import Claims
from ..constants import EXISTING_CHIPS_ANNOTATION, OVERCOMMIT_ANNOTATION, TPU_RESOURCE
from ..hotswap.formats.quantity import QuantityError
from ..hotswap.formats.quantity import parse_quantity as api_quantity
from ..tpu_pools import NODE_POOL
from .pools import is_tpu_pool, pool_chips, pool_name, pool_node_labels
from .resources import Config, Resource, Stack, Violation, as_list, dig, is_unknown

KUEUE_TYPE_PREFIX = "kubernetes:kueue.x-k8s.io/"
# Ways a third-party install (Kueue, JobSet) reaches a cluster through pulumi-kubernetes.
INSTALL_TYPES = frozenset(
    {
        "kubernetes:helm.sh/v4:Chart",
        "kubernetes:helm.sh/v3:Chart",
        "kubernetes:helm.sh/v3:Release",
        "kubernetes:yaml/v2:ConfigFile",
        "kubernetes:yaml/v2:ConfigGroup",
        "kubernetes:yaml:ConfigFile",
        "kubernetes:yaml:ConfigGroup",
    }
)


# --- Kueue ----------------------------------------------------------------------------------


def kueue_kind(resource: Resource) -> str | None:
    if not resource.type.startswith(KUEUE_TYPE_PREFIX):
        return None
    return resource.type.rsplit(":", 1)[-1]


KNOWN_INSTALLS = ("kueue", "jobset")


def install_identity(resource: Resource, known: tuple[str, ...] = KNOWN_INSTALLS) -> str | None:
    """Which upstream a Helm/YAML install resource brings: its chart's name, else its own name.

    ``oci://registry.k8s.io/kueue/charts/kueue`` -> ``kueue``; a resource named
    ``tpu-kueue-jobset`` -> ``jobset`` (the last known word wins, so an install component's
    prefix does not decide).
    """
    if resource.type not in INSTALL_TYPES:
        return None
    chart = resource.get("chart")
    source = chart.rstrip("/").rsplit("/", 1)[-1] if isinstance(chart, str) and chart else resource.name
    words = [w for w in re.split(r"[^a-z0-9]+", source.lower()) if w]
    for word in reversed(words):
        if word in known:
            return word
    return words[-1] if words else None


def is_kueue_install(stack: Stack, resource: Resource) -> bool:
    """The Kueue chart (or manifests) itself, or any object it installs."""
    if kueue_kind(resource) is not None:
        return False
    return any(install_identity(c) == "kueue" for c in (resource, *stack.ancestors(resource)))


def check_kueue_after_install(stack: Stack, config: Config) -> list[Violation]:
    """Kueue's webhooks must serve before its objects are created: each one depends on the install."""
    violations: list[Violation] = []
    kueue_objects = [r for r in stack if kueue_kind(r) is not None]
    if not kueue_objects:
        return []
    has_install = any(is_kueue_install(stack, r) for r in stack)
    for resource in kueue_objects:
        seen: set[str] = set()
        frontier = list(resource.dependencies)
        found = False
        while frontier and not found:
            urn = frontier.pop()
            if urn in seen or urn not in stack.by_urn:
                continue
            seen.add(urn)
            dep = stack.by_urn[urn]
            found = is_kueue_install(stack, dep)
            frontier.extend(dep.dependencies)
        if found:
            continue
        hint = (
            "pass depends_on=[the Kueue install] when creating it"
            if has_install
            else "this stack has no Kueue install (a kubernetes:helm.sh/v4:Chart of Kueue); add one "
            "and make the object depend on it"
        )
        violations.append(
            Violation(
                "kueue-after-install",
                f"Kueue {resource.display} does not depend on the Kueue install, so it may be created "
                f"before Kueue's CRDs and webhooks are ready and be rejected or miss defaulting; {hint}",
                resource.urn,
            )
        )
    return violations


def parse_quantity(value: Any) -> float | None:
    """A Kubernetes quantity (``64``, ``"64"``, ``"1k"``) as a number; None when it is not one.

    Surrounding whitespace is dropped, as the API server's JSON decoding of a quantity drops it."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if not isinstance(value, str):
        return None
    try:
        return float(api_quantity(value.strip()))
    except QuantityError:
        return None


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


PLATFORM_COMPONENT = "tpu-platform:index:Platform"
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"


def cluster_scope(stack: Stack, resource: Resource) -> str:
    """The platform (one cluster) a resource belongs to: its nearest ``TpuPlatform`` ancestor's
    URN, or "" outside one. A fleet stack holds several clusters, whose queues and pools are
    checked each against their own."""
    for ancestor in stack.ancestors(resource):
        if ancestor.type == PLATFORM_COMPONENT:
            return ancestor.urn
    return ""


def _dispatched(stack: Stack, queue: Resource) -> bool:
    """A ClusterQueue with MultiKueue's check: its work runs on worker clusters, whose own
    queues hold it to their pools (Kueue v0.19.2 ``site/content/en/docs/concepts/multikueue.md``)."""
    checks = {
        name
        for check in stack
        if kueue_kind(check) == "AdmissionCheck"
        and check.get("spec", "controllerName") == MULTIKUEUE_CONTROLLER
        and isinstance(name := check.get("metadata", "name"), str)
    }
    listed = as_list(queue.get("spec", "admissionChecksStrategy", "admissionChecks"))
    return any(dig(entry, "name") in checks for entry in listed)


def _tpu_quotas(stack: Stack) -> tuple[Claims[tuple[str, str], Resource], list[Violation]]:
    """Nominal ``google.com/tpu`` quota per cluster and flavor name, from ClusterQueues and Cohorts.

    Added up as the stack's own capacity check adds its slices (``tpu_platform.quota``);
    here the owners are resources and the amounts chips, as a preview shows them.
    """
    quotas: Claims[tuple[str, str], Resource] = Claims()
    problems: list[Violation] = []
    for queue in stack:
        if kueue_kind(queue) not in ("ClusterQueue", "Cohort"):
            continue
        if kueue_kind(queue) == "ClusterQueue" and _dispatched(stack, queue):
            continue
        scope = cluster_scope(stack, queue)
        annotations = queue.get("metadata", "annotations") or {}
        if str(annotations.get(OVERCOMMIT_ANNOTATION, "")).lower() == "true":
            continue
        for group in as_list(queue.get("spec", "resourceGroups")):
            for flavor in as_list(dig(group, "flavors")):
                flavor_name = dig(flavor, "name")
                for res in as_list(dig(flavor, "resources")):
                    if dig(res, "name") != TPU_RESOURCE:
                        continue
                    raw = dig(res, "nominalQuota")
                    if is_unknown(raw) or is_unknown(flavor_name):
                        continue
                    amount = parse_quantity(raw)
                    if amount is None:
                        problems.append(
                            Violation(
                                "tpu-quota-within-capacity",
                                f"{queue.display}: nominalQuota {raw!r} of {TPU_RESOURCE} in flavor "
                                f"{flavor_name!r} is not a Kubernetes quantity such as 64",
                                queue.urn,
                            )
                        )
                        continue
                    quotas.add((scope, str(flavor_name)), queue, amount)
    return quotas, problems


def existing_chips(flavor: Resource) -> int | None:
    """The chips a kubeconfig-mode stack declares behind a flavor (``EXISTING_CHIPS_ANNOTATION``)."""
    value = (flavor.get("metadata", "annotations") or {}).get(EXISTING_CHIPS_ANNOTATION)
    return int(value) if isinstance(value, str) and re.fullmatch(r"[0-9]+", value) else None


def check_tpu_quota(stack: Stack, config: Config) -> list[Violation]:
    """Per flavor, the TPU quota Kueue may admit fits the chips of the node pools it selects.

    A pool's chips are chips per VM (from ``ct6e-standard-<N>t``) times its node count, or its
    autoscaling maximum. ``tpu-platform.dev/tpu-overcommit: "true"`` on a ClusterQueue or
    Cohort, or the flavor in ``overcommitFlavors``, declares an overcommit on purpose.
    """
    allowed = {str(name) for name in as_list(config.get("overcommitFlavors"))}
    quotas, violations = _tpu_quotas(stack)
    flavors = {
        (cluster_scope(stack, flavor), name): flavor
        for flavor in stack
        if kueue_kind(flavor) == "ResourceFlavor"
        and isinstance(name := flavor.get("metadata", "name"), str)
        and not is_unknown(name)
    }
    all_pools = [p for p in stack.of_type(NODE_POOL) if is_tpu_pool(p)]
    for key in sorted(quotas.flavors()):
        scope, flavor_name = key
        if flavor_name in allowed:
            continue
        pools = [p for p in all_pools if cluster_scope(stack, p) == scope]
        total = quotas.total(key)
        ordered = sorted(quotas.owners(key), key=lambda entry: str(entry[0].display))
        queues = ", ".join(f"{q.display} ({_number(amount)})" for q, amount in ordered)
        flavor = flavors.get(key)
        if flavor is None:
            violations.append(
                Violation(
                    "tpu-quota-within-capacity",
                    f"{queues} give flavor {flavor_name!r} a {TPU_RESOURCE} quota, but no ResourceFlavor "
                    f"{flavor_name!r} is declared in this stack, so the capacity behind it cannot be "
                    "checked; declare the ResourceFlavor with nodeLabels that select its node pools",
                    ordered[0][0].urn,
                )
            )
            continue
        selector = flavor.get("spec", "nodeLabels") or {}
        if any(is_unknown(v) for v in selector.values()):
            continue
        matched = [p for p in pools if all(pool_node_labels(p).get(k) == v for k, v in selector.items())]
        chips = [pool_chips(p) for p in matched]
        if any(c is None for c in chips):
            continue
        capacity = sum(c for c in chips if c is not None)
        names = ", ".join(sorted(str(pool_name(p)) for p in matched)) or "none"
        declared = existing_chips(flavor)
        if not matched and declared is not None:  # kubeconfig mode: the cluster's own pools
            capacity, names = declared, "the cluster's existing node pools, as the stack declares them"
        if total <= capacity:
            continue
        violations.append(
            Violation(
                "tpu-quota-within-capacity",
                f"flavor {flavor_name!r}: nominal {TPU_RESOURCE} quota {_number(total)} ({queues}) "
                f"exceeds the {capacity} chips of the TPU node pools it selects ({names}); Kueue would "
                "admit work that can never be scheduled. Lower nominalQuota, add slices, or declare the "
                f'overcommit: annotate the ClusterQueue {OVERCOMMIT_ANNOTATION}: "true" or list the '
                "flavor in this policy's overcommitFlavors",
                flavor.urn,
            )
        )
    return violations
