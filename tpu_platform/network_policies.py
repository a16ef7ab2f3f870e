"""Ingress NetworkPolicies for the platform's own namespaces: only what each controller serves.

A namespace with a policy that selects every pod for ``Ingress`` refuses any connection no policy
allows (https://kubernetes.io/docs/concepts/services-networking/network-policies/, "Default deny all
ingress traffic"); GKE's Dataplane V2 enforces NetworkPolicy on the clusters the platform creates
(https://cloud.google.com/kubernetes-engine/docs/concepts/dataplane-v2). Each namespace gets that
default deny and then, per port:

- the admission webhooks (Kueue and JobSet, 9443) and Kueue's visibility API (8082) from any source:
  the API server calls them from the control plane, whose address is not a pod and differs by
  cluster type (peered or Private Service Connect), and the VPC firewall rule
  (:mod:`components.webhook_firewall`) already decides who reaches the nodes;
- metrics (Kueue and JobSet 8443, the hotswap controller's port) from Managed Prometheus's collectors
  in ``gmp-system`` only;
- nothing for probes: traffic from the pod's own node (the kubelet) is always allowed (same page,
  "What you can't do with network policies", and its note on node traffic).

Egress stays open: the controllers need the API server, whose address a policy cannot name.
Ports: kueue v0.19.2 ``charts/kueue/values.yaml`` (webhook ``port: 9443``) and
``templates/visibility/service.yaml`` (``targetPort: 8082``), its Configuration's metrics
``bindAddress: :8443`` (:func:`tpu_platform.kueue.configuration.kueue_configuration`); jobset v0.12.0
``charts/jobset/templates/controller/deployment.yaml`` (9443 webhook, 8443 metrics).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .constants import GMP_NAMESPACE, JOBSET_NAMESPACE, KUEUE_NAMESPACE, LABEL_NAMESPACE_NAME, LABEL_PART_OF

JSON = dict[str, Any]
LABELS = {LABEL_PART_OF: "tpu-platform"}
WEBHOOK_PORT = 9443
VISIBILITY_PORT = 8082
CONTROLLER_METRICS_PORT = 8443


@dataclass(frozen=True)
class Served:
    """What one platform namespace accepts: ports open to any source and ports for the collectors."""

    namespace: str
    open_ports: tuple[int, ...]
    metrics_ports: tuple[int, ...]


def platform_namespaces(hotswap_namespace: str | None, hotswap_metrics_port: int) -> list[Served]:
    """Kueue's and JobSet's namespaces, and the controller's when it is installed."""
    served = [
        Served(KUEUE_NAMESPACE, (WEBHOOK_PORT, VISIBILITY_PORT), (CONTROLLER_METRICS_PORT,)),
        Served(JOBSET_NAMESPACE, (WEBHOOK_PORT,), (CONTROLLER_METRICS_PORT,)),
    ]
    if hotswap_namespace is not None:
        served.append(Served(hotswap_namespace, (), (hotswap_metrics_port,)))
    return served


def _ports(ports: tuple[int, ...]) -> list[JSON]:
    return [{"protocol": "TCP", "port": port} for port in ports]


def _policy(name: str, namespace: str, ingress: list[JSON] | None) -> JSON:
    """An Ingress policy over every pod of the namespace; ``ingress`` None: allow nothing."""
    spec: JSON = {"podSelector": {}, "policyTypes": ["Ingress"]}
    if ingress is not None:
        spec["ingress"] = ingress
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(LABELS)},
        "spec": spec,
    }


def policies(served: Served) -> list[JSON]:
    """The default deny, then one allow per kind of caller (none when it has no port)."""
    ns = served.namespace
    out = [_policy("tpu-platform-default-deny-ingress", ns, None)]
    if served.open_ports:
        out.append(_policy("tpu-platform-allow-webhooks", ns, [{"ports": _ports(served.open_ports)}]))
    if served.metrics_ports:
        collectors = {"namespaceSelector": {"matchLabels": {LABEL_NAMESPACE_NAME: GMP_NAMESPACE}}}
        ingress = [{"from": [collectors], "ports": _ports(served.metrics_ports)}]
        out.append(_policy("tpu-platform-allow-metrics", ns, ingress))
    return out
