"""Owner references and child Jobs: the links of the JobSet -> Job -> Pod chain, read from the API.

The core decides membership from these (:mod:`tpu_platform.hotswap.core.ownership`); here they are
only read, within bounds, from what a tenant may have written anything into.
"""

from __future__ import annotations

from tpu_platform.hotswap.adapter.api import JOBSET_GROUP, JOBSET_VERSION
from tpu_platform.hotswap.adapter.json_fields import JSON, as_maps, as_str, metadata
from tpu_platform.hotswap.core import inputs
from tpu_platform.hotswap.core.inputs import InputError
from tpu_platform.hotswap.core.model import ChildJob

JOB_API_VERSION = "batch/v1"
"""The Job controller's owner reference on a pod: kind ``Job`` of ``batch/v1``."""
JOBSET_API_VERSION = f"{JOBSET_GROUP}/{JOBSET_VERSION}"
"""The JobSet controller's owner reference on a Job: kind ``JobSet`` of this version."""
MAX_CHILD_JOBS = 4096
"""Child Job names kept per JobSet: far beyond a TPU JobSet's replicas, bounded against a hostile
replica count."""
_MAX_NAME = 253


def controller_ref(meta: JSON, kind: str, api_version: str) -> tuple[str, str]:
    """(name, UID) of the controller owner reference of ``kind`` and ``api_version``, or ('', '').
    At most one reference is the controller (the API server refuses a second: apimachinery v0.34
    ``pkg/api/validation/objectmeta.go``, "Only one reference can have Controller set to true")."""
    for ref in as_maps(meta.get("ownerReferences")):
        if ref.get("controller") is True and ref.get("kind") == kind and ref.get("apiVersion") == api_version:
            name, uid = as_str(ref.get("name")), as_str(ref.get("uid"))
            if 0 < len(name) <= _MAX_NAME and 0 < len(uid) <= _MAX_NAME:
                return name, uid
    return "", ""


def child_job_names(jobset: str, spec: JSON) -> frozenset[str]:
    """The Jobs the JobSet controller creates: for each replicated Job ``r`` and index ``i`` below
    its replicas (default 1), ``<jobset>-<r>-<i>`` (JobSet v0.12.0 ``pkg/util/placement/placement.go``,
    ``GenJobName``; ``pkg/controllers/jobset_controller.go``, ``constructJobsFromTemplate``: one per
    ``jobIdx < rjob.Replicas``)."""
    names: list[str] = []
    for rj in as_maps(spec.get("replicatedJobs")):
        rj_name = as_str(rj.get("name"))
        if not rj_name:
            continue
        try:
            replicas = inputs.integer(
                rj.get("replicas"), reason="replicas", low=0, high=MAX_CHILD_JOBS, default=1
            )
        except InputError:
            continue
        for i in range(min(replicas, MAX_CHILD_JOBS - len(names))):
            names.append(f"{jobset}-{rj_name}-{i}")
    return frozenset(names)


def job_from_api(obj: JSON) -> ChildJob:
    """A Job and the JobSet that controls it (('', '') when none does)."""
    meta = metadata(obj)
    jobset, jobset_uid = controller_ref(meta, "JobSet", JOBSET_API_VERSION)
    return ChildJob(
        namespace=as_str(meta.get("namespace")),
        name=as_str(meta.get("name")),
        uid=as_str(meta.get("uid")),
        jobset=jobset,
        jobset_uid=jobset_uid,
    )


__all__ = ["JOB_API_VERSION", "child_job_names", "controller_ref", "job_from_api"]
