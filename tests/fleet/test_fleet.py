"""A fleet behind one queue: Kueue MultiKueue from one stack (``tpu-platform:fleet``).

Sources (kueue v0.19.2): ``site/content/en/docs/tasks/manage/setup_multikueue.md`` and
``site/static/examples/multikueue/multikueue-setup.yaml`` (MultiKueueCluster with a kubeconfig
Secret in Kueue's namespace under the key ``kubeconfig``, MultiKueueConfig, AdmissionCheck with
controller ``kueue.x-k8s.io/multikueue`` in the ClusterQueue's ``admissionChecksStrategy``; the
worker mirrors the manager's namespaces and LocalQueues);
``site/content/en/docs/tasks/run/multikueue/jobsets.md`` (``spec.managedBy`` defaulted
to ``kueue.x-k8s.io/multikueue``). The worker's credentials are in
``test_multikueue_worker_access.py``. GKE: ``DNSEndpointConfig.enable_k8s_tokens_via_dns``
(https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.config.stack_problems import only_problem, problems_of
from tpu_platform.kueue import multikueue as mk
from tpu_platform.plan import load_stack_config, parse_stack_config, stack_file
from tpu_platform.policy.resources import Resource, Stack
from tpu_platform.policy.rules import check_tpu_quota
from tpu_platform.schema import CrdsUnavailable, check_object, default_validator
from tpu_platform.schema.rendered import kubernetes_objects
from tpu_platform.summary import summarize

FLEET = "tpu-platform:fleet"
CLUSTER = "gcp:container/cluster:Cluster"
MANAGER = "pulumi:providers:kubernetes::tpu-manager-cluster-k8s"


def _objects(rendering: Any, kind: str) -> list[tuple[str | None, dict[str, Any]]]:
    """``(provider, object)`` of every rendered Kubernetes object of a kind."""
    by_label = {f"{r.type}::{r.name}": r for r in rendering.resources}
    return [
        (by_label[item.label].provider, item.obj)
        for item in kubernetes_objects(rendering.resources)
        if item.obj["kind"] == kind
    ]


# --- the stack model ------------------------------------------------------------------------


def test_fleet_view_has_every_worker_slice_in_its_zone(fleet_stack: dict[str, Any]) -> None:
    cfg = parse_stack_config(fleet_stack)
    assert cfg.fleet is not None
    assert cfg.cluster.name == "tpu-fleet-manager"
    assert [(p.name, p.zone) for p in cfg.slice_pools] == [
        ("east-4x4", "us-east5-b"),
        ("central-4x4", "us-central1-b"),
        ("central-2x4", "us-central1-b"),
    ]
    east = cfg.worker_platform(cfg.fleet.workers[0])
    assert east.region == "us-east5" and east.cluster.name == "tpu-fleet-east" and east.fleet is None
    assert [t.name for t in east.teams] == [t.name for t in cfg.teams]
    assert [t.cluster_queue for t in east.teams] == [t.cluster_queue for t in cfg.teams]
    assert [[q.slices for q in t.quota] for t in east.teams] == [[2], [0]]


def test_manager_quota_above_the_fleet_capacity_is_rejected(fleet_stack: dict[str, Any]) -> None:
    fleet_stack["tpu-platform:teams"][0]["quota"][0]["slices"] = 4  # 4 + 1 > 2 + 2 slices of 4x4
    problem = only_problem(fleet_stack)
    assert problem.startswith("tpu-platform:teams: nominal quotas for 4x4")
    assert "add up to 5 slices" in problem and "have 4" in problem


def test_a_worker_quota_above_its_own_slices_is_placed_at_the_worker(fleet_stack: dict[str, Any]) -> None:
    fleet_stack[FLEET]["workers"][0]["teams"][0]["quota"][0]["slices"] = 3  # east has 2
    problem = only_problem(fleet_stack)
    assert problem.startswith("tpu-platform:teams: on worker east: nominal quotas for 4x4"), problem


def test_worker_problems_point_into_the_worker(fleet_stack: dict[str, Any]) -> None:
    fleet_stack[FLEET]["workers"][1]["slicePools"][0]["topology"] = "4x2"
    problems = problems_of(fleet_stack)
    assert any(p.startswith("tpu-platform:fleet.workers[1].slicePools[0].topology:") for p in problems), (
        problems
    )
    assert not any(p.startswith("tpu-platform:slicePools") for p in problems), problems


def test_worker_quota_entries_point_at_the_worker_team(fleet_stack: dict[str, Any]) -> None:
    fleet_stack[FLEET]["workers"][0]["teams"][1]["quota"] = [{"topology": "2x4", "slices": 1}]
    problem = only_problem(fleet_stack)
    assert problem.startswith("tpu-platform:fleet.workers[0].teams[1].quota[0].topology:"), problem


def test_worker_teams_must_be_the_manager_teams(fleet_stack: dict[str, Any]) -> None:
    fleet_stack[FLEET]["workers"][1]["teams"][1]["name"] = "reserach"
    problems = problems_of(fleet_stack)
    assert problems[0].startswith("tpu-platform:fleet.workers[1].teams[1].name: no team 'reserach'"), problems
    assert "research, training" in problems[0]


def test_every_worker_lists_every_team(fleet_stack: dict[str, Any]) -> None:
    del fleet_stack[FLEET]["workers"][1]["teams"][0]
    problem = only_problem(fleet_stack)
    assert problem.startswith("tpu-platform:fleet.workers[1].teams: team 'training' has no entry"), problem


def test_duplicate_worker_and_cluster_names(fleet_stack: dict[str, Any]) -> None:
    workers = fleet_stack[FLEET]["workers"]
    workers[1]["name"] = "east"
    workers[1]["cluster"]["name"] = "tpu-fleet-manager"
    problems = problems_of(fleet_stack)
    assert any(p.startswith("tpu-platform:fleet.workers[1].name: worker 'east' is already") for p in problems)
    assert any(
        p.startswith("tpu-platform:fleet.workers[1].cluster.name:") and "the manager" in p for p in problems
    )


def test_clusters_of_one_project_need_distinct_node_accounts(fleet_stack: dict[str, Any]) -> None:
    workers = fleet_stack[FLEET]["workers"]
    workers[0]["cluster"]["name"] = "tpu-fleet-production-west-a"
    workers[1]["cluster"]["name"] = "tpu-fleet-production-west-b"
    problem = only_problem(fleet_stack)
    assert problem.startswith("tpu-platform:fleet.workers[1].cluster.name: the node service account"), problem
    workers[1]["project"] = "another-project"
    parse_stack_config(fleet_stack)


def test_two_workers_cannot_build_the_image_into_one_repository(fleet_stack: dict[str, Any]) -> None:
    del fleet_stack["tpu-platform:hotswap"]["image"]
    parse_stack_config(fleet_stack)  # two regions: two repositories
    worker = fleet_stack[FLEET]["workers"][1]
    worker.update(region="us-east5", zone="us-east5-a")
    problem = only_problem(fleet_stack)
    assert problem.startswith("tpu-platform:fleet.workers[1].region: workers[0] already builds"), problem


def test_workers_are_reached_through_their_dns_endpoint(fleet_stack: dict[str, Any]) -> None:
    fleet_stack[FLEET]["workers"][0]["cluster"]["controlPlaneAccess"] = "ip"
    fleet_stack[FLEET]["workers"][0]["cluster"]["masterAuthorizedCidrs"] = ["203.0.113.0/24"]
    problems = problems_of(fleet_stack)
    access = [
        p for p in problems if p.startswith("tpu-platform:fleet.workers[0].cluster.controlPlaneAccess:")
    ]
    assert len(access) == 1 and "controlPlaneAccess: dns" in access[0], problems


def test_adopted_workers_are_rejected(fleet_stack: dict[str, Any]) -> None:
    worker = fleet_stack[FLEET]["workers"][1]
    worker["cluster"] = {"name": "existing", "mode": "adopt", "controlPlaneAccess": "dns"}
    problems = problems_of(fleet_stack)
    assert any(p.startswith("tpu-platform:fleet.workers[1].cluster.mode:") for p in problems), problems


def test_a_fleet_stack_has_no_cluster_of_its_own(fleet_stack: dict[str, Any]) -> None:
    fleet_stack["tpu-platform:cluster"] = {"name": "one"}
    problem = only_problem(fleet_stack)
    assert problem.startswith("tpu-platform:cluster: a fleet stack has no cluster of its own")


def test_structural_mistakes_are_reported_once_under_fleet(fleet_stack: dict[str, Any]) -> None:
    del fleet_stack[FLEET]["workers"][0]["slicePools"][0]["topology"]
    fleet_stack[FLEET]["workers"][1]["colour"] = "blue"
    problems = problems_of(fleet_stack)
    assert all(p.startswith("tpu-platform:fleet.workers[") for p in problems), problems
    assert len(problems) == 2, problems


def test_integrations_the_worker_role_does_not_grant_are_rejected(fleet_stack: dict[str, Any]) -> None:
    fleet_stack["tpu-platform:kueue"]["integrations"] = ["kubeflow.org/pytorchjob"]
    problem = only_problem(fleet_stack)
    assert problem.startswith("tpu-platform:kueue.integrations[0]:")


def test_too_many_workers_for_a_multikueue_config(fleet_stack: dict[str, Any]) -> None:
    template = fleet_stack[FLEET]["workers"][0]
    fleet_stack[FLEET]["workers"] = [
        {**copy.deepcopy(template), "name": f"w{i}", "cluster": {"name": f"c{i}"}} for i in range(21)
    ]
    problems = problems_of(fleet_stack)
    assert any(p.startswith("tpu-platform:fleet.workers:") for p in problems), problems


@settings(max_examples=40, deadline=None)
@given(
    path=st.sampled_from(
        [
            ("manager",),
            ("manager", "cluster"),
            ("workers",),
            ("workers", 0),
            ("workers", 0, "slicePools"),
            ("workers", 1, "teams"),
            ("workers", 1, "zone"),
        ]
    ),
    value=st.one_of(st.none(), st.integers(), st.text(max_size=5), st.lists(st.integers(), max_size=2)),
)
def test_hostile_fleet_sections_fail_with_the_typed_error(path: tuple[Any, ...], value: Any) -> None:
    config = copy.deepcopy(load_stack_config(stack_file("fleet")))
    target = config[FLEET]
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    for line in problems_of(config):
        assert line.startswith(("tpu-platform:fleet", "on worker")), line


# --- what the stack renders -----------------------------------------------------------------


def test_manager_queues_carry_the_multikueue_check(rendered: Any) -> None:
    queues = _objects(rendered, "ClusterQueue")
    manager = [obj for provider, obj in queues if provider == MANAGER]
    workers = [obj for provider, obj in queues if provider != MANAGER]
    assert sorted(cq["metadata"]["name"] for cq in manager) == ["research-cq", "training-cq"]
    for cq in manager:
        assert cq["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": mk.CHECK_NAME}]}
    assert len(workers) == 4
    for cq in workers:
        assert "admissionChecksStrategy" not in cq["spec"]  # no DWS in this fleet, no MultiKueue
    checks = _objects(rendered, "AdmissionCheck")
    assert [obj["spec"]["controllerName"] for _, obj in checks] == [mk.MULTIKUEUE_CONTROLLER]


def test_every_cluster_has_the_same_queue_names(rendered: Any) -> None:
    by_provider: dict[str | None, set[tuple[str, str]]] = {}
    for provider, lq in _objects(rendered, "LocalQueue"):
        by_provider.setdefault(provider, set()).add(
            (lq["metadata"]["namespace"], lq["metadata"]["name"], lq["spec"]["clusterQueue"])  # type: ignore[arg-type]
        )
    assert len(by_provider) == 3
    first = next(iter(by_provider.values()))
    assert all(names == first for names in by_provider.values())


def test_each_worker_has_a_cluster_and_a_kubeconfig_secret(rendered: Any) -> None:
    clusters = {obj["metadata"]["name"]: obj for _, obj in _objects(rendered, "MultiKueueCluster")}
    assert sorted(clusters) == ["central", "east"]
    secrets = {
        obj["metadata"]["name"]: (provider, obj)
        for provider, obj in _objects(rendered, "Secret")
        if obj["metadata"]["namespace"] == mk.KUEUE_NAMESPACE
    }
    for cluster in clusters.values():
        source = cluster["spec"]["clusterSource"]["kubeConfig"]
        assert source["locationType"] == "Secret"
        provider, _secret = secrets[source["location"]]
        assert provider == MANAGER
    [config] = [obj for _, obj in _objects(rendered, "MultiKueueConfig")]
    assert config["spec"]["clusters"] == ["east", "central"]
    assert config["metadata"]["name"] == mk.CONFIG_NAME


def test_kubeconfig_secret_is_secret_in_the_plan(rendered: Any) -> None:
    secrets = [
        r for r in rendered.resources if r.type == "kubernetes:core/v1:Secret" and "kubeconfig" in r.name
    ]
    assert len(secrets) == 2
    assert all(r.inputs["stringData"] == "[secret]" for r in secrets)


def test_only_workers_accept_kubernetes_tokens_on_their_dns_endpoint(rendered: Any) -> None:
    clusters = {r.inputs["name"]: r.inputs for r in rendered.resources if r.type == CLUSTER}
    dns = {
        name: inputs["controlPlaneEndpointsConfig"]["dnsEndpointConfig"] for name, inputs in clusters.items()
    }
    assert dns["tpu-fleet-east"]["enableK8sTokensViaDns"] is True
    assert dns["tpu-fleet-central"]["enableK8sTokensViaDns"] is True
    assert "enableK8sTokensViaDns" not in dns["tpu-fleet-manager"]


def test_manager_runs_no_tpu_and_no_controller(rendered: Any) -> None:
    pools = [r for r in rendered.resources if r.type == "gcp:container/nodePool:NodePool"]
    manager_pools = [r for r in pools if "manager" in r.name]
    assert [r.inputs["name"] for r in manager_pools] == ["system"]
    assert "guestAccelerators" not in json.dumps(manager_pools[0].inputs)
    hotswap = [r for r in rendered.resources if r.type == "tpu-platform:hotswap:Controller"]
    assert len(hotswap) == 2 and not any("manager" in r.name for r in hotswap)


def test_multikueue_objects_match_the_crds(rendered: Any) -> None:
    validator = default_validator()
    objects = [
        obj
        for kind in ("MultiKueueCluster", "MultiKueueConfig", "AdmissionCheck", "ClusterQueue")
        for _, obj in _objects(rendered, kind)
    ]
    try:
        reports = [check_object(obj, validator) for obj in objects]
    except CrdsUnavailable as err:
        pytest.skip(str(err))
    assert all(not r.errors for r in reports), [r.describe() for r in reports if r.errors]


def test_a_misspelt_multikueue_object_fails_the_crd_check() -> None:
    cfg = parse_stack_config(load_stack_config(stack_file("fleet")))
    assert cfg.fleet is not None
    bad = copy.deepcopy(mk.multikueue_cluster(cfg.fleet.workers[0]))
    bad["spec"]["clusterSource"]["kubeConfig"]["locationType"] = "Secrets"
    try:
        report = check_object(bad, default_validator())
    except CrdsUnavailable as err:
        pytest.skip(str(err))
    assert report.errors


# --- policy and summary ---------------------------------------------------------------------


def _resources(rendering: Any) -> Stack:
    return Stack(
        Resource(
            urn=r.urn, type=r.type, name=r.name, props=r.inputs, parent=r.parent, dependencies=r.dependencies
        )
        for r in rendering.resources
    )


def test_policy_holds_each_worker_to_its_own_pools(
    fleet_stack: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    assert check_tpu_quota(_resources(render_stack(fleet_stack, "fleet")), {}) == []
    # An overcommit on one worker is found even though the fleet as a whole has the chips.
    fleet_stack["tpu-platform:kueue"]["allowOvercommit"] = True
    fleet_stack[FLEET]["workers"][0]["teams"][1]["quota"][0]["slices"] = 2
    rendering = render_stack(fleet_stack, "fleet")
    stripped = []
    for r in rendering.resources:
        inputs = copy.deepcopy(r.inputs)
        if r.type.endswith(":ClusterQueue"):  # the stack declares the overcommit; the policy is asked
            inputs["metadata"].pop("annotations", None)
        stripped.append(Resource(urn=r.urn, type=r.type, name=r.name, props=inputs, parent=r.parent))
    violations = check_tpu_quota(Stack(stripped), {})
    assert len(violations) == 1, violations
    assert "east-4x4-0, east-4x4-1" in violations[0].message and "manager" not in violations[0].message


def test_summary_per_cluster_and_for_the_fleet(fleet_stack: dict[str, Any]) -> None:
    summary = summarize(parse_stack_config(fleet_stack))
    doc = summary.as_dict()
    assert doc["chips"] == 80 and doc["fleet"]["manager"] == "tpu-fleet-manager"
    assert [(w["name"], w["cluster"], w["chips"]) for w in doc["fleet"]["workers"]] == [
        ("east", "tpu-fleet-east", 32),
        ("central", "tpu-fleet-central", 48),
    ]
    text = summary.as_text()
    assert text.startswith("fleet: manager tpu-fleet-manager (us-east5-b), 2 workers: 6 TPU v6e slices")
    assert "  worker central (MultiKueueCluster):\n    cluster tpu-fleet-central (us-central1-b)" in text


# --- the linter against the manager's queues ------------------------------------------------


def _fleet_jobset(**spec: Any) -> dict[str, Any]:
    """The corrected example JobSet, sent to the fleet's training queue."""
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "jobsets" / "high-jax-trillium.yaml"
    manifest = yaml.safe_load(path.read_text())
    manifest["metadata"]["namespace"] = "training"
    manifest["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "training-queue"
    manifest["spec"].update(spec)
    return manifest


def _fleet_rules(manifest: dict[str, Any]) -> set[str]:
    from tpu_platform.lint import lint_jobset
    from tpu_platform.lint.stack import context_from_stack

    ctx = context_from_stack(parse_stack_config(load_stack_config(stack_file("fleet"))))
    return {f.rule for f in lint_jobset(manifest, ctx)}


def test_linter_knows_the_manager_queues() -> None:
    from tpu_platform import catalog
    from tpu_platform.lint.stack import context_from_stack

    ctx = context_from_stack(parse_stack_config(load_stack_config(stack_file("fleet"))))
    target = ctx.local_queues[("training", "training-queue")]
    assert target.cluster_queue == "training-cq" and target.multikueue
    assert target.quota_chips(catalog.lookup("4x4")) == 48
    # A JobSet runs whole on one worker: the largest has two 4x4 slices, not the fleet's four.
    assert ctx.cluster_slices[catalog.lookup("4x4")] == 2
    assert "multikueue-managed-by" not in _fleet_rules(_fleet_jobset())
    assert "multikueue-managed-by" not in _fleet_rules(_fleet_jobset(managedBy=mk.MULTIKUEUE_CONTROLLER))


def test_a_jobset_managed_by_another_controller_is_an_error() -> None:
    assert "multikueue-managed-by" in _fleet_rules(
        _fleet_jobset(managedBy="jobset.sigs.k8s.io/jobset-controller")
    )


def test_managed_by_is_not_checked_on_a_single_cluster() -> None:
    from tpu_platform.lint import lint_jobset
    from tpu_platform.lint.stack import context_from_stack

    path = stack_file("seed")
    manifest = yaml.safe_load(
        (path.parents[1] / "examples" / "jobsets" / "high-jax-trillium.yaml").read_text()
    )
    manifest["spec"]["managedBy"] = "jobset.sigs.k8s.io/jobset-controller"
    ctx = context_from_stack(parse_stack_config(load_stack_config(path)))
    assert "multikueue-managed-by" not in {f.rule for f in lint_jobset(manifest, ctx)}


# --- the simulator runs one worker ----------------------------------------------------------


def test_whatif_simulates_one_named_worker() -> None:
    from tpu_platform.config import StackConfigError
    from tpu_platform.sim.whatif import one_cluster

    cfg = parse_stack_config(load_stack_config(stack_file("fleet")))
    central = one_cluster(cfg, "central")
    assert central.fleet is None and central.cluster.name == "tpu-fleet-central"
    with pytest.raises(StackConfigError, match="pass --worker with one of east, central"):
        one_cluster(cfg, None)
    with pytest.raises(StackConfigError, match="no worker 'west'"):
        one_cluster(cfg, "west")
    single = parse_stack_config(load_stack_config(stack_file("dev")))
    assert one_cluster(single, None) is single
    with pytest.raises(StackConfigError, match="not a fleet stack"):
        one_cluster(single, "east")
