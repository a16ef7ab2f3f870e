"""What the platform needs from a Kueue or JobSet it uses instead of installing its own.

Read from the install's own CRDs, not from a table of versions: every object the stack creates in
``kueue.x-k8s.io`` (``tpu_platform.kueue.objects``) must be of a version the CRD serves, with every
field and enum value in that version's schema (a field the schema lacks is pruned by the API server
without an error), and the JobSet fields the platform reads (:data:`JOBSET_READS`) likewise. What a
CRD cannot tell is a version floor: the pod label JobSet writes that the hotswap controller follows.
Kueue's Configuration must manage the stack's frameworks; its other settings stay the cluster's, and
each one that differs from the stack is listed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..config import PlatformConfig
from ..hotswap.core.constants import JOBSET_UID_LABEL
from .configuration import kueue_configuration
from .found import JOBSET, KUEUE, FoundInstall, Version
from .objects import priority_objects, queue_objects
from .provisioning import provisioning_objects

JSON = dict[str, Any]

JOBSET_READS: JSON = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2",
    "kind": "JobSet",
    "spec": {
        "suspend": False,
        "replicatedJobs": [
            {"name": "slice", "replicas": 1, "template": {"spec": {"template": {"spec": {}}}}}
        ],
        "failurePolicy": {
            "maxRestarts": 0,
            "restartStrategy": "Recreate",
            "rules": [
                {"action": "RestartJobSetAndIgnoreMaxRestarts", "onJobFailureReasons": ["PodFailurePolicy"]}
            ],
        },
    },
    "status": {"restarts": 0, "restartsCountTowardsMax": 0, "terminalState": "Completed"},
}
"""The JobSet fields the hotswap controller and the linter read (``hotswap/adapter/convert.py``
``_jobset``, the failure-policy and replica checks; ``lint/jobset.py``)."""
WORKLOAD_READS: JSON = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "Workload",
    "metadata": {"name": "priority"},
    "spec": {"priorityClassRef": {"name": "x"}},
}
"""What the priority entitlement policy reads of a Workload (``kueue/entitlements.py``)."""
QUOTA_CHECK_SINCE = Version(0, 19, 0)
"""``resources.quotaCheckStrategy: IgnoreUndeclared`` takes effect only with the QuotaCheckStrategy
gate, Alpha (off) in 0.18 and Beta (on) from 0.19 (kueue v0.19.2 ``pkg/features/kube_features.go``;
``pkg/scheduler/flavorassigner``, ``IgnoreUndeclaredResources``). Before it, a pod requesting any
resource its ClusterQueue does not cover is never admitted (kueue v0.17.1
``flavorassigner.findFlavorForPodSets``: "resource %s unavailable in ClusterQueue"), and the
platform's ClusterQueues cover google.com/tpu alone."""
JOBSET_UID_SINCE = Version(0, 9, 0)
"""JobSet writes ``jobset.sigs.k8s.io/jobset-uid`` on its pods from v0.9.0 on (``JobSetUIDKey`` in
``api/jobset/v1alpha2/jobset_types.go``: absent at v0.8.0, present at v0.9.0); the hotswap
controller needs it to tell a JobSet's pods from a namesake's."""


@dataclass(frozen=True)
class Fit:
    """Why an install cannot serve the stack (``gaps``), and what it serves differently (``notes``)."""

    gaps: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def schema_gaps(value: Any, schema: Any, path: str = "") -> list[str]:
    """Fields of ``value`` the structural ``schema`` does not know, and values outside its enums."""
    if not isinstance(schema, dict):
        return []
    if schema.get("x-kubernetes-preserve-unknown-fields") and "properties" not in schema:
        return []
    if isinstance(value, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        if props is None and extra is None:
            return []  # an object the schema leaves open (``metadata`` in every CRD)
        out = []
        for key, item in value.items():
            where = f"{path}.{key}" if path else key
            if props is not None and key in props:
                out += schema_gaps(item, props[key], where)
            elif isinstance(extra, dict):
                out += schema_gaps(item, extra, where)
            elif extra is not True:
                out.append(f"field {where}")
        return out
    if isinstance(value, list):
        return [gap for item in value for gap in schema_gaps(item, schema.get("items"), f"{path}[]")]
    enum = schema.get("enum")
    if enum is not None and value not in enum:
        return [f"{path}: {value!r} (it takes {', '.join(map(str, enum))})"]
    return []


def object_gaps(found: FoundInstall, objects: Iterable[JSON]) -> list[str]:
    """Each object checked against the found CRD of its kind, at its version."""
    by_kind = {crd.kind: crd for crd in found.crds}
    gaps: dict[str, None] = {}
    for obj in objects:
        kind = str(obj.get("kind"))
        version = str(obj.get("apiVersion", "")).rsplit("/", 1)[-1]
        crd = by_kind.get(kind)
        if crd is None:
            gaps[f"{kind}: no CRD on the cluster"] = None
            continue
        if version not in crd.served:
            gaps[
                f"{kind}: {crd.name} does not serve {version} (serves {', '.join(crd.served) or 'nothing'})"
            ] = None
            continue
        body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
        for gap in schema_gaps(body, crd.schemas[version]):
            gaps[f"{kind} {version}: {gap} unknown to {crd.name}"] = None
    return list(gaps)


def kueue_objects(cfg: PlatformConfig) -> list[JSON]:
    """The stack's objects in ``kueue.x-k8s.io``, and what it reads of Workloads."""
    rendered = [
        *queue_objects(cfg).all(),
        *(wpc for _, wpc in priority_objects(cfg)),
        *provisioning_objects(cfg),
        WORKLOAD_READS,
    ]
    return [o for o in rendered if str(o.get("apiVersion", "")).startswith(f"{KUEUE.group}/")]


def _text(value: Any) -> str:
    return "unset" if value is None else json.dumps(value, sort_keys=True, separators=(",", ":"))


CONFIGURATION_KEYS = ("fairSharing", "waitForPodsReady", "manageJobsWithoutQueueName")


def quota_check_gap(found: FoundInstall, conf: JSON, cfg: PlatformConfig) -> str | None:
    """The stack's ``IgnoreUndeclared`` needs the gate and the Configuration's field."""
    if cfg.kueue.quota_check_strategy != "IgnoreUndeclared":
        return None
    version, controller = found.version, found.controller
    default_on = version is None or version >= QUOTA_CHECK_SINCE
    gate = controller.gate("QuotaCheckStrategy", default_on) if controller is not None else default_on
    if not gate:
        since = f"on by default from {QUOTA_CHECK_SINCE}"
        return (
            f"Kueue {version or '(unknown version)'} does not run QuotaCheckStrategy ({since}), so its "
            "ClusterQueues would never admit a pod that also requests cpu or memory (the stack's "
            "ClusterQueues cover google.com/tpu alone; kueue.quotaCheckStrategy: IgnoreUndeclared)"
        )
    strategy = (conf.get("resources") or {}).get("quotaCheckStrategy")
    if strategy != "IgnoreUndeclared":
        return (
            f"its Configuration has resources.quotaCheckStrategy {strategy or 'unset (BlockUndeclared)'}, "
            "the stack's kueue.quotaCheckStrategy is IgnoreUndeclared: pods that also request cpu or "
            "memory would never be admitted"
        )
    return None


def kueue_fit(found: FoundInstall, cfg: PlatformConfig) -> Fit:
    gaps = object_gaps(found, kueue_objects(cfg))
    notes = []
    conf = found.configuration
    if conf is None:
        notes.append(
            "its Configuration could not be read: check that integrations.frameworks holds "
            + ", ".join(cfg.kueue.frameworks())
        )
    else:
        frameworks = ((conf.get("integrations") or {}).get("frameworks")) or []
        missing = [f for f in cfg.kueue.frameworks() if f not in frameworks]
        if missing:
            gaps.append(f"its Configuration does not manage {', '.join(missing)} (integrations.frameworks)")
        quota = quota_check_gap(found, conf, cfg)
        if quota is not None:
            gaps.append(quota)
        stack = kueue_configuration(cfg)
        for key in CONFIGURATION_KEYS:
            if conf.get(key) != stack.get(key) and not (conf.get(key) is None and stack.get(key) is False):
                notes.append(
                    f"kueue {key}: the cluster's {_text(conf.get(key))}, the stack's {_text(stack.get(key))}"
                )
    if cfg.kueue.feature_gates:
        notes.append(f"kueue featureGates {_text(dict(cfg.kueue.feature_gates))} are not applied")
    return Fit(tuple(gaps), tuple(notes))


def jobset_fit(found: FoundInstall, cfg: PlatformConfig) -> Fit:
    gaps = object_gaps(found, [JOBSET_READS])
    notes = []
    version = found.version
    if cfg.hotswap.enabled and version is not None and version < JOBSET_UID_SINCE:
        gaps.append(
            f"JobSet {version} does not label its pods {JOBSET_UID_LABEL} (from {JOBSET_UID_SINCE} on), "
            "which the hotswap controller follows"
        )
    if version is None:
        notes.append(
            f"its version is unknown: the hotswap controller needs JobSet {JOBSET_UID_SINCE} or newer"
        )
    return Fit(tuple(gaps), tuple(notes))


def fit(found: FoundInstall, cfg: PlatformConfig) -> Fit:
    return jobset_fit(found, cfg) if found.addon is JOBSET else kueue_fit(found, cfg)
