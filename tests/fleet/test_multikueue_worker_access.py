"""The identity the manager's Kueue holds on each worker: what it may do, where, and its rotation.

Sources: kubernetes-sigs/kueue v0.19.2 ``site/static/examples/multikueue/create-multikueue-kubeconfig.sh``
(the ClusterRole ``multikueue-sa-role``, a ``kubernetes.io/service-account-token`` Secret, a token
kubeconfig); ``pkg/controller/admissionchecks/multikueue/multikueuecluster.go`` (``establishWatch``:
one cluster-wide watch per kind; ``validateKubeconfig``: no token files, no insecure TLS, no CA file
paths, a server URL, no basic auth, exec plugins or auth providers). Kubernetes: "Delete/invalidate a
ServiceAccount token" (``docs/reference/access-authn-authz/service-accounts-admin``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from tests.config.stack_problems import problems_of
from tpu_platform.config.fleet import FLEET_FRAMEWORKS, never_bound_namespaces
from tpu_platform.config.kueue import REQUIRED_FRAMEWORKS
from tpu_platform.constants import RESERVED_NAMESPACES
from tpu_platform.kueue import multikueue as mk
from tpu_platform.plan import load_stack_config, parse_stack_config, stack_file
from tpu_platform.schema.rendered import kubernetes_objects

FLEET = "tpu-platform:fleet"
MANAGER = "pulumi:providers:kubernetes::tpu-manager-cluster-k8s"
TEAM_NAMESPACES = ["training", "research"]  # stacks/Pulumi.fleet.yaml: one per team, by default
SUBJECT = {"kind": "ServiceAccount", "name": mk.WORKER_SERVICE_ACCOUNT, "namespace": "kueue-system"}
NEVER = ("kube-system", "kube-public", "kube-node-lease", "gmp-system", "kueue-system", "jobset-system")

# multikueue-sa-role in create-multikueue-kubeconfig.sh (v0.19.2) for batch/job and JobSet, as
# (apiGroup, resource, verb), transcribed from the script rather than from the module under test.
_CRUD = ("create", "delete", "get", "list", "watch")
UPSTREAM = {
    *(("batch", "jobs", v) for v in _CRUD),
    ("batch", "jobs/status", "get"),
    *(("jobset.x-k8s.io", "jobsets", v) for v in _CRUD),
    ("jobset.x-k8s.io", "jobsets/status", "get"),
    *(("kueue.x-k8s.io", "workloads", v) for v in (*_CRUD, "update", "patch")),
    *(("kueue.x-k8s.io", r, v) for r in ("clusterqueues", "localqueues") for v in ("get", "list", "watch")),
    *(("kueue.x-k8s.io", "workloads/status", v) for v in ("get", "patch", "update")),
}
WRITES = {"create", "delete", "update", "patch"}


def _by_worker(rendering: Any) -> dict[str, list[dict[str, Any]]]:
    """Every Kubernetes object rendered on a worker cluster, by the worker's provider."""
    by_label = {f"{r.type}::{r.name}": r for r in rendering.resources}
    found: dict[str, list[dict[str, Any]]] = {}
    for item in kubernetes_objects(rendering.resources):
        provider = by_label[item.label].provider
        if provider is not None and provider != MANAGER:
            found.setdefault(provider, []).append(item.obj)
    return found


def _triples(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def _worker(rotation: int = 0) -> Any:
    cfg = parse_stack_config(load_stack_config(stack_file("fleet")))
    assert cfg.fleet is not None
    return cfg.fleet.workers[0].model_copy(update={"credentials_rotation": rotation})


# --- where the role is bound ------------------------------------------------------------------


def test_writes_are_bound_per_team_namespace_and_nowhere_else(rendered: Any) -> None:
    workers = _by_worker(rendered)
    assert len(workers) == 2
    for objects in workers.values():
        ours = [o for o in objects if SUBJECT in (o.get("subjects") or [])]
        role_bindings = [o for o in ours if o["kind"] == "RoleBinding"]
        assert sorted(b["metadata"]["namespace"] for b in role_bindings) == sorted(TEAM_NAMESPACES)
        assert all(b["roleRef"] == {**b["roleRef"], "name": mk.WORKER_ROLE} for b in role_bindings)
        cluster_bindings = [o for o in ours if o["kind"] == "ClusterRoleBinding"]
        # The only cluster-wide binding is the watch role: list and watch, no write.
        assert [b["roleRef"]["name"] for b in cluster_bindings] == [mk.WORKER_WATCH_ROLE]
        bound = {b["metadata"]["namespace"] for b in role_bindings}
        assert not bound & (set(NEVER) | {"tpu-hotswap"})


def test_roles_grant_exactly_kueues_rules_split_by_scope(rendered: Any) -> None:
    for objects in _by_worker(rendered).values():
        roles = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ClusterRole"}
        write = roles[mk.WORKER_ROLE]["rules"]
        watch = roles[mk.WORKER_WATCH_ROLE]["rules"]
        for rule in (*write, *watch):
            assert "*" not in rule["verbs"] and "*" not in rule["resources"] and "*" not in rule["apiGroups"]
        assert _triples(write) | _triples(watch) == UPSTREAM
        assert {verb for _, _, verb in _triples(watch)} <= {"get", "list", "watch"}
        assert not {verb for _, _, verb in _triples(write)} & {"list", "watch"}
        assert {r for _, r, _ in _triples(write)} == {
            "jobs",
            "jobs/status",
            "jobsets",
            "jobsets/status",
            "workloads",
            "workloads/status",
        }
        assert {r for _, r, v in _triples(write) if v in WRITES} == {
            "jobs",
            "jobsets",
            "workloads",
            "workloads/status",
        }


def test_the_role_covers_exactly_the_fleet_frameworks() -> None:
    assert set(mk.FRAMEWORK_RULES) == set(FLEET_FRAMEWORKS) == set(REQUIRED_FRAMEWORKS)
    with pytest.raises(KeyError):
        mk.worker_rules(["kubeflow.org/pytorchjob"])
    everything = _triples(mk.upstream_rules(list(FLEET_FRAMEWORKS)))
    assert not {r for _, r, _ in everything} & {"pods", "secrets", "serviceaccounts", "statefulsets"}


def test_a_shared_namespace_is_bound_once() -> None:
    objects = mk.worker_access_objects(
        _worker(),
        list(FLEET_FRAMEWORKS),
        ["training", "shared", "shared"],
        never_bound_namespaces("tpu-hotswap"),
    )
    assert [b["metadata"]["namespace"] for b in objects.role_bindings] == ["training", "shared"]
    assert [o["kind"] for o in objects.all()].count("ClusterRoleBinding") == 1


@pytest.mark.parametrize("namespace", [*NEVER, "tpu-hotswap"])
def test_the_renderer_never_binds_a_system_or_controller_namespace(namespace: str) -> None:
    never = never_bound_namespaces("tpu-hotswap")
    assert set(NEVER) <= RESERVED_NAMESPACES <= never
    with pytest.raises(ValueError, match=namespace):
        mk.worker_access_objects(_worker(), list(FLEET_FRAMEWORKS), ["training", namespace], never)


@pytest.mark.parametrize("namespace", NEVER)
def test_a_system_team_namespace_is_refused_at_its_field(fleet_stack: dict[str, Any], namespace: str) -> None:
    fleet_stack["tpu-platform:teams"][1]["namespaces"] = ["research", namespace]
    problems = problems_of(fleet_stack)
    at = [p for p in problems if p.startswith(f"tpu-platform:teams[1].namespaces[1]: '{namespace}'")]
    assert at and all("give the team its own namespace" in p for p in at), problems


def test_the_hotswap_namespace_is_refused_at_the_team_field(fleet_stack: dict[str, Any]) -> None:
    fleet_stack["tpu-platform:teams"][0]["namespaces"] = ["tpu-hotswap"]
    problems = problems_of(fleet_stack)
    at = [p for p in problems if p.startswith("tpu-platform:teams[0].namespaces[0]:")]
    assert len(at) == 1, problems
    assert "hotswap controller's namespace" in at[0] and "give the team its own namespace" in at[0]


def test_a_moved_hotswap_namespace_is_the_one_refused(fleet_stack: dict[str, Any]) -> None:
    fleet_stack["tpu-platform:hotswap"]["namespace"] = "tpu-ops"
    fleet_stack["tpu-platform:teams"][0]["name"] = "tpu-hotswap"  # its namespace: no longer the controller's
    fleet_stack["tpu-platform:teams"][1]["namespaces"] = ["research", "tpu-ops"]
    for worker in fleet_stack[FLEET]["workers"]:
        worker["teams"][0]["name"] = "tpu-hotswap"
    problems = problems_of(fleet_stack)
    assert any(
        p.startswith("tpu-platform:teams[1].namespaces[1]: 'tpu-ops' is the hotswap") for p in problems
    )
    assert not any(p.startswith("tpu-platform:teams[0]") for p in problems), problems


# --- the token and its rotation ---------------------------------------------------------------


def _kueue_accepts(text: str) -> None:
    """What Kueue 0.19.2's ``validateKubeconfig``/``validateRestConfig`` reject, as assertions."""
    doc = yaml.safe_load(text)
    for user in doc["users"]:
        assert set(user["user"]) <= {"token", "client-certificate-data", "client-key-data"}, user
    for cluster in doc["clusters"]:
        assert not cluster["cluster"].get("insecure-skip-tls-verify")
        assert "certificate-authority" not in cluster["cluster"]
        assert cluster["cluster"]["server"].startswith("https://")


def test_worker_kubeconfig_is_one_kueue_accepts() -> None:
    text = mk.worker_kubeconfig(_worker(), "https://gke-abc.us-east5.gke.goog", "t0ken", None)
    _kueue_accepts(text)
    doc = json.loads(text)
    assert doc["users"][0]["user"] == {"token": "t0ken"}
    assert "certificate-authority-data" not in doc["clusters"][0]["cluster"]


@pytest.mark.parametrize(("server", "token"), [("http://x", "t"), ("https://x", ""), ("x", "t")])
def test_worker_kubeconfig_refuses_what_kueue_would_refuse(server: str, token: str) -> None:
    with pytest.raises(ValueError, match="worker east"):
        mk.worker_kubeconfig(_worker(), server, token, None)


def test_rotation_renames_the_token_secret() -> None:
    assert mk.token_secret_name(_worker(0)) != mk.token_secret_name(_worker(1))
    assert mk.kubeconfig_secret_name(_worker(0)) == mk.kubeconfig_secret_name(_worker(1))


def _token_and_kubeconfig(rendering: Any, worker: str) -> tuple[Any, Any]:
    by_name = {r.name: r for r in rendering.resources}
    return by_name[f"tpu-{worker}-multikueue-token"], by_name[f"tpu-manager-kubeconfig-{worker}"]


def test_rotation_replaces_only_the_token_and_the_kubeconfig_follows_it(
    fleet_stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    before = render_stack(fleet_stack, "fleet")
    fleet_stack[FLEET]["workers"][0]["credentialsRotation"] = 1
    after = render_stack(fleet_stack, "fleet")
    old = {r.urn: r for r in before.resources}
    new = {r.urn: r for r in after.resources}
    assert set(old) == set(new)
    changed = sorted(new[urn].name for urn in new if new[urn].inputs != old[urn].inputs)
    assert changed == ["tpu-east-multikueue-token"]  # the kubeconfig's token is an output
    token_before, _ = _token_and_kubeconfig(before, "east")
    token, kubeconfig = _token_and_kubeconfig(after, "east")
    assert token_before.inputs["metadata"]["name"] == "multikueue-token-0"
    assert token.inputs["metadata"]["name"] == "multikueue-token-1"
    assert token.urn == token_before.urn  # one logical resource: a rename is a replacement
    assert token.urn in kubeconfig.dependencies
    assert kubeconfig.inputs["metadata"]["name"] == "multikueue-east"
    other, _ = _token_and_kubeconfig(after, "central")
    assert other.inputs["metadata"]["name"] == "multikueue-token-0"


def test_rotation_is_a_non_negative_integer(fleet_stack: dict[str, Any]) -> None:
    fleet_stack[FLEET]["workers"][0]["credentialsRotation"] = -1
    problems = problems_of(fleet_stack)
    assert any(p.startswith("tpu-platform:fleet.workers[0].credentialsRotation") for p in problems), problems
