"""Which JobSet a pod belongs to: only what the ownership chain JobSet -> Job -> Pod proves.

Labels prove nothing; the chain is checked by UID at each link, within the pod's namespace, and only
under a child Job name the JobSet controller would give. Sources: docs/hotswap-core.md, "ownership.py".
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
