"""Every permission the platform grants, against what its code calls, over every committed plan.

``plans/*.yaml`` are what ``pulumi up`` creates. Each Kubernetes Role and ClusterRole there, and each
Google IAM grant (custom roles, project and service-account IAM members, tag-value IAM members), must
be a row of the tables below, with the exact rules or permissions the code renders for it and the
reason it exists. For the hotswap controller, the rows are derived from its calls: the Kubernetes
calls are the table of ``tpu_platform/hotswap/adapter/access.py`` (checked on the wire by
``tests/hotswap/adapter/test_access.py``); the Google calls are read here from the adapter's source
with ``ast`` and each maps to the one permission Compute Engine's reference names for it, so a grant
without a call and a call without a grant both fail.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from tpu_platform.components.gke_cluster import NODE_SA_ROLES

from tpu_platform.config import PlatformConfig
from tpu_platform.constants import GMP_NAMESPACE
from tpu_platform.hotswap import deploy, iam
from tpu_platform.kueue import multikueue as mk
from tpu_platform.monitoring import scrape
from tpu_platform.plan import load_stack_config, parse_stack_config, stack_file
from tpu_platform.policy.pools import is_tpu_pool
from tpu_platform.policy.resources import Resource

REPO = Path(__file__).resolve().parents[1]
PLANS = sorted((REPO / "plans").glob("*.yaml"))
ADAPTER = REPO / "tpu_platform" / "hotswap" / "adapter"
RBAC = "kubernetes:rbac.authorization.k8s.io/v1:"
ROLE_KINDS = ("Role", "ClusterRole")
BINDING_KINDS = ("RoleBinding", "ClusterRoleBinding")
CUSTOM_ROLE = "gcp:projects/iAMCustomRole:IAMCustomRole"
PROJECT_MEMBER = "gcp:projects/iAMMember:IAMMember"
SA_MEMBER = "gcp:serviceaccount/iAMMember:IAMMember"
TAG_MEMBER = "gcp:tags/tagValueIamMember:TagValueIamMember"
TAG_VALUE = "gcp:tags/tagValue:TagValue"
NODE_POOL = "gcp:container/nodePool:NodePool"
PLATFORM = "tpu-platform:index:Platform"


# --- the Kubernetes RBAC table ---------------------------------------------------------------


@dataclass(frozen=True)
class RbacRow:
    """One role the platform creates: its rules as the code renders them, who holds it, and why."""

    kind: str
    name: str
    rules: Callable[[PlatformConfig], list[dict[str, Any]]]
    holders: Callable[[PlatformConfig], set[tuple[str, str]]]
    why: str


def _controller(cfg: PlatformConfig) -> set[tuple[str, str]]:
    return {(cfg.hotswap.namespace, "hotswap-controller")}


def _scrapers(cfg: PlatformConfig) -> set[tuple[str, str]]:
    return {(target.namespace, scrape.SCRAPER) for target in (scrape.KUEUE, scrape.JOBSET)}


def _collector(cfg: PlatformConfig) -> set[tuple[str, str]]:
    return {(GMP_NAMESPACE, scrape.GMP_COLLECTOR)}


def _multikueue(cfg: PlatformConfig) -> set[tuple[str, str]]:
    return {(mk.KUEUE_NAMESPACE, mk.WORKER_SERVICE_ACCOUNT)}


RBAC_TABLE: tuple[RbacRow, ...] = (
    RbacRow(
        "ClusterRole",
        "tpu-platform:hotswap-controller",
        lambda cfg: deploy.cluster_role_rules(),
        _controller,
        "the controller's cluster-wide calls (adapter/access.py CLUSTER_ACCESS): watch nodes, pods, "
        "JobSets and their Jobs; taint and annotate nodes, evict and force-delete pods, annotate "
        "JobSets, create Events",
    ),
    RbacRow(
        "Role",
        "hotswap-controller-leader-election",
        lambda cfg: deploy.role_rules(),
        _controller,
        "leader election on its own Lease in its own namespace (LEADER_ACCESS)",
    ),
    RbacRow(
        "Role",
        "hotswap-controller-node-leases",
        lambda cfg: deploy.node_lease_role_rules(cfg.hotswap.controller_settings()),
        _controller,
        "the kubelets' heartbeats in kube-node-lease, only with leaseStaleSeconds (NODE_LEASE_ACCESS)",
    ),
    RbacRow(
        "ClusterRole",
        scrape.READER_CLUSTER_ROLE,
        lambda cfg: scrape.metrics_reader_role()["rules"],
        _scrapers,
        "GET /metrics: Kueue's and JobSet's metrics endpoints authorize the scraper's token by it",
    ),
    RbacRow(
        "Role",
        f"{scrape.SCRAPER}-token-reader",
        lambda cfg: scrape.scrape_objects(scrape.KUEUE)["token-role"]["rules"],
        _collector,
        "Managed Prometheus' collector reads the one scrape token Secret (resourceNames) it scrapes with",
    ),
    RbacRow(
        "ClusterRole",
        mk.WORKER_ROLE,
        lambda cfg: mk.worker_rules(cfg.kueue.frameworks()),
        _multikueue,
        "a fleet manager's MultiKueue writes Jobs, JobSets and Workloads in the worker's team "
        "namespaces (Kueue's multikueue-sa-role; bound per namespace)",
    ),
    RbacRow(
        "ClusterRole",
        mk.WORKER_WATCH_ROLE,
        lambda cfg: mk.watch_rules(cfg.kueue.frameworks()),
        _multikueue,
        "and watches them and the queues cluster-wide (the same upstream role's read verbs)",
    ),
)


# --- the Google IAM table --------------------------------------------------------------------


@dataclass(frozen=True)
class ComputeCall:
    """A Google client method the adapter calls and the permission Compute Engine checks for it."""

    client: str
    method: str
    permission: str
    source: str


COMPUTE_CALLS: tuple[ComputeCall, ...] = (
    ComputeCall(
        "InstancesClient",
        "get",
        iam.GET_PERMISSION,
        "https://cloud.google.com/compute/docs/reference/rest/v1/instances/get",
    ),
    ComputeCall(
        "ZoneOperationsClient",
        "list",
        iam.OPERATIONS_PERMISSION,
        "https://cloud.google.com/compute/docs/reference/rest/v1/zoneOperations/list",
    ),
    ComputeCall(
        "InstancesClient",
        "reset",
        iam.RESET_PERMISSION,
        "https://cloud.google.com/compute/docs/reference/rest/v1/instances/reset",
    ),
)
"""Each method page's "IAM Permissions" section names the one permission."""

NODE_ROLE_REASONS: dict[str, str] = {
    "roles/logging.logWriter": "the nodes' agents write node and workload logs to Cloud Logging",
    "roles/monitoring.metricWriter": "the nodes' agents write metrics to Cloud Monitoring",
    "roles/monitoring.viewer": "read access to Cloud Monitoring, listed with the writers for the agents",
    "roles/stackdriver.resourceMetadata.writer": "the agents write the metadata of what they report",
    "roles/artifactregistry.reader": "kubelets pull images from the project's Artifact Registry (the "
    "controller image the stack builds)",
}
"""The node service account's roles (``components/gke_cluster.py`` ``NODE_SA_ROLES``): GKE "Harden
your cluster's security", "Use least privilege IAM service accounts"
(https://cloud.google.com/kubernetes-engine/docs/how-to/hardening-your-cluster), plus image pulls."""


@dataclass(frozen=True)
class IamGrant:
    """One Google grant of a plan: the role, whom, under which condition, and in which platform."""

    type: str
    name: str
    role: str
    member: str
    condition: str | None
    platform: str | None
    config: PlatformConfig


# --- reading the plans -----------------------------------------------------------------------


@cache
def plan(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(path.read_text())
    return document


@cache
def stack_config(stack: str) -> PlatformConfig:
    return parse_stack_config(load_stack_config(stack_file(stack)))


def entries(document: Mapping[str, Any], type_: str) -> list[dict[str, Any]]:
    return [r for r in document["resources"] if r["type"] == type_]


def platform_of(document: Mapping[str, Any], entry: Mapping[str, Any]) -> str | None:
    """The ``tpu-platform:index:Platform`` component the entry belongs to (a fleet has several)."""
    by_label = {f"{r['type']}::{r['name']}": r for r in document["resources"]}
    parent = entry.get("parent")
    while parent:
        if str(parent).startswith(f"{PLATFORM}::"):
            return str(parent)
        parent = by_label.get(str(parent), {}).get("parent")
    return None


def platform_configs(stack: str) -> dict[str, PlatformConfig]:
    """Each platform of the stack and its config: the stack's, or each fleet worker's."""
    cfg = stack_config(stack)
    if cfg.fleet is None:
        return {f"{PLATFORM}::tpu": cfg}
    return {f"{PLATFORM}::tpu-{w.name}": cfg.worker_platform(w) for w in cfg.fleet.workers}


def config_for(document: Mapping[str, Any], entry: Mapping[str, Any]) -> PlatformConfig:
    """The config of the platform an entry belongs to; a fleet manager's own resources, the stack's."""
    platform = platform_of(document, entry)
    return platform_configs(document["stack"]).get(platform or "") or stack_config(document["stack"])


def custom_roles(document: Mapping[str, Any]) -> dict[str, list[str]]:
    return {
        f"projects/{r['inputs']['project']}/roles/{r['inputs']['roleId']}": list(r["inputs"]["permissions"])
        for r in entries(document, CUSTOM_ROLE)
    }


def iam_grants(document: Mapping[str, Any]) -> Iterator[IamGrant]:
    for type_ in (PROJECT_MEMBER, SA_MEMBER, TAG_MEMBER):
        for r in entries(document, type_):
            inputs = r["inputs"]
            condition = (inputs.get("condition") or {}).get("expression")
            platform = platform_of(document, r)
            yield IamGrant(
                type_,
                r["name"],
                inputs["role"],
                inputs["member"],
                condition,
                platform,
                config_for(document, r),
            )


def gsa_member(cfg: PlatformConfig) -> str:
    return f"serviceAccount:{iam.account_id(cfg.cluster.name)}@{cfg.project}.iam.gserviceaccount.com"


def node_member(cfg: PlatformConfig) -> str:
    return f"serviceAccount:{cfg.cluster.name[:24]}-nodes@{cfg.project}.iam.gserviceaccount.com"


# --- the Google calls of the adapter, from its source -----------------------------------------


def _fields(cls: ast.ClassDef) -> list[str]:
    """A dataclass's fields in order (its annotated class-level names)."""
    return [s.target.id for s in cls.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]


def _client_fields(tree: ast.Module, classes: dict[str, ast.ClassDef]) -> dict[tuple[str, str], str]:
    """``(class, field) -> client`` for every ``Class(compute_v1.Client(...), ...)`` in the module."""
    found: dict[tuple[str, str], str] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in classes):
            continue
        names = _fields(classes[node.func.id])
        for index, arg in enumerate(node.args):
            if _is_client(arg):
                assert isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute)
                found[(node.func.id, names[index])] = arg.func.attr
    return found


def _is_client(node: ast.expr) -> bool:
    """``compute_v1.SomeClient(...)``."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "compute_v1"
    )


def _field_calls(cls: ast.ClassDef) -> Iterator[tuple[str, str]]:
    """``(field, method)`` of every ``self.field.method(...)`` in the class."""
    for node in ast.walk(cls):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        target = node.func.value
        if (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
        ):
            yield target.attr, node.func.attr


def google_client_modules() -> list[str]:
    """Modules of the package or its components that import a Google Cloud client library."""
    found: list[str] = []
    for path in sorted([*(REPO / "tpu_platform").rglob("*.py"), *(REPO / "components").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            imported = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            imported += [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if any(name.startswith("google.cloud") for name in imported):
                found.append(path.relative_to(REPO).as_posix())
                break
    return found


def adapter_google_calls() -> set[tuple[str, str]]:
    """``(client, method)`` of every Google client call the controller's adapter makes."""
    calls: set[tuple[str, str]] = set()
    for path in sorted(ADAPTER.glob("*.py")):
        tree = ast.parse(path.read_text())
        classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        clients = _client_fields(tree, classes)
        for (cls, field_name), client in clients.items():
            calls.update((client, m) for f, m in _field_calls(classes[cls]) if f == field_name)
    return calls


# --- the tests -------------------------------------------------------------------------------


def test_every_google_call_of_the_adapter_is_in_the_table_and_every_row_is_called() -> None:
    assert adapter_google_calls() == {(c.client, c.method) for c in COMPUTE_CALLS}
    assert {c.permission for c in COMPUTE_CALLS} == set(iam.compute_permissions(reset=True))
    assert google_client_modules() == [
        "tpu_platform/hotswap/adapter/compute_engine.py",
    ], "every Google client call of the platform is read from this module"


@pytest.mark.parametrize("path", PLANS, ids=lambda p: p.stem)
def test_every_rbac_role_is_a_row_with_the_rules_the_code_renders(path: Path) -> None:
    document = plan(path)
    rows = {(row.kind, row.name): row for row in RBAC_TABLE}
    for entry in document["resources"]:
        kind = entry["type"].removeprefix(RBAC)
        if not entry["type"].startswith(RBAC) or kind not in ROLE_KINDS:
            continue
        name = entry["inputs"]["metadata"]["name"]
        row = rows.get((kind, name))
        assert row is not None, f"{kind} {name!r} is granted but not in the audit table"
        assert entry["inputs"]["rules"] == row.rules(config_for(document, entry)), f"{kind} {name!r}"


@pytest.mark.parametrize("path", PLANS, ids=lambda p: p.stem)
def test_every_rbac_binding_gives_a_row_to_its_holders_alone(path: Path) -> None:
    document = plan(path)
    rows = {(row.kind, row.name): row for row in RBAC_TABLE}
    for entry in document["resources"]:
        if not entry["type"].startswith(RBAC) or entry["type"].removeprefix(RBAC) not in BINDING_KINDS:
            continue
        ref = entry["inputs"]["roleRef"]
        row = rows.get((ref["kind"], ref["name"]))
        assert row is not None, f"{entry['name']} binds {ref} outside the audit table"
        subjects = {(s["namespace"], s["name"]) for s in entry["inputs"]["subjects"]}
        holders = row.holders(config_for(document, entry))
        assert subjects <= holders, f"{entry['name']} gives {ref['name']} to {subjects}"


def test_every_rbac_row_is_granted_by_some_plan() -> None:
    granted = {
        (e["type"].removeprefix(RBAC), e["inputs"]["metadata"]["name"])
        for path in PLANS
        for e in plan(path)["resources"]
        if e["type"].startswith(RBAC) and e["type"].removeprefix(RBAC) in ROLE_KINDS
    }
    assert {(row.kind, row.name) for row in RBAC_TABLE} == granted


@pytest.mark.parametrize("path", PLANS, ids=lambda p: p.stem)
def test_every_google_grant_is_a_row_with_its_reason(path: Path) -> None:
    document = plan(path)
    iam_types = {r["type"] for r in document["resources"] if "iam" in r["type"].lower()}
    assert iam_types <= {CUSTOM_ROLE, PROJECT_MEMBER, SA_MEMBER, TAG_MEMBER}, "audit these IAM types"
    roles = custom_roles(document)
    for grant in iam_grants(document):
        assert google_reason(grant, grant.config, roles), f"{grant.name} {grant.role} is not in the audit"


def google_reason(grant: IamGrant, cfg: PlatformConfig, roles: Mapping[str, list[str]]) -> str:
    """Why the grant exists ('' when the audit has no row for it)."""
    if grant.type == TAG_MEMBER:
        rows = {(g.role, g.member(_project_number(grant.member))) for g in iam.TAG_GRANTS}
        return "GKE's service agents attach the TPU tag" if (grant.role, grant.member) in rows else ""
    if grant.type == SA_MEMBER:
        wi = iam.workload_identity_member(cfg.project, cfg.hotswap.namespace, "hotswap-controller")
        ok = grant.role == iam.WORKLOAD_IDENTITY_USER and grant.member == wi
        return "the controller's KSA acts as its GSA (Workload Identity)" if ok else ""
    if grant.member == node_member(cfg) and grant.condition is None:
        return NODE_ROLE_REASONS.get(grant.role, "")
    if grant.member == gsa_member(cfg):
        return _controller_reason(grant, cfg, roles)
    return ""


def _project_number(member: str) -> str:
    return member.split("@", 1)[0].removeprefix("serviceAccount:").removeprefix("service-")


def _controller_reason(grant: IamGrant, cfg: PlatformConfig, roles: Mapping[str, list[str]]) -> str:
    permissions = roles.get(grant.role)
    if permissions == list(iam.UNTAGGED_PERMISSIONS) and grant.condition is None:
        return "zoneOperations.list: authorized on the project, read-only"
    tagged = permissions == list(iam.vm_permissions(cfg.hotswap.resets_vms))
    if tagged and grant.condition is not None and grant.condition.startswith("resource.matchTagId("):
        return "the calls on one VM, for the cluster's tagged TPU VMs only"
    return ""


@pytest.mark.parametrize("path", PLANS, ids=lambda p: p.stem)
def test_the_controller_is_granted_exactly_the_permissions_of_its_calls(path: Path) -> None:
    document = plan(path)
    roles = custom_roles(document)
    for platform, cfg in platform_configs(document["stack"]).items():
        granted = [g for g in iam_grants(document) if g.member == gsa_member(cfg)]
        if not (cfg.hotswap.enabled and cfg.hotswap.compute_corroboration):
            assert granted == [], platform
            continue
        permissions = sorted(p for g in granted for p in roles[g.role])
        used = {c.permission for c in COMPUTE_CALLS} - (
            set() if cfg.hotswap.resets_vms else {iam.RESET_PERMISSION}
        )
        assert permissions == sorted(used), platform


@pytest.mark.parametrize("path", PLANS, ids=lambda p: p.stem)
def test_the_tag_condition_names_the_tag_on_the_clusters_tpu_pools_alone(path: Path) -> None:
    document = plan(path)
    for platform, cfg in platform_configs(document["stack"]).items():
        if not (cfg.hotswap.enabled and cfg.hotswap.compute_corroboration):
            continue
        ours = [r for r in document["resources"] if platform_of(document, r) == platform]
        (value,) = [r for r in ours if r["type"] == TAG_VALUE]
        (value_id,) = {r["inputs"]["tagValue"] for r in ours if r["type"] == TAG_MEMBER}
        key_id = value["inputs"]["parent"]
        (scoped,) = [g for g in iam_grants(document) if g.platform == platform and g.condition]
        assert scoped.condition == iam.vm_scope_condition(key_id, value_id).expression
        for pool in (r for r in ours if r["type"] == NODE_POOL):
            tags = pool["inputs"]["nodeConfig"].get("resourceManagerTags")
            tpu = is_tpu_pool(Resource("", NODE_POOL, pool["name"], pool["inputs"]))
            assert tags == ({key_id: value_id} if tpu else None), pool["name"]


def test_the_audit_tables_give_a_reason_for_every_row() -> None:
    assert all(row.why for row in RBAC_TABLE)
    assert set(NODE_ROLE_REASONS) == set(NODE_SA_ROLES)
    assert all(
        call.source.startswith("https://cloud.google.com/compute/docs/reference/rest/v1/")
        for call in COMPUTE_CALLS
    )
