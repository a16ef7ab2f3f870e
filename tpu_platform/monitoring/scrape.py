"""Collecting Kueue's and JobSet's metrics with Google Managed Prometheus.

Both controllers serve ``/metrics`` only over HTTPS on container port ``metrics`` (8443) behind
controller-runtime's ``filters.WithAuthenticationAndAuthorization``: every scrape must bring a token
that a TokenReview accepts and a SubjectAccessReview allows ``get`` on the non-resource URL
``/metrics`` (kueue v0.19.2 ``cmd/kueue/main.go``, ``charts/kueue/templates/manager/manager.yaml``;
jobset v0.12.0 ``main.go``, ``charts/jobset/templates/controller/deployment.yaml``). The charts'
own switches (kueue ``enablePrometheus``, jobset ``prometheus.enable``) only add a prometheus-operator
ServiceMonitor, which GKE does not run, so they stay off and this module renders, per namespace:

- a ServiceAccount and its ``kubernetes.io/service-account-token`` Secret (the token the scrape sends),
- a ClusterRoleBinding of that account to a ClusterRole allowing ``get /metrics``,
- a Role reading only that Secret, bound to GMP's collector (``gmp-system/collector``): GMP reads
  scrape credentials from Secrets in the PodMonitoring's own namespace
  (GoogleCloudPlatform/prometheus-engine ``pkg/operator/apis/monitoring/v1/http_types.go``
  ``toPrometheusSecretRef``; the grant as in its ``e2e/authorization_test.go``),
- a PodMonitoring (``monitoring.googleapis.com/v1``) with ``scheme: https``, the token as
  ``authorization.credentials`` and ``tls.insecureSkipVerify`` (the controllers' serving certificates
  are self-signed by their internal cert management, for the Service's name rather than the pod IP
  that GMP scrapes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..constants import GMP_NAMESPACE, JOBSET_NAMESPACE, KUEUE_NAMESPACE, LABEL_APP_NAME, LABEL_PART_OF
from ..kueue.configuration import JOBSET_RELEASE, KUEUE_RELEASE

JSON = dict[str, Any]
SCRAPER = "tpu-platform-metrics-scraper"
TOKEN_SECRET = f"{SCRAPER}-token"
READER_CLUSTER_ROLE = "tpu-platform:metrics-reader"
GMP_COLLECTOR = "collector"
LABELS = {LABEL_PART_OF: "tpu-platform"}
INTERVAL = "30s"


@dataclass(frozen=True)
class Target:
    """A controller whose metrics are collected: its namespace and its pods' labels."""

    name: str
    namespace: str
    pod_labels: dict[str, str]


KUEUE = Target(
    "kueue",
    KUEUE_NAMESPACE,
    # kueue chart 0.19.2 ``kueue.selectorLabels`` (templates/_helpers.tpl)
    {
        LABEL_APP_NAME: "kueue",
        "app.kubernetes.io/instance": KUEUE_RELEASE,
        "control-plane": "controller-manager",
    },
)
JOBSET = Target(
    "jobset",
    JOBSET_NAMESPACE,
    # jobset chart 0.12.0 ``jobset.controller.selectorLabels`` (templates/controller/_helpers.tpl)
    {
        LABEL_APP_NAME: "jobset",
        "app.kubernetes.io/instance": JOBSET_RELEASE,
        "app.kubernetes.io/component": "controller",
    },
)


def metrics_reader_role() -> JSON:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": READER_CLUSTER_ROLE, "labels": dict(LABELS)},
        "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
    }


def scrape_objects(target: Target) -> dict[str, JSON]:
    """Every object that lets GMP scrape ``target`` (keyed by a short role name)."""
    ns = target.namespace
    meta = {"namespace": ns, "labels": dict(LABELS)}
    return {
        "account": {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": SCRAPER, **meta},
            "automountServiceAccountToken": False,
        },
        "token": {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/service-account-token",
            "metadata": {
                "name": TOKEN_SECRET,
                **meta,
                "annotations": {"kubernetes.io/service-account.name": SCRAPER},
            },
        },
        "reader-binding": {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{SCRAPER}-{target.name}", "labels": dict(LABELS)},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": READER_CLUSTER_ROLE,
            },
            "subjects": [{"kind": "ServiceAccount", "name": SCRAPER, "namespace": ns}],
        },
        "token-role": {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": f"{SCRAPER}-token-reader", **meta},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["secrets"],
                    "resourceNames": [TOKEN_SECRET],
                    "verbs": ["get", "list", "watch"],
                }
            ],
        },
        "token-binding": {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": f"{SCRAPER}-token-reader", **meta},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": f"{SCRAPER}-token-reader",
            },
            "subjects": [{"kind": "ServiceAccount", "name": GMP_COLLECTOR, "namespace": GMP_NAMESPACE}],
        },
        "podmonitoring": {
            "apiVersion": "monitoring.googleapis.com/v1",
            "kind": "PodMonitoring",
            "metadata": {"name": target.name, **meta},
            "spec": {
                "selector": {"matchLabels": dict(target.pod_labels)},
                "endpoints": [
                    {
                        "port": "metrics",
                        "scheme": "https",
                        "path": "/metrics",
                        "interval": INTERVAL,
                        "tls": {"insecureSkipVerify": True},
                        "authorization": {
                            "type": "Bearer",
                            "credentials": {"secret": {"name": TOKEN_SECRET, "key": "token"}},
                        },
                    }
                ],
            },
        },
    }
