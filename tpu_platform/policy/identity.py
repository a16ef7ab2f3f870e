"""Workload Identity end to end: a Kubernetes service account annotated to act as a Google service
account only gets a token when the cluster has a workload pool, the pod's node runs the GKE metadata
server, and the Google account lets that Kubernetes account use it
(https://cloud.google.com/kubernetes-engine/docs/how-to/workload-identity). Each missing piece fails
only at run time, as a 403 or a metadata-server timeout; for the hotswap controller that silently turns
Compute Engine corroboration off. The stack rule checks what the stack itself creates: an adopted
cluster (no cluster resource) or an unknown value is not judged.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml

from ..constants import LABEL_APP_NAME
from ..hotswap.iam import GSA_ANNOTATION, WORKLOAD_IDENTITY_USER
from .resources import Resource, Stack, Violation, as_list, is_unknown

KSA = "kubernetes:core/v1:ServiceAccount"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"
SA_MEMBERS = ("gcp:serviceaccount/iAMMember:IAMMember", "gcp:serviceaccount/iAMBinding:IAMBinding")
_MEMBER = re.compile(r"^serviceAccount:[^\[\]]+\.svc\.id\.goog\[([^/\]]+)/([^\]]+)\]$")


def _bound_ksas(stack: Stack) -> set[tuple[str, str]]:
    """(namespace, name) of every Kubernetes account the stack grants workloadIdentityUser."""
    out: set[tuple[str, str]] = set()
    for binding in stack.of_type(*SA_MEMBERS):
        if binding.get("role") != WORKLOAD_IDENTITY_USER:
            continue
        members = [binding.get("member"), *as_list(binding.get("members"))]
        for member in members:
            m = _MEMBER.match(member) if isinstance(member, str) else None
            if m:
                out.add((m.group(1), m.group(2)))
    return out


def _corroborating(stack: Stack, controller: str) -> Resource | None:
    """The controller's ConfigMap when its config turns compute_corroboration on."""
    for cm in stack.of_type(CONFIG_MAP):
        labels = cm.get("metadata", "labels")
        if not isinstance(labels, Mapping) or labels.get(LABEL_APP_NAME) != controller:
            continue
        text = cm.get("data", "config.yaml")
        if not isinstance(text, str):
            continue
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError:
            continue  # the ConfigMap's own validity is the controller's loader's business
        if isinstance(doc, Mapping) and doc.get("compute_corroboration") is True:
            return cm
    return None


def check_workload_identity(stack: Stack, config: Mapping[str, Any]) -> list[Violation]:
    """Annotated accounts have their binding, a workload pool and a GKE_METADATA pool; a controller
    with corroboration on has an annotated account."""
    rule = "workload-identity-complete"
    controller = str(config.get("controllerName") or "hotswap-controller")
    violations: list[Violation] = []
    annotated = [
        ksa
        for ksa in stack.of_type(KSA)
        if isinstance(ksa.get("metadata", "annotations"), Mapping)
        and GSA_ANNOTATION in ksa.get("metadata", "annotations")
    ]
    cm = _corroborating(stack, controller)
    if cm is not None and not any(ksa.get("metadata", "name") == controller for ksa in annotated):
        violations.append(
            Violation(
                rule,
                f"{cm.display} turns compute_corroboration on but the controller's ServiceAccount "
                f"{controller!r} has no {GSA_ANNOTATION} annotation: every Compute Engine read would be "
                "refused; set hotswap.computeCorroboration in the stack (it creates the account and "
                "annotation) instead of the setting",
                cm.urn,
            )
        )
    if not annotated or not any(r.type.startswith("gcp:") for r in stack):
        return violations  # no Google resource: its Google half is gcloud's (hotswap.googleIdentity)
    bound = _bound_ksas(stack)
    clusters = stack.of_type(CLUSTER)
    for ksa in annotated:
        ns, name = ksa.get("metadata", "namespace"), ksa.get("metadata", "name")
        if is_unknown(ns) or is_unknown(name) or (ns, name) in bound:
            continue
        violations.append(
            Violation(
                rule,
                f"{ksa.display} is annotated {GSA_ANNOTATION} but nothing grants {WORKLOAD_IDENTITY_USER} "
                f"to serviceAccount:PROJECT.svc.id.goog[{ns}/{name}] on that Google service account; add "
                "the binding (gcp.serviceaccount.IAMMember)",
                ksa.urn,
            )
        )
    for cluster in clusters:
        pool = cluster.get("workloadIdentityConfig", "workloadPool")
        if not pool and not is_unknown(pool):
            violations.append(
                Violation(
                    rule,
                    f"{cluster.display} has no workloadIdentityConfig.workloadPool, so annotated "
                    "ServiceAccounts get no Google token; set it to PROJECT.svc.id.goog",
                    cluster.urn,
                )
            )
    pools = stack.of_type(NODE_POOL)
    modes = [p.get("nodeConfig", "workloadMetadataConfig", "mode") for p in pools]
    if clusters and pools and not any(m == "GKE_METADATA" or is_unknown(m) for m in modes):
        violations.append(
            Violation(
                rule,
                "no node pool runs the GKE metadata server (nodeConfig.workloadMetadataConfig.mode "
                "GKE_METADATA), so annotated ServiceAccounts get no Google token; set it on the pool "
                "the workload runs on",
                pools[0].urn,
            )
        )
    return violations
