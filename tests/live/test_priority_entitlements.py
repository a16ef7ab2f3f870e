"""Each team only the priorities the stack grants it, enforced by the real API server.

The dev stack grants ``high-priority-job`` to ``research`` alone. A tenant of ``applied`` (a
ServiceAccount with its own token, given create and update on every kind that carries a priority, so
that what stops it is admission, not authorization) tries every path: a Pod, a JobSet's label, a
Job's label and its pod template, a Workload written directly, and an update that raises a priority
later. Research's own high-priority JobSet is admitted and Kueue makes its Workload; the hotswap
controller still writes its record on it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.live.cluster import ApiError, Kube, LiveCluster
from tests.live.cluster import workloads as w
from tests.live.cluster.addons import service_account_token
from tests.live.cluster.figures import Report
from tests.live.cluster.kube import wait_for
from tpu_platform.constants import PRIORITY_LABEL
from tpu_platform.hotswap.admission import JOBSET_STATE_ANNOTATIONS

HIGH, LOW = "high-priority-job", "low-priority-job"
REFUSED = (
    "namespace applied (team applied) may not use priority high-priority-job; it may use: low-priority-job"
)
TENANT_RULES = [
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "update", "patch", "get"]},
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create", "update", "patch", "get"]},
    {
        "apiGroups": ["jobset.x-k8s.io"],
        "resources": ["jobsets"],
        "verbs": ["create", "update", "patch", "get"],
    },
    {
        "apiGroups": ["kueue.x-k8s.io"],
        "resources": ["workloads"],
        "verbs": ["create", "update", "patch", "get"],
    },
]


def _tenant(live: LiveCluster, namespace: str) -> Kube:
    admin = live.admin
    meta = {"name": "entitlement-tenant", "namespace": namespace}
    admin.apply({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta})
    rbac = "rbac.authorization.k8s.io/v1"
    admin.apply({"apiVersion": rbac, "kind": "Role", "metadata": meta, "rules": TENANT_RULES})
    admin.apply(
        {
            "apiVersion": rbac,
            "kind": "RoleBinding",
            "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": meta["name"]},
            "subjects": [{"kind": "ServiceAccount", **meta}],
        }
    )
    token = service_account_token(admin, namespace, meta["name"])
    return Kube(live.cp.token_kubeconfig(f"{namespace}-entitlement", token), field_manager="tenant")


def _enforced(live: LiveCluster) -> bool:
    """kube-apiserver loads a new binding from an informer: until then the policy admits."""
    try:
        live.admin.create(_pod("applied", HIGH), dry_run=True)
    except ApiError as err:
        return REFUSED in err.message
    return False


@pytest.fixture(scope="module")
def applied(dev: LiveCluster) -> Iterator[Kube]:
    wait_for("the priority entitlement policy enforced", lambda: _enforced(dev), 30)
    kube = _tenant(dev, "applied")
    yield kube
    kube.close()


@pytest.fixture(scope="module")
def research(dev: LiveCluster) -> Iterator[Kube]:
    kube = _tenant(dev, "research")
    yield kube
    kube.close()


def _refused(call: Callable[[], Any], what: str, message: str = REFUSED) -> None:
    try:
        result = call()
    except ApiError as err:
        assert err.status in (403, 422), f"{what}: {err}"
        assert message in err.message, f"{what}: {err.message}"
        return
    raise AssertionError(f"{what}: admitted, answered {str(result)[:300]}")


def _pod(namespace: str, priority: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "entitlement-pod", "namespace": namespace},
        "spec": {
            "priorityClassName": priority,
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
        },
    }


def _job(namespace: str, *, label: str | None, pod_priority: str | None) -> dict[str, Any]:
    pod = _pod(namespace, pod_priority or "")["spec"]
    if pod_priority is None:
        del pod["priorityClassName"]
    pod["restartPolicy"] = "Never"
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "entitlement-job",
            "namespace": namespace,
            "labels": {PRIORITY_LABEL: label} if label else {},
        },
        "spec": {"suspend": True, "template": {"spec": pod}},
    }


def _workload(namespace: str, priority: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "entitlement-workload", "namespace": namespace},
        "spec": {
            "queueName": "applied-queue",
            "priorityClassRef": {
                "group": "kueue.x-k8s.io",
                "kind": "WorkloadPriorityClass",
                "name": priority,
            },
            "priority": value,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}
                    },
                }
            ],
        },
    }


def _jobset(namespace: str, queue: str, priority: str, name: str) -> dict[str, Any]:
    js = w.tpu_jobset(name, namespace, queue, priority, hotswap=False)
    js["spec"]["suspend"] = True
    return js


def test_every_path_to_an_ungranted_priority_is_refused(applied: Kube, report: Report) -> None:
    paths: dict[str, Callable[[], Any]] = {
        "pod priorityClassName": lambda: applied.create(_pod("applied", HIGH), dry_run=True),
        "JobSet label": lambda: applied.create(
            _jobset("applied", "applied-queue", HIGH, "grab"), dry_run=True
        ),
        "JobSet pod template only": lambda: applied.create(_pod_template_only_jobset(), dry_run=True),
        "Job label": lambda: applied.create(_job("applied", label=HIGH, pod_priority=None), dry_run=True),
        "Job pod template": lambda: applied.create(
            _job("applied", label=None, pod_priority=HIGH), dry_run=True
        ),
        "Workload written directly": lambda: applied.create(
            _workload("applied", HIGH, 2000000), dry_run=True
        ),
    }
    for what, call in paths.items():
        _refused(call, what)
    report.append(f"priority entitlements: {len(paths)} of {len(paths)} create paths refused")


def _pod_template_only_jobset() -> dict[str, Any]:
    js = _jobset("applied", "applied-queue", LOW, "template-only")
    js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["priorityClassName"] = HIGH
    return js


def test_an_update_that_raises_a_priority_later_is_refused(applied: Kube) -> None:
    js = _jobset("applied", "applied-queue", LOW, "raise-later")
    applied.create(js)
    _refused(
        lambda: applied.patch(
            w.JOBSET_API,
            "JobSet",
            "raise-later",
            {"metadata": {"labels": {PRIORITY_LABEL: HIGH}}},
            namespace="applied",
        ),
        "merge patch of the JobSet's label",
    )
    current = applied.get(w.JOBSET_API, "JobSet", "raise-later", "applied")
    raised = copy.deepcopy(current)
    raised["metadata"]["labels"][PRIORITY_LABEL] = HIGH
    _refused(
        lambda: applied.request(
            "PUT", applied.path(w.JOBSET_API, "JobSet", "applied", "raise-later"), raised
        ),
        "update of the JobSet",
    )
    after = applied.get(w.JOBSET_API, "JobSet", "raise-later", "applied")
    assert after["metadata"]["labels"][PRIORITY_LABEL] == LOW
    # An update that leaves the priority alone still passes.
    applied.patch(
        w.JOBSET_API, "JobSet", "raise-later", {"metadata": {"labels": {"note": "ok"}}}, namespace="applied"
    )


def test_granted_priorities_are_admitted(applied: Kube, research: Kube) -> None:
    applied.create(_pod("applied", LOW), dry_run=True)
    applied.create(_job("applied", label=LOW, pod_priority=LOW), dry_run=True)
    applied.create(_workload("applied", LOW, 1000000), dry_run=True)
    research.create(_pod("research", HIGH), dry_run=True)
    research.create(_jobset("research", "research-queue", HIGH, "granted"), dry_run=True)


def test_a_namespace_of_no_team_gets_only_the_open_priorities(dev: LiveCluster) -> None:
    admin = dev.admin
    admin.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "scratch"}})
    _refused(
        lambda: admin.create(_pod("scratch", HIGH), dry_run=True),
        "pod in a namespace of no team",
        "namespace scratch (no team) may not use priority high-priority-job; it may use: low-priority-job",
    )
    admin.create(_pod("scratch", LOW), dry_run=True)


def test_kueue_and_the_controller_are_unaffected(dev: LiveCluster, research: Kube) -> None:
    """Research's granted JobSet gets its Workload from Kueue, and the controller writes its record."""
    kube = dev.admin
    research.create(_jobset("research", "research-queue", HIGH, "kueue-path"))
    workload = w.Stopwatch().wait(
        "Workload created by Kueue", lambda: w.workload_of(kube, "research", "kueue-path"), 60
    )
    assert workload["spec"]["priorityClassRef"]["name"] == HIGH
    token = service_account_token(kube, "tpu-hotswap", "hotswap-controller")
    controller = Kube(dev.cp.token_kubeconfig("entitlement-controller", token), field_manager="hotswap")
    try:
        key = JOBSET_STATE_ANNOTATIONS[0]
        controller.patch(
            w.JOBSET_API,
            "JobSet",
            "kueue-path",
            {"metadata": {"annotations": {key: "entitlement-test"}}},
            namespace="research",
        )
    finally:
        controller.close()
    assert kube.get(w.JOBSET_API, "JobSet", "kueue-path", "research")["metadata"]["annotations"][key] == (
        "entitlement-test"
    )
