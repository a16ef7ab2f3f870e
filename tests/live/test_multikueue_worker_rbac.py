"""The MultiKueue worker identity, as the fleet renders it, judged by the real API server's RBAC.

The ServiceAccount, both ClusterRoles, the watch ClusterRoleBinding, the RoleBindings of the fleet
stack's team namespaces and the token Secret are applied as ``tpu_platform.kueue.multikueue``
renders them. SubjectAccessReviews ask the authorizer what the account may do: write its Jobs,
JobSets and Workloads in the team namespaces only (never in ``tpu-hotswap``, ``kube-system``,
``gmp-system`` or the other controllers' namespaces), list and watch them cluster-wide as
MultiKueue's watches need, and nothing on Pods or Secrets anywhere. The token the token controller
writes into the Secret authenticates, and stops authenticating once its Secret is deleted, which is
what a rotation (``credentialsRotation``) relies on.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest

from tests.live.cluster import ApiError, Kube, LiveCluster, wait_for
from tpu_platform.config.fleet import FLEET_FRAMEWORKS, never_bound_namespaces
from tpu_platform.kueue import multikueue as mk
from tpu_platform.plan import load_stack_config, parse_stack_config, stack_file

SA_USER = f"system:serviceaccount:{mk.KUEUE_NAMESPACE}:{mk.WORKER_SERVICE_ACCOUNT}"
SA_GROUPS = ["system:serviceaccounts", f"system:serviceaccounts:{mk.KUEUE_NAMESPACE}", "system:authenticated"]
TEAMS = ("training", "research")  # the fleet stack's team namespaces
NOT_TEAMS = ("tpu-hotswap", "kube-system", "gmp-system", "kueue-system", "jobset-system", "default")
WRITTEN = [("batch", "jobs"), ("jobset.x-k8s.io", "jobsets"), ("kueue.x-k8s.io", "workloads")]


def _worker(rotation: int = 0) -> Any:
    cfg = parse_stack_config(load_stack_config(stack_file("fleet")))
    assert cfg.fleet is not None
    return cfg, cfg.fleet.workers[0].model_copy(update={"credentials_rotation": rotation})


def _namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


@pytest.fixture(scope="module")
def worker_rbac(live: LiveCluster) -> Iterator[mk.WorkerAccessObjects]:
    """The rendered identity on the live API server; what it created is deleted afterwards."""
    cfg, worker = _worker()
    namespaces = mk.binding_namespaces(cfg.teams)
    assert sorted(namespaces) == sorted(TEAMS)
    objects = mk.worker_access_objects(
        worker, list(FLEET_FRAMEWORKS), namespaces, never_bound_namespaces(cfg.hotswap.namespace)
    )
    admin = live.admin
    existing = {n["metadata"]["name"] for n in admin.list("v1", "Namespace")}
    created = [ns for ns in (mk.KUEUE_NAMESPACE, *namespaces) if ns not in existing]
    for ns in created:
        admin.apply(_namespace(ns))
    applied = [o for o in objects.all() if o is not objects.token]
    for obj in applied:
        admin.apply(obj, strict=True)
    yield objects
    for obj in reversed(applied):
        meta = obj["metadata"]
        admin.delete(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
    for ns in created:
        admin.delete("v1", "Namespace", ns)
    # Gone, not terminating: the next module on this worker installs Kueue into kueue-system, and
    # a namespace that finishes terminating under it takes the install with it.
    wait_for(
        "the module's namespaces deleted",
        lambda: not set(created) & {n["metadata"]["name"] for n in admin.list("v1", "Namespace")},
        120,
    )


def _allowed(admin: Kube, verb: str, group: str, resource: str, namespace: str = "") -> bool:
    """The authorizer's answer for the worker account (``namespace`` empty: all namespaces)."""
    plural, _, sub = resource.partition("/")
    attributes = {"verb": verb, "group": group, "resource": plural, "namespace": namespace}
    if sub:
        attributes["subresource"] = sub
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": SA_USER, "groups": SA_GROUPS, "resourceAttributes": attributes},
    }
    answer = admin.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", review)
    return bool(answer["status"].get("allowed"))


@pytest.mark.parametrize("namespace", TEAMS)
@pytest.mark.parametrize(("group", "resource"), WRITTEN)
def test_the_worker_account_writes_in_team_namespaces(
    live: LiveCluster, worker_rbac: mk.WorkerAccessObjects, namespace: str, group: str, resource: str
) -> None:
    for verb in ("create", "get", "delete"):
        assert _allowed(live.admin, verb, group, resource, namespace), (verb, resource, namespace)
    assert _allowed(live.admin, "patch", "kueue.x-k8s.io", "workloads/status", namespace)


@pytest.mark.parametrize("namespace", NOT_TEAMS)
@pytest.mark.parametrize(("group", "resource"), WRITTEN)
def test_the_worker_account_writes_nowhere_else(
    live: LiveCluster, worker_rbac: mk.WorkerAccessObjects, namespace: str, group: str, resource: str
) -> None:
    for verb in ("create", "delete", "update", "patch"):
        assert not _allowed(live.admin, verb, group, resource, namespace), (verb, resource, namespace)


@pytest.mark.parametrize(("group", "resource"), WRITTEN)
def test_the_worker_account_watches_across_namespaces_but_writes_in_none_at_once(
    live: LiveCluster, worker_rbac: mk.WorkerAccessObjects, group: str, resource: str
) -> None:
    assert _allowed(live.admin, "list", group, resource)
    assert _allowed(live.admin, "watch", group, resource)
    assert not _allowed(live.admin, "create", group, resource)
    assert not _allowed(live.admin, "deletecollection", group, resource)


@pytest.mark.parametrize("namespace", ["", *TEAMS, *NOT_TEAMS])
def test_the_worker_account_touches_no_pods_or_secrets(
    live: LiveCluster, worker_rbac: mk.WorkerAccessObjects, namespace: str
) -> None:
    for verb in ("create", "get", "list", "delete"):
        assert not _allowed(live.admin, verb, "", "pods", namespace), (verb, namespace)
        assert not _allowed(live.admin, verb, "", "secrets", namespace), (verb, namespace)
    assert not _allowed(live.admin, "create", "", "pods/exec", namespace)


def _self_review(kube: Kube, namespace: str) -> bool:
    """As the token's own identity: may it create a JobSet in ``namespace``?"""
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {
            "resourceAttributes": {
                "verb": "create",
                "group": "jobset.x-k8s.io",
                "resource": "jobsets",
                "namespace": namespace,
            }
        },
    }
    answer = kube.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review)
    return bool(answer["status"].get("allowed"))


def _token_kube(live: LiveCluster, secret: dict[str, Any]) -> Kube:
    """Create the token Secret, wait for the token controller to fill it, log in with it."""
    live.admin.apply(secret)
    name = secret["metadata"]["name"]

    def token() -> str:
        data = live.admin.get("v1", "Secret", name, mk.KUEUE_NAMESPACE).get("data") or {}
        return str(data.get("token") or "")

    value = base64.b64decode(wait_for(f"token controller fills {name}", token, 60)).decode()
    return Kube(live.cp.token_kubeconfig(f"multikueue-{name}", value), field_manager="multikueue")


def _rejected(kube: Kube) -> bool:
    try:
        _self_review(kube, TEAMS[0])
    except ApiError as err:
        return err.status == 401
    return False


def test_a_rotation_revokes_the_old_token_once_its_secret_is_deleted(
    live: LiveCluster, worker_rbac: mk.WorkerAccessObjects
) -> None:
    old_secret = worker_rbac.token
    new_secret = mk.worker_access_objects(
        _worker(1)[1], list(FLEET_FRAMEWORKS), list(TEAMS), never_bound_namespaces("tpu-hotswap")
    ).token
    assert old_secret["metadata"]["name"] != new_secret["metadata"]["name"]
    old = _token_kube(live, old_secret)
    try:
        assert _self_review(old, TEAMS[0]) and not _self_review(old, "tpu-hotswap")
        new = _token_kube(live, new_secret)  # created before the old one is deleted
        try:
            assert _self_review(new, TEAMS[1]) and _self_review(old, TEAMS[1])
            live.admin.delete("v1", "Secret", old_secret["metadata"]["name"], mk.KUEUE_NAMESPACE)
            wait_for("the deleted Secret's token refused", lambda: _rejected(old), 30)
            assert _self_review(new, TEAMS[0]) and not _self_review(new, "kube-system")
        finally:
            new.close()
            live.admin.delete("v1", "Secret", new_secret["metadata"]["name"], mk.KUEUE_NAMESPACE)
    finally:
        old.close()
        live.admin.delete("v1", "Secret", old_secret["metadata"]["name"], mk.KUEUE_NAMESPACE)
