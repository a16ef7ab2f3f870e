"""The guide's scenario on the real components, with the dev stack's queues, quotas and priorities.

Two teams share two 4x4 slices in one cohort, 16 chips of quota each. The ``applied`` team's
low-priority JobSet borrows the idle quota and runs on both slices; then ``research`` submits a
high-priority JobSet within its own quota. Kueue reclaims the borrowed quota
(``reclaimWithinCohort: Any``) by preempting the low-priority Workload, JobSet tears its Jobs down,
Kueue admits the high-priority Workload, JobSet creates its Jobs, kube-scheduler binds the pods to
one whole slice (exclusive placement), kwok runs them. Each step's time is read from the objects.
"""

from __future__ import annotations

from tests.live.cluster import LiveCluster
from tests.live.cluster import workloads as w
from tests.live.cluster.figures import Report


def test_kueue_admits_borrows_and_preempts_for_the_high_priority(dev: LiveCluster, report: Report) -> None:
    kube = dev.admin
    low = w.tpu_jobset("low-jax", "applied", "applied-queue", "low-priority-job", slices=2)
    watch = w.Stopwatch()
    kube.create(low)
    watch.wait("low admitted", lambda: w.condition(w.workload_of(kube, "applied", "low-jax"), "Admitted"), 60)
    pods = watch.wait("low 8 pods Running", lambda: len(w.running_pods(kube, "applied", "low-jax")) == 8, 90)
    assert pods
    assert len(w.pools_of(kube, w.running_pods(kube, "applied", "low-jax"))) == 2, "one slice per Job"
    report.append(watch.line("guide: low-priority JobSet borrowing both slices"))

    high = w.tpu_jobset("high-jax", "research", "research-queue", "high-priority-job", slices=1)
    watch = w.Stopwatch()
    kube.create(high)
    watch.wait("low preempted", lambda: w.condition(w.workload_of(kube, "applied", "low-jax"), "Evicted"), 60)
    watch.wait(
        "high admitted", lambda: w.condition(w.workload_of(kube, "research", "high-jax"), "Admitted"), 60
    )
    watch.wait("high 4 pods Running", lambda: len(w.running_pods(kube, "research", "high-jax")) == 4, 90)
    high_pods = w.running_pods(kube, "research", "high-jax")
    assert len(w.pools_of(kube, high_pods)) == 1, "the high-priority Job takes one whole slice"
    low_wl = w.workload_of(kube, "applied", "low-jax")
    assert not w.condition(low_wl, "Admitted"), "32 chips no longer fit: the low-priority JobSet waits"
    report.append(watch.line("guide: high-priority JobSet reclaiming its quota"))
    for name, ns in (("high-jax", "research"), ("low-jax", "applied")):
        kube.delete(w.JOBSET_API, "JobSet", name, ns)
