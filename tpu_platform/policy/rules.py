"""The platform's invariants as pure functions over plain resources.

Resource rules look at one resource (``Resource`` -> messages); stack rules need the whole
stack (``Stack`` -> ``Violation``s) because they follow dependencies, parents, or add up
quotas across resources. Nothing here imports Pulumi: the same functions run inside the
policy pack on a real preview and offline over a rendered plan.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..constants import (
    EXISTING_CHIPS_ANNOTATION,
    LABEL_ACCELERATOR,
    LABEL_APP_NAME,
    LABEL_INSTANCE_TYPE,
    LABEL_NODEPOOL,
    LABEL_SPOT,
    LABEL_TOPOLOGY,
    OVERCOMMIT_ANNOTATION,
    TPU_RESOURCE,
)
from ..queueplan import Claims
from .identity import check_workload_identity
from .pools import NODE_POOL, TPU_MACHINE_RE, is_tpu_pool, pool_name, tpu_chips_per_node
from .resources import Resource, Stack, Violation, as_list, dig, is_unknown, urn_types

KUEUE_TYPE_PREFIX = "kubernetes:kueue.x-k8s.io/"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
RBAC_PREFIX = "kubernetes:rbac.authorization.k8s.io/v1:"
CLUSTER_ROLE = RBAC_PREFIX + "ClusterRole"
ROLE = RBAC_PREFIX + "Role"
BINDINGS = (RBAC_PREFIX + "ClusterRoleBinding", RBAC_PREFIX + "RoleBinding")
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

NAME_LABEL = LABEL_APP_NAME
DEFAULT_CONTROLLER_NAME = "hotswap-controller"
DEFAULT_THIRD_PARTY_CHARTS = ("kueue", "jobset")
# A memory limit keeps a leaking controller from starving the node; no CPU limit by default,
# so recovery bursts are not throttled (add "cpu" through requiredLimits to demand one).
DEFAULT_REQUIRED_LIMITS = ("memory",)


ACCELERATOR_BY_FAMILY = {
    "ct6e": "tpu-v6e-slice",
    "ct5lp": "tpu-v5-lite-podslice",
    "ct5p": "tpu-v5p-slice",
    "ct4p": "tpu-v4-podslice",
}
# Single-host v6e VMs: the topology GKE labels the node with, from the chips on it.
V6E_SINGLE_HOST_TOPOLOGY = {1: "1x1", 4: "2x2", 8: "2x4"}

Config = Mapping[str, Any]


# --- TPU node pools -----------------------------------------------------------------------


def pool_max_nodes(pool: Resource) -> int | None:
    """The most nodes the pool can have: fixed size, or the autoscaling ceiling; None if unknown."""
    zones = max(1, len(as_list(pool.get("nodeLocations"))))
    autoscaling = pool.get("autoscaling")
    candidates: list[tuple[Any, int]]
    if isinstance(autoscaling, Mapping):
        candidates = [
            (autoscaling.get("totalMaxNodeCount"), 1),
            (autoscaling.get("maxNodeCount"), zones),
        ]
    else:
        candidates = [(pool.get("nodeCount"), zones), (pool.get("initialNodeCount"), zones)]
    for value, multiplier in candidates:
        if value is None:
            continue
        if is_unknown(value) or not isinstance(value, int | float):
            return None
        return int(value) * multiplier
    return 0


def pool_chips(pool: Resource) -> int | None:
    per_node = tpu_chips_per_node(pool)
    nodes = pool_max_nodes(pool)
    if per_node is None or nodes is None:
        return None
    return per_node * nodes


def pool_node_labels(pool: Resource) -> dict[str, str]:
    """The labels every node of the pool carries: its own plus the ones GKE adds to TPU nodes."""
    labels = {str(k): v for k, v in (pool.get("nodeConfig", "labels") or {}).items()}
    labels[LABEL_NODEPOOL] = pool_name(pool)
    machine = pool.get("nodeConfig", "machineType")
    if isinstance(machine, str):
        labels[LABEL_INSTANCE_TYPE] = machine
    match = TPU_MACHINE_RE.match(machine) if isinstance(machine, str) else None
    if match and match.group(1) in ACCELERATOR_BY_FAMILY:
        labels[LABEL_ACCELERATOR] = ACCELERATOR_BY_FAMILY[match.group(1)]
    topology = pool.get("placementPolicy", "tpuTopology")
    if topology is None and match and match.group(1) == "ct6e":
        topology = V6E_SINGLE_HOST_TOPOLOGY.get(int(match.group(2)))
    if topology is not None:
        labels[LABEL_TOPOLOGY] = topology
    if pool.get("nodeConfig", "spot") is True:
        labels[LABEL_SPOT] = "true"
    return labels


def check_tpu_pool_auto_repair(pool: Resource, config: Config) -> list[str]:
    """GKE repairs a broken multi-host slice only through auto-repair; flex-start cannot use it."""
    if not is_tpu_pool(pool):
        return []
    flex_start = pool.get("nodeConfig", "flexStart")
    auto_repair = pool.get("management", "autoRepair")
    if flex_start is True or auto_repair is True or is_unknown(flex_start) or is_unknown(auto_repair):
        return []
    state = "off" if auto_repair is False else "not set"
    return [
        f"TPU node pool {pool_name(pool)!r} has auto-repair {state}: a failed TPU VM would stay "
        "broken and hold its whole slice. Set management.autoRepair=true (only flex-start pools, "
        "nodeConfig.flexStart=true, run without it)"
    ]


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


_QUANTITY_RE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([a-zA-Z]*)$")
_SUFFIXES = {
    "": 1.0,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
}


def parse_quantity(value: Any) -> float | None:
    """A Kubernetes quantity (``64``, ``"64"``, ``"1k"``) as a number; None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        match = _QUANTITY_RE.match(value.strip())
        if match and match.group(2) in _SUFFIXES:
            return float(match.group(1)) * _SUFFIXES[match.group(2)]
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

    Added up as the stack's own capacity check adds its slices (``tpu_platform.queueplan``);
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
    return int(value) if isinstance(value, str) and value.isdigit() else None


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


# --- The hotswap controller's pod ---------------------------------------------------------


def controller_name(config: Config) -> str:
    return str(config.get("controllerName") or DEFAULT_CONTROLLER_NAME)


def is_controller(resource: Resource, config: Config) -> bool:
    """Labelled ``app.kubernetes.io/name: <controllerName>``, or created by a hotswap component.

    The URN's type chain names every ancestor component, so a Deployment inside a
    ``tpu-platform:hotswap:*`` component is checked even if its labels change.
    """
    if resource.type != DEPLOYMENT:
        return False
    name = controller_name(config)
    labelled = any(
        dig(labels, NAME_LABEL) == name
        for labels in (
            resource.get("metadata", "labels"),
            resource.get("spec", "template", "metadata", "labels"),
        )
    )
    return labelled or any("hotswap" in token.lower() for token in urn_types(resource.urn)[:-1])


def _container_problems(
    where: str,
    container: Mapping[str, Any],
    pod_security: Mapping[str, Any],
    init: bool,
    required_limits: list[str],
) -> list[str]:
    problems: list[str] = []
    sc = container.get("securityContext") or {}

    def setting(key: str) -> Any:
        return sc.get(key, pod_security.get(key))

    if setting("runAsNonRoot") is not True:
        problems.append(f"{where}: runAsNonRoot must be true (pod or container securityContext)")
    profile = dig(sc, "seccompProfile", "type") or dig(pod_security, "seccompProfile", "type")
    if profile != "RuntimeDefault":
        problems.append(
            f"{where}: seccompProfile.type must be RuntimeDefault (pod or container), not {profile}"
        )
    if sc.get("readOnlyRootFilesystem") is not True:
        problems.append(f"{where}: securityContext.readOnlyRootFilesystem must be true")
    if sc.get("allowPrivilegeEscalation") is not False:
        problems.append(f"{where}: securityContext.allowPrivilegeEscalation must be false")
    if sc.get("privileged") is True:
        problems.append(f"{where}: securityContext.privileged must not be true")
    drop = [str(c).upper() for c in as_list(dig(sc, "capabilities", "drop"))]
    if "ALL" not in drop:
        problems.append(f"{where}: securityContext.capabilities.drop must include ALL")
    if as_list(dig(sc, "capabilities", "add")):
        problems.append(f"{where}: securityContext.capabilities.add must be empty")
    limits = dig(container, "resources", "limits") or {}
    missing = [key for key in required_limits if key not in limits]
    if missing:
        problems.append(f"{where}: resources.limits must set {' and '.join(missing)}")
    if not init:
        for probe in ("livenessProbe", "readinessProbe"):
            if not container.get(probe):
                problems.append(f"{where}: {probe} must be set")
    return problems


def check_controller_hardened(resource: Resource, config: Config) -> list[str]:
    """The hotswap controller can delete pods and patch nodes: its pod must be locked down."""
    if not is_controller(resource, config):
        return []
    pod = resource.get("spec", "template", "spec")
    if not isinstance(pod, Mapping):
        return [f"{controller_name(config)} {resource.display} has no pod template to check"]
    pod_security = pod.get("securityContext") or {}
    limits = [str(key) for key in as_list(config.get("requiredLimits", list(DEFAULT_REQUIRED_LIMITS)))]
    problems: list[str] = []
    for flag in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(flag) is True:
            problems.append(f"spec.template.spec.{flag} must not be true")
    containers = as_list(pod.get("containers"))
    if not containers:
        problems.append("spec.template.spec.containers is empty")
    for key, init in (("containers", False), ("initContainers", True)):
        for index, container in enumerate(as_list(pod.get(key))):
            if not isinstance(container, Mapping):
                continue
            where = f"{key}[{index}] {container.get('name', '')!r}"
            problems.extend(_container_problems(where, container, pod_security, init, limits))
    return [f"hotswap controller {resource.display} is not hardened: {p}" for p in problems]


# --- RBAC -----------------------------------------------------------------------------------


def check_cluster_admin(resource: Resource, config: Config) -> list[str]:
    """Nothing in the platform needs cluster-admin, nor a role that grants everything."""
    if resource.type in BINDINGS:
        ref_kind = resource.get("roleRef", "kind")
        ref_name = resource.get("roleRef", "name")
        if ref_kind == "ClusterRole" and ref_name == "cluster-admin":
            return [
                f"{resource.display} binds ClusterRole cluster-admin; grant the least privilege the "
                "subject needs with its own Role or ClusterRole instead"
            ]
        return []
    if resource.type in (CLUSTER_ROLE, ROLE):
        for index, rule in enumerate(as_list(resource.get("rules"))):
            if all("*" in as_list(dig(rule, key)) for key in ("apiGroups", "resources", "verbs")):
                return [
                    f"{resource.display} rules[{index}] grants every verb on every resource "
                    "(cluster-admin in all but name); list the resources and verbs it needs"
                ]
    return []


READ_VERBS = frozenset({"get", "list", "watch"})


def _grants_secrets(rule: Any) -> bool:
    """Access to Secrets, except reading named ones: Managed Prometheus' collector reads the one
    scrape token of a namespace through a Role limited by ``resourceNames`` (as prometheus-engine's
    own ``e2e/authorization_test.go`` grants it)."""
    resources = [str(r) for r in as_list(dig(rule, "resources"))]
    groups = as_list(dig(rule, "apiGroups")) or [""]
    core = "" in groups or "*" in groups
    if not core or not any(r in {"*", "secrets"} or r.startswith("secrets/") for r in resources):
        return False
    names = [str(n) for n in as_list(dig(rule, "resourceNames"))]
    verbs = {str(v) for v in as_list(dig(rule, "verbs"))}
    named_read = resources == ["secrets"] and bool(names) and "*" not in names and verbs <= READ_VERBS
    return not named_read


def _third_party(stack: Stack, resource: Resource, charts: list[str]) -> bool:
    """Part of an upstream install (its own RBAC, reviewed by pinning the chart version)."""
    known = tuple(dict.fromkeys([*charts, *KNOWN_INSTALLS]))
    return any(install_identity(a, known) in charts for a in stack.ancestors(resource))


def check_rbac_secrets(stack: Stack, config: Config) -> list[Violation]:
    """The platform's own roles never read or write Secrets (the controller needs none)."""
    charts = [
        str(c).lower() for c in as_list(config.get("thirdPartyCharts", list(DEFAULT_THIRD_PARTY_CHARTS)))
    ]
    violations: list[Violation] = []
    for role in stack.of_type(CLUSTER_ROLE, ROLE):
        if _third_party(stack, role, charts):
            continue
        for index, rule in enumerate(as_list(role.get("rules"))):
            if _grants_secrets(rule):
                verbs = ", ".join(str(v) for v in as_list(dig(rule, "verbs"))) or "no verbs"
                violations.append(
                    Violation(
                        "no-rbac-secrets",
                        f"{role.display} rules[{index}] grants {verbs} on secrets; the platform's "
                        "components need no Secret access: remove secrets (and '*') from its resources",
                        role.urn,
                    )
                )
    return violations


# --- The catalogue --------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """One policy: its name, why it exists, its check and the config it accepts."""

    name: str
    description: str
    resource_check: Callable[[Resource, Config], list[str]] | None = None
    stack_check: Callable[[Stack, Config], list[Violation]] | None = None
    config_properties: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


RULES: tuple[Rule, ...] = (
    Rule(
        "kueue-after-install",
        "Every Kueue custom resource depends on the Kueue install, so it is created once Kueue's "
        "CRDs and webhooks serve.",
        stack_check=check_kueue_after_install,
    ),
    Rule(
        "tpu-quota-within-capacity",
        "Per ResourceFlavor, ClusterQueue nominal google.com/tpu quotas add up to no more than the "
        "chips of the TPU node pools the flavor selects, unless an overcommit is declared.",
        stack_check=check_tpu_quota,
        config_properties={
            "overcommitFlavors": {
                "type": "array",
                "items": {"type": "string"},
                "default": [],
                "description": "ResourceFlavors whose TPU quota may exceed their node pools' chips.",
            }
        },
    ),
    Rule(
        "tpu-pool-auto-repair",
        "TPU node pools keep GKE auto-repair on; only flex-start pools run without it.",
        resource_check=check_tpu_pool_auto_repair,
    ),
    Rule(
        "hotswap-controller-hardened",
        "The hotswap controller's pod runs as non-root with a read-only root filesystem, no "
        "privilege escalation, all capabilities dropped, RuntimeDefault seccomp, resource limits "
        "and probes.",
        resource_check=check_controller_hardened,
        config_properties={
            "controllerName": {
                "type": "string",
                "default": DEFAULT_CONTROLLER_NAME,
                "description": "Value of the app.kubernetes.io/name label that marks the controller.",
            },
            "requiredLimits": {
                "type": "array",
                "items": {"type": "string"},
                "default": list(DEFAULT_REQUIRED_LIMITS),
                "description": "Resources every container must set in resources.limits.",
            },
        },
    ),
    Rule(
        "no-cluster-admin",
        "No RoleBinding or ClusterRoleBinding to cluster-admin, and no role granting every verb on "
        "every resource.",
        resource_check=check_cluster_admin,
    ),
    Rule(
        "workload-identity-complete",
        "A ServiceAccount annotated iam.gke.io/gcp-service-account has its workloadIdentityUser "
        "binding, the cluster a workload pool and some node pool the GKE metadata server; the hotswap "
        "controller with compute_corroboration on has such an account.",
        stack_check=check_workload_identity,
        config_properties={
            "controllerName": {
                "type": "string",
                "default": DEFAULT_CONTROLLER_NAME,
                "description": "Value of the app.kubernetes.io/name label that marks the controller.",
            },
        },
    ),
    Rule(
        "no-rbac-secrets",
        "No Role or ClusterRole of the platform grants access to Secrets beyond reading named ones "
        "(upstream installs listed in thirdPartyCharts keep their own RBAC).",
        stack_check=check_rbac_secrets,
        config_properties={
            "thirdPartyCharts": {
                "type": "array",
                "items": {"type": "string"},
                "default": list(DEFAULT_THIRD_PARTY_CHARTS),
                "description": "Helm installs (by name or chart) whose own roles are exempt.",
            }
        },
    ),
)


def rule_config(rule: Rule, config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The rule's settings: schema defaults, overridden by ``config[rule.name]``."""
    merged = {key: prop.get("default") for key, prop in rule.config_properties.items()}
    merged.update((config or {}).get(rule.name) or {})
    return merged


def evaluate(resources: Stack | list[Resource], config: Mapping[str, Any] | None = None) -> list[Violation]:
    """Run every rule over a whole stack, as the policy pack would on a preview."""
    stack = resources if isinstance(resources, Stack) else Stack(resources)
    violations: list[Violation] = []
    for rule in RULES:
        settings = rule_config(rule, config)
        if rule.resource_check is not None:
            for resource in stack:
                violations.extend(
                    Violation(rule.name, message, resource.urn)
                    for message in rule.resource_check(resource, settings)
                )
        if rule.stack_check is not None:
            violations.extend(rule.stack_check(stack, settings))
    return violations
