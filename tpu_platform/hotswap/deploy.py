"""What the Pulumi component needs to run the controller, as plain data (no Pulumi import).

The component creates: a namespace, a ServiceAccount, a ClusterRole/ClusterRoleBinding with
:data:`CLUSTER_RULES`, a Role/RoleBinding in the controller's namespace with :data:`NAMESPACE_RULES`,
a ConfigMap with :func:`config_yaml` mounted at :data:`CONFIG_DIR`, and a Deployment running the image
with the ports, probes, env and security context below. Only when the settings turn on
``lease_stale_seconds``, also a Role/RoleBinding in :data:`NODE_LEASE_NAMESPACE` with
:data:`NODE_LEASE_RULES` (:func:`node_lease_role_rules`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from tpu_platform.hotswap.adapter.access import CLUSTER_ACCESS, LEADER_ACCESS, NODE_LEASE_ACCESS, Access
from tpu_platform.hotswap.adapter.config import (
    CONFIG_ENV,
    DEFAULT_CONFIG_PATH,
    DEFAULT_LEASE_NAMESPACE,
    RuntimeConfig,
)
from tpu_platform.hotswap.core import constants
from tpu_platform.hotswap.core.settings import Settings, settings_schema

__all__ = [
    "CLUSTER_RULES",
    "CONFIG_DIR",
    "CONFIG_ENV",
    "CONFIG_FILE",
    "CONFIG_PATH",
    "CONTAINER_ARGS",
    "DOWNWARD_API_ENV",
    "HEALTH_PORT",
    "LEASE_NAME",
    "LIVENESS_PATH",
    "METRICS_PATH",
    "METRICS_PORT",
    "NAMESPACE",
    "NAMESPACE_RULES",
    "NODE_LEASE_NAMESPACE",
    "NODE_LEASE_RULES",
    "OPT_IN_ANNOTATIONS",
    "OPT_IN_LABELS",
    "READINESS_PATH",
    "REPLICAS",
    "RESOURCES",
    "RUN_AS_USER",
    "SECURITY_CONTEXT",
    "PolicyRule",
    "cluster_role_rules",
    "config_document",
    "config_yaml",
    "default_config",
    "node_lease_role_rules",
    "role_rules",
    "settings_schema",
]

_RUNTIME = RuntimeConfig()

NAMESPACE: Final = DEFAULT_LEASE_NAMESPACE
METRICS_PORT: Final = _RUNTIME.metrics_port
HEALTH_PORT: Final = _RUNTIME.health_port
METRICS_PATH: Final = "/metrics"
LIVENESS_PATH: Final = "/healthz"
READINESS_PATH: Final = "/readyz"
CONFIG_PATH: Final = DEFAULT_CONFIG_PATH
CONFIG_DIR: Final = CONFIG_PATH.rsplit("/", 1)[0]
CONFIG_FILE: Final = CONFIG_PATH.rsplit("/", 1)[1]
LEASE_NAME: Final = _RUNTIME.lease_name
RUN_AS_USER: Final = 65532
"""Must match ``USER`` in tpu_platform/hotswap/Dockerfile."""
REPLICAS: Final = 2
"""Two replicas: a standby takes over within the 15 s lease if the leader's node dies."""
CONTAINER_ARGS: Final[tuple[str, ...]] = ()
"""The image runs ``python -m tpu_platform.hotswap``, which reads $HOTSWAP_CONFIG (default CONFIG_PATH)."""
DOWNWARD_API_ENV: Final = (("POD_NAME", "metadata.name"), ("POD_NAMESPACE", "metadata.namespace"))
"""Leader-election identity and the Lease's namespace."""
RESOURCES: Final = {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"memory": "1Gi"}}
"""Sized for ~4,096 nodes and their pods in the watch caches."""
SECURITY_CONTEXT: Final = {
    "runAsNonRoot": True,
    "runAsUser": RUN_AS_USER,
    "runAsGroup": RUN_AS_USER,
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}
OPT_IN_LABELS: Final = {constants.OPT_IN_LABEL: constants.OPT_IN_VALUE}
"""Labels a JobSet needs (on the JobSet object) to be managed."""
OPT_IN_ANNOTATIONS: Final = {constants.EXCLUSIVE_TOPOLOGY_ANNOTATION: constants.NODEPOOL_LABEL}
"""Annotations a JobSet needs to be managed."""


@dataclass(frozen=True, slots=True)
class PolicyRule:
    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]

    def to_k8s(self) -> dict[str, list[str]]:
        return {
            "apiGroups": list(self.api_groups),
            "resources": list(self.resources),
            "verbs": list(self.verbs),
        }


def _rules(table: tuple[Access, ...]) -> tuple[PolicyRule, ...]:
    return tuple(PolicyRule((a.group,), (a.resource,), a.verbs) for a in table)


CLUSTER_RULES: Final = _rules(CLUSTER_ACCESS)
"""ClusterRole: exactly the calls the adapter makes (:mod:`tpu_platform.hotswap.adapter.access`).
Nothing on secrets, no wildcards, no reads it never makes."""

NAMESPACE_RULES: Final = _rules(LEADER_ACCESS)
"""Role in the controller's own namespace: leader election only."""


NODE_LEASE_NAMESPACE: Final = constants.NODE_LEASE_NAMESPACE
NODE_LEASE_RULES: Final = _rules(NODE_LEASE_ACCESS)
"""Role in kube-node-lease, only with ``lease_stale_seconds`` on: list and watch the kubelets'
heartbeats. Read-only and namespaced."""


def cluster_role_rules() -> list[dict[str, list[str]]]:
    return [r.to_k8s() for r in CLUSTER_RULES]


def role_rules() -> list[dict[str, list[str]]]:
    return [r.to_k8s() for r in NAMESPACE_RULES]


def node_lease_role_rules(settings: Settings) -> list[dict[str, list[str]]]:
    """The kube-node-lease Role's rules for these settings; empty when the lease signal is off, so no
    access to node Leases is granted unless it is used."""
    if settings.lease_stale_seconds <= 0:
        return []
    return [r.to_k8s() for r in NODE_LEASE_RULES]


def config_document(settings: Settings | None = None, runtime: RuntimeConfig | None = None) -> dict[str, Any]:
    """The config file's document: the decision settings at the top level, the process options under
    ``runtime`` (optional runtime fields left out while unset, ``RuntimeConfig.rendered``). Both come
    validated; missing ones are the defaults."""
    settings = settings if settings is not None else Settings()
    runtime = runtime if runtime is not None else RuntimeConfig()
    return {**settings.to_dict(), "runtime": runtime.rendered()}


def default_config() -> dict[str, Any]:
    """The full config document with every default."""
    return config_document()


def config_yaml(settings: Settings | None = None, runtime: RuntimeConfig | None = None) -> str:
    """The ConfigMap's ``config.yaml``."""
    import yaml

    return yaml.safe_dump(config_document(settings, runtime), sort_keys=False)
