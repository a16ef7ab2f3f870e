"""The platform's invariants as pure functions over plain resources.

Resource rules look at one resource (``Resource`` -> messages); stack rules need the whole
stack (``Stack`` -> ``Violation``s) because they follow dependencies, parents, or add up
quotas across resources. Nothing here imports Pulumi: the same functions run inside the
policy pack on a real preview and offline over a rendered plan.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..constants import LABEL_APP_NAME
from . import iam_rules
from .identity import check_workload_identity
from .kueue_rules import KNOWN_INSTALLS, check_kueue_after_install, check_tpu_quota, install_identity
from .pools import is_tpu_pool, pool_name
from .resources import Config, Resource, Stack, Violation, as_list, dig, is_unknown, urn_types

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
RBAC_PREFIX = "kubernetes:rbac.authorization.k8s.io/v1:"
CLUSTER_ROLE = RBAC_PREFIX + "ClusterRole"
ROLE = RBAC_PREFIX + "Role"
BINDINGS = (RBAC_PREFIX + "ClusterRoleBinding", RBAC_PREFIX + "RoleBinding")
NAME_LABEL = LABEL_APP_NAME
DEFAULT_CONTROLLER_NAME = "hotswap-controller"
DEFAULT_THIRD_PARTY_CHARTS = ("kueue", "jobset")
# A memory limit keeps a leaking controller from starving the node; no CPU limit by default,
# so recovery bursts are not throttled (add "cpu" through requiredLimits to demand one).
DEFAULT_REQUIRED_LIMITS = ("memory",)


# --- TPU node pools -----------------------------------------------------------------------


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
    Rule(
        iam_rules.NAME,
        "A project, folder or organization grant of compute.instances.reset (a custom role listing it, "
        "or a predefined role that includes it) carries an IAM condition that requires a Resource "
        "Manager tag (resource.matchTagId or resource.matchTag, joined to anything else only by &&), "
        "so it reaches only the VMs that carry the tag.",
        stack_check=iam_rules.check_reset_scoped_by_tag,
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
