"""Which JobSet a pod belongs to: only what the ownership chain JobSet -> Job -> Pod proves.

Labels prove nothing: a tenant can put JobSet's ``jobset-name`` and ``jobset-uid`` labels on any pod
in its namespace, and point a controller owner reference at any Job. The chain the controllers
themselves write does:

- the JobSet controller creates each child Job named ``<jobset>-<replicatedJob>-<index>`` in the
  JobSet's namespace with the JobSet as its controller owner (JobSet v0.12.0
  ``pkg/controllers/jobset_controller.go``: ``constructJob``, ``ctrl.SetControllerReference``;
  ``pkg/util/placement/placement.go``: ``GenJobName``);
- the Job controller creates the pods with the Job as their controller owner (kubernetes
  ``pkg/controller/job/job_controller.go``: ``metav1.NewControllerRef(job, controllerKind)``).

Owner references name an object by UID in the same namespace (kubernetes "Owners and
Dependents": cross-namespace owner references are disallowed by design), so the chain is checked by
UID at each link and never leaves the pod's namespace: one team's objects can only ever be counted
for that team's own JobSets, and only under one of the names the JobSet controller would give a
child Job. What remains a tenant's to do, an extra pod under its own real Job, is the same as what
the Job controller does for it, and counts only if it holds TPU chips (:mod:`.index`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from tpu_platform.hotswap.core.model import ChildJob, JobSet, Pod


def owner_of(pod: Pod, jobs: dict[str, ChildJob], jobsets: dict[str, JobSet]) -> JobSet | None:
    """The JobSet the chain proves ``pod`` belongs to, or None. ``jobs`` and ``jobsets`` are keyed
    by UID."""
    job = jobs.get(pod.job_uid) if pod.job_uid else None
    if job is None or job.namespace != pod.namespace or job.name != pod.job:
        return None
    js = jobsets.get(job.jobset_uid) if job.jobset_uid else None
    if js is None or js.namespace != job.namespace or js.name != job.jobset:
        return None
    if job.name not in js.child_jobs:
        return None
    return js


def owned_pods(pods: Iterable[Pod], jobs: Iterable[ChildJob], jobsets: Iterable[JobSet]) -> tuple[Pod, ...]:
    """``pods`` with ``jobset`` and ``jobset_uid`` set from the chain alone: a pod whose chain does
    not lead to a JobSet belongs to none (it still occupies its node)."""
    by_uid_job = {j.uid: j for j in jobs if j.uid}
    by_uid_js = {js.uid: js for js in jobsets if js.uid}
    out = []
    for pod in pods:
        js = owner_of(pod, by_uid_job, by_uid_js) if pod.rejection is None else None
        key, uid = (js.key, js.uid) if js is not None else (None, "")
        same = (pod.jobset, pod.jobset_uid) == (key, uid)
        out.append(pod if same else replace(pod, jobset=key, jobset_uid=uid))
    return tuple(out)


__all__ = ["owned_pods", "owner_of"]
