"""Negative and out-of-range counts: what the schema's ``format: int32`` does not stop offline.

The Go types behind these fields are int32 (JobSet v0.12.0 ``api/jobset/v1alpha2/jobset_types.go``:
``ReplicatedJob.Replicas``, ``FailurePolicy.MaxRestarts``; Kubernetes ``batch/v1`` ``JobSpec``:
``parallelism``, ``completions``, ``backoffLimit``), so the API server rejects anything beyond
int32. A negative ``maxRestarts`` is accepted but means what 0 means: JobSet fails the JobSet
once ``restartsCountTowardsMax >= maxRestarts`` (``pkg/controllers/failure_policy.go``, v0.12.0).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .findings import Finding
from .jobset import as_dict, as_list

INT32_MAX = 2**31 - 1
# Kubernetes' HighestUserDefinablePriority (pkg/apis/scheduling/types.go): higher values are
# reserved for system-node-critical and system-cluster-critical.
HIGHEST_USER_PRIORITY = 1_000_000_000


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _count(path: str, value: Any, what: str, minimum: int = 0) -> Iterator[Finding]:
    number = _int(value)
    if number is None:
        return
    if number < minimum:
        yield Finding(
            "count-invalid",
            "error",
            path,
            f"{what} is {number}: it cannot be below {minimum}",
            f"set {path.rsplit('.', 1)[-1]} to a value of at least {minimum}",
        )
    elif number > INT32_MAX:
        yield Finding(
            "count-invalid",
            "error",
            path,
            f"{what} is {number}: the field is a 32-bit integer (at most {INT32_MAX}); the API server "
            "rejects the object",
            "use a realistic count",
        )


def jobset_counts(manifest: dict[str, Any]) -> Iterator[Finding]:
    spec = as_dict(manifest.get("spec"))
    failure = as_dict(spec.get("failurePolicy"))
    max_restarts = _int(failure.get("maxRestarts"))
    if max_restarts is not None and max_restarts < 0:
        yield Finding(
            "count-invalid",
            "error",
            "spec.failurePolicy.maxRestarts",
            f"maxRestarts is {max_restarts}: JobSet fails the JobSet once its restarts reach "
            "maxRestarts, so a negative value allows no restart at all (the same as 0)",
            "set maxRestarts to the restarts to allow, e.g. 10",
        )
    else:
        yield from _count("spec.failurePolicy.maxRestarts", failure.get("maxRestarts"), "maxRestarts")
    for index, raw in enumerate(as_list(spec.get("replicatedJobs"))):
        rj = as_dict(raw)
        path = f"spec.replicatedJobs[{index}]"
        yield from _count(f"{path}.replicas", rj.get("replicas"), "replicas")
        job = as_dict(as_dict(rj.get("template")).get("spec"))
        for key in ("parallelism", "completions", "backoffLimit"):
            yield from _count(f"{path}.template.spec.{key}", job.get(key), key)


def priority_class_value(manifest: dict[str, Any]) -> Iterator[Finding]:
    value = _int(manifest.get("value"))
    if value is not None and value > HIGHEST_USER_PRIORITY:
        yield Finding(
            "count-invalid",
            "error",
            "value",
            f"value {value} is above {HIGHEST_USER_PRIORITY}, the highest a user-defined PriorityClass may "
            "have; the API server rejects it",
            f"use a value of at most {HIGHEST_USER_PRIORITY}",
        )
