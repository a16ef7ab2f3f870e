"""Pods belong to a JobSet only through the ownership chain (``core/ownership.py``)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from tests.kubeapi.objects import job_obj, jobset_obj, pod_obj
from tpu_platform.hotswap.adapter.convert import job_from_api, jobset_from_api, pod_from_api
from tpu_platform.hotswap.core.model import ChildJob, JobSet, Pod
from tpu_platform.hotswap.core.ownership import owned_pods

JS = JobSet("team-a", "train", "uid-js", priority=10, topology="4x4", child_jobs=frozenset({"train-slice-0"}))
JOB = ChildJob("team-a", "train-slice-0", "uid-job", jobset="train", jobset_uid="uid-js")


def pod(**kw: object) -> Pod:
    base = Pod(
        "team-a",
        "p",
        "uid-p",
        jobset="team-a/train",
        jobset_uid="uid-js",
        job="train-slice-0",
        job_uid="uid-job",
    )
    return replace(base, **kw)  # type: ignore[arg-type]


def owner(p: Pod, jobs: tuple[ChildJob, ...] = (JOB,), jobsets: tuple[JobSet, ...] = (JS,)) -> str | None:
    return owned_pods((p,), jobs, jobsets)[0].jobset


def test_the_full_chain_makes_a_member() -> None:
    assert owner(pod()) == "team-a/train"


def test_labels_without_a_job_make_no_member() -> None:
    assert owner(pod(job_uid="")) is None
    assert owner(pod(job_uid="uid-other-job")) is None


def test_a_job_the_jobset_does_not_control_or_would_not_create_makes_no_member() -> None:
    assert owner(pod(), jobs=(replace(JOB, jobset_uid="uid-someone-else"),)) is None
    forged = replace(JOB, name="train-extra-7")
    assert owner(pod(job="train-extra-7"), jobs=(forged,)) is None


def test_the_chain_never_leaves_the_pod_namespace() -> None:
    other_team = replace(JOB, namespace="team-b")
    assert owner(pod(namespace="team-b"), jobs=(other_team,)) is None
    assert owner(pod(namespace="team-b")) is None


def test_a_refused_pod_belongs_to_no_jobset() -> None:
    from tpu_platform.hotswap.core.model import Rejection

    assert owner(pod(rejection=Rejection("Pod", "team-a", "p", "uid-p", "priority", "x"))) is None


@given(
    namespace=st.sampled_from(["team-a", "team-b"]),
    job_ns=st.sampled_from(["team-a", "team-b"]),
    job_name=st.sampled_from(["train-slice-0", "train-slice-1", "x"]),
    job_uid=st.sampled_from(["uid-job", "uid-js", ""]),
    owner_uid=st.sampled_from(["uid-js", "uid-job", ""]),
    owner_name=st.sampled_from(["train", "other"]),
)
def test_a_tenant_in_another_namespace_never_joins_the_jobset(
    namespace: str, job_ns: str, job_name: str, job_uid: str, owner_uid: str, owner_name: str
) -> None:
    """Whatever pods and Jobs team-b writes, none is counted for team-a's JobSet."""
    job = ChildJob(job_ns, job_name, "uid-job", jobset=owner_name, jobset_uid=owner_uid)
    p = pod(namespace=namespace, job=job_name, job_uid=job_uid)
    got = owner(p, jobs=(job,))
    if namespace == "team-b" or job_ns == "team-b":
        assert got is None
    if got is not None:
        assert (namespace, job_ns, job_name, job_uid, owner_uid, owner_name) == (
            "team-a",
            "team-a",
            "train-slice-0",
            "uid-job",
            "uid-js",
            "train",
        )


def test_the_adapter_reads_the_chain_from_api_objects() -> None:
    js = jobset_from_api(jobset_obj("train", namespace="team-a"))
    assert js.child_jobs == frozenset({"train-slice-0"})
    job = job_from_api(job_obj("train-slice-0", "train", namespace="team-a"))
    assert (job.jobset, job.jobset_uid) == ("train", "uid-js-train")
    real = pod_from_api(pod_obj("p", "train", job="train-slice-0", node="n", priority=1, namespace="team-a"))
    bare = pod_from_api(
        pod_obj("d", "train", job="train-slice-0", node="n", priority=1, namespace="team-a", owned=False)
    )
    pods = owned_pods((real, bare), (job,), (js,))
    assert [p.jobset for p in pods] == ["team-a/train", None]
