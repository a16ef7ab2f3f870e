"""Kueue's controller Configuration and the Helm values of the pinned Kueue and JobSet charts.

Field names follow ``apis/config/v1beta2`` of Kueue v0.19.2 and the two charts' values.yaml
at their release tags. Pure functions: the ``KueueInstall`` component passes the results to
``helm.v4.Chart`` unchanged.
"""

from __future__ import annotations

from typing import Any

import yaml

from ..config import PlatformConfig
from ..config.sizing import ControllerSize, controller_sizes, fleet_nodes
from ..constants import LABEL_NAMESPACE_NAME

KUEUE_VERSION = "0.19.2"
JOBSET_VERSION = "0.12.0"
KUEUE_CHART = "oci://registry.k8s.io/kueue/charts/kueue"
JOBSET_CHART = "oci://registry.k8s.io/jobset/charts/jobset"
KUEUE_IMAGE = "registry.k8s.io/kueue/kueue"
JOBSET_IMAGE = "registry.k8s.io/jobset/jobset"
KUEUE_RELEASE = "kueue"
JOBSET_RELEASE = "jobset"
CONFIG_API = "config.kueue.x-k8s.io/v1beta2"
LEADER_ELECTION_ID = "c1f6bfd2.kueue.x-k8s.io"

__all__ = ["ControllerSize", "controller_sizes", "fleet_nodes"]


def team_namespaces(cfg: PlatformConfig) -> list[str]:
    return sorted({ns for team in cfg.teams for ns in team.namespace_names()})


def kueue_configuration(cfg: PlatformConfig) -> dict[str, Any]:
    """The Kueue ``Configuration`` (``config.kueue.x-k8s.io/v1beta2``) built from the stack."""
    kueue = cfg.kueue
    doc: dict[str, Any] = {
        "apiVersion": CONFIG_API,
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {
            "bindAddress": ":8443",
            "enableClusterQueueResources": kueue.metrics.enable_cluster_queue_resources,
        },
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": LEADER_ELECTION_ID},
        "controller": {
            "groupKindConcurrency": {
                "Job.batch": 5,
                "Pod": 5,
                "Workload.kueue.x-k8s.io": 10,
                "LocalQueue.kueue.x-k8s.io": 5,
                "ClusterQueue.kueue.x-k8s.io": 5,
                "ResourceFlavor.kueue.x-k8s.io": 1,
            }
        },
        "clientConnection": {"qps": 300, "burst": 500},
        "manageJobsWithoutQueueName": kueue.manage_jobs_without_queue_name,
    }
    if kueue.manage_jobs_without_queue_name and cfg.teams:
        # Only the teams' namespaces: everything else (kube-system, the controllers) stays unmanaged.
        doc["managedJobsNamespaceSelector"] = {
            "matchExpressions": [
                {"key": LABEL_NAMESPACE_NAME, "operator": "In", "values": team_namespaces(cfg)}
            ]
        }
    wait = kueue.wait_for_pods_ready
    if wait.enabled:
        ready: dict[str, Any] = {"timeout": wait.timeout, "blockAdmission": wait.block_admission}
        if wait.recovery_timeout is not None:
            ready["recoveryTimeout"] = wait.recovery_timeout
        if wait.requeuing_strategy is not None:
            strategy = wait.requeuing_strategy
            requeue: dict[str, Any] = {"timestamp": strategy.timestamp}
            if strategy.backoff_limit_count is not None:
                requeue["backoffLimitCount"] = strategy.backoff_limit_count
            requeue["backoffBaseSeconds"] = strategy.backoff_base_seconds
            requeue["backoffMaxSeconds"] = strategy.backoff_max_seconds
            ready["requeuingStrategy"] = requeue
        doc["waitForPodsReady"] = ready
    doc["integrations"] = {"frameworks": kueue.frameworks()}
    if kueue.fair_sharing.enabled:
        # v1beta2 has no `enable`: the section's presence turns fair sharing on.
        doc["fairSharing"] = {"preemptionStrategies": list(kueue.fair_sharing.preemption_strategies)}
    doc["resources"] = {"quotaCheckStrategy": kueue.quota_check_strategy}
    return doc


def feature_gates(cfg: PlatformConfig) -> dict[str, bool]:
    gates = dict(cfg.kueue.feature_gates)
    if not cfg.kueue.wait_for_pods_ready.enabled:
        # Since 0.19 waitForPodsReady is on whenever the section is absent; only this gate turns it off.
        gates["DisableWaitForPodsReady"] = True
    return dict(sorted(gates.items()))


def render_configuration(cfg: PlatformConfig) -> str:
    return yaml.safe_dump(kueue_configuration(cfg), sort_keys=False, default_flow_style=False)


def kueue_chart(cfg: PlatformConfig) -> str:
    """The kueue chart's source: the stack's mirror or folder, else the upstream registry."""
    return cfg.kueue.controller.chart or KUEUE_CHART


def jobset_chart(cfg: PlatformConfig) -> str:
    return cfg.kueue.jobset.chart or JOBSET_CHART


def kueue_values(cfg: PlatformConfig) -> dict[str, Any]:
    """Values of the kueue chart 0.19.2."""
    size, _ = controller_sizes(cfg)
    return {
        # GKE's flowcontrol guardrail webhook rejects Kueue's FlowSchema (kueue#5374): keep it off.
        "enableVisibilityAPF": False,
        "enablePrometheus": cfg.kueue.metrics.service_monitor,
        "enableCertManager": False,
        "enableKueueViz": False,
        "controllerManager": {
            "replicas": size.replicas,
            "featureGates": [{"name": name, "enabled": on} for name, on in feature_gates(cfg).items()],
            "manager": {
                "image": {
                    "repository": KUEUE_IMAGE,
                    "tag": f"v{KUEUE_VERSION}",
                    "pullPolicy": "IfNotPresent",
                },
                "resources": size.resources(),
            },
            "podDisruptionBudget": {"enabled": size.replicas > 1, "minAvailable": 1},
        },
        "managerConfig": {"controllerManagerConfigYaml": render_configuration(cfg)},
    }


def jobset_values(cfg: PlatformConfig) -> dict[str, Any]:
    """Values of the jobset chart 0.12.0."""
    _, size = controller_sizes(cfg)
    return {
        "image": {"repository": JOBSET_IMAGE, "tag": f"v{JOBSET_VERSION}", "pullPolicy": "IfNotPresent"},
        "controller": {
            "replicas": size.replicas,
            "resources": size.resources(),
            "podDisruptionBudget": {"enabled": size.replicas > 1, "minAvailable": 1},
        },
        "prometheus": {"enable": False},
        "certManager": {"enable": False},
    }
