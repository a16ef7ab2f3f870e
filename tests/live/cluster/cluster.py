"""The live tier's cluster: a control plane and kwok for the session, a stack's platform on top per test.

``LiveCluster`` starts etcd, the three Kubernetes servers, kwok and the Compute Engine double
(``compute_double``: the VMs behind the nodes, for the controller's corroboration reads) once.
``install(stack)`` brings up one stack's cluster as its plan renders it: the TPU node pools as kwok
nodes, JobSet and Kueue from their charts with the stack's values (so Kueue runs the stack's own
Configuration), and the GMP CRDs GKE serves with Managed Prometheus. ``uninstall()`` takes all of it
away again, webhooks first, so the next stack starts from an empty cluster without a restart of the
control plane.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tpu_platform.hotswap.core import constants as hotswap_k

from . import addons, binaries, kwok, nodes, rendered
from .charts import SHARED
from .compute_double import ComputeDouble
from .controlplane import ControlPlane
from .kube import ApiError, Kube, wait_for
from .process import Process
from .workloads import JOBSET_NAME_LABEL

BINARIES = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "jobset",
    "kueue",
    "helm",
)
GMP_CRDS = SHARED / "crds" / "gmp-prometheus-engine-2ffde4e"


@dataclass
class Installed:
    """One stack's cluster on the control plane: what to take away again."""

    stack: str
    provider: str
    plan: dict[str, Any]
    pools: list[nodes.SlicePool]
    addons: list[addons.Addon] = field(default_factory=list)
    applied: list[dict[str, Any]] = field(default_factory=list)


class LiveCluster:
    """Owns every process it starts; ``stop()`` ends them by PID, in reverse order."""

    def __init__(self, workdir: Path, controller_manager_flags: tuple[str, ...] = ()) -> None:
        self.paths, self.versions = binaries.locate(BINARIES)
        self.workdir = workdir
        self.cp = ControlPlane(self.paths, workdir, controller_manager_flags)
        self.kube: Kube | None = None
        self.kwok: Process | None = None
        self.compute = ComputeDouble()
        self.current: Installed | None = None
        self.timings: dict[str, float] = {}

    @property
    def kube_version(self) -> str:
        return self.versions["kube-apiserver"]

    def start(self) -> LiveCluster:
        started = time.monotonic()
        try:
            self.compute.start()
            self.cp.start()
            self.kube = Kube(self.cp.admin_kubeconfig)
            self.kwok = kwok.start_kwok(self.cp, self.paths["kwok"])
            for crd_file in sorted(GMP_CRDS.glob("*.yaml")):
                self.admin.apply(yaml.safe_load(crd_file.read_text()))
        except BaseException:
            self.stop()
            raise
        self.timings["control_plane_s"] = time.monotonic() - started
        return self

    @property
    def admin(self) -> Kube:
        assert self.kube is not None, "LiveCluster.start() first"
        return self.kube

    def stop(self) -> None:
        if self.kube is not None:
            self.kube.close()
        self.cp.stop()
        self.compute.stop()

    # one stack at a time -------------------------------------------------------------------
    def install(
        self, stack: str, provider: str | None = None, *, plan: dict[str, Any] | None = None
    ) -> Installed:
        """Nodes, JobSet and Kueue of ``stack``'s cluster (``provider``: one cluster of a fleet);
        ``plan``: that stack's plan as a test changed it (a setting the stacks do not render)."""
        if self.current is not None:
            self.uninstall()
        plan = plan if plan is not None else rendered.load_plan(stack)
        groups = rendered.clusters(plan)
        provider = provider or next(iter(groups))
        started = time.monotonic()
        pools = [p for p in nodes.pools_from_plan(plan) if _pool_in_cluster(plan, p, provider)]
        installed = Installed(stack, provider, plan, pools)
        self.current = installed
        self.compute.reset()  # new nodes, new VMs: all RUNNING
        for pool in pools:
            for node in nodes.node_objects(pool):
                self.admin.create(node)
        names = [n for p in pools for n in p.node_names()]
        wait_for(f"{len(names)} kwok nodes Ready", lambda: self.ready_nodes() >= set(names), 60)
        chart_inputs = rendered.charts(plan, provider)
        for release in ("jobset", "kueue"):
            if release in chart_inputs:
                binary = self.paths[release]
                addon = addons.start_addon(
                    self.cp,
                    self.admin,
                    binary,
                    self.paths["helm"],
                    chart_inputs[release],
                    kube_version=self.kube_version,
                )
                installed.addons.append(addon)
        self.timings[f"install_{stack}_{provider}_s"] = time.monotonic() - started
        return installed

    def silence(self, node: str, silent: bool = True) -> None:
        """A host going silent (or coming back): kwok stops (or resumes) its Lease and status.

        kwok v0.8.0 releases a node's Lease only when the node is deleted (``pkg/kwok/controllers/
        node_controller.go``: an annotation change is a Modified event, which never releases or
        takes a hold), so the node's annotation is changed and kwok restarted: the new process
        manages exactly the nodes that still match its selector.

        The new process renews the managed nodes' Leases under a new holder identity, and kwok
        waits for a Lease held by another holder to expire before it takes it ("failed to create
        lease, lease already exists" for up to 80 s in its log, while kube-controller-manager sees
        no renewal and pods on those nodes wait), so the old process's Leases of the nodes the new
        one manages are deleted first: it creates them anew at once, and the node lifecycle
        controller, which counts from the last renewal it saw, misses none (a restart takes about
        a second against 40 s Leases renewed every 10 s).
        """
        value = "silent" if silent else nodes.MANAGED
        self.admin.patch("v1", "Node", node, {"metadata": {"annotations": {nodes.KWOK_ANNOTATION: value}}})
        assert self.kwok is not None
        self.kwok.stop()
        self.cp.group.processes.remove(self.kwok)
        for name in self._kwok_managed():
            self.admin.delete("coordination.k8s.io/v1", "Lease", name, "kube-node-lease")
        self.kwok = kwok.start_kwok(self.cp, self.paths["kwok"])

    def _kwok_managed(self) -> list[str]:
        return [
            n["metadata"]["name"]
            for n in self.admin.list("v1", "Node")
            if (n["metadata"].get("annotations") or {}).get(nodes.KWOK_ANNOTATION) == nodes.MANAGED
        ]

    def ready_nodes(self) -> set[str]:
        out = set()
        for node in self.admin.list("v1", "Node"):
            conds = node.get("status", {}).get("conditions", [])
            if any(c["type"] == "Ready" and c["status"] == "True" for c in conds):
                out.add(node["metadata"]["name"])
        return out

    def apply_plan_objects(self) -> list[tuple[rendered.PlannedObject, ApiError | None]]:
        """Every Kubernetes object of the installed cluster's plan, applied; each with its rejection."""
        installed = self._installed()
        results: list[tuple[rendered.PlannedObject, ApiError | None]] = []
        for obj in rendered.clusters(installed.plan)[installed.provider]:
            try:
                self.admin.apply(obj.manifest)
                installed.applied.append(obj.manifest)
                results.append((obj, None))
            except ApiError as err:
                results.append((obj, err))
        self._wait_for_policies(installed)
        return results

    def install_planned(self, stack: str, *, plan: dict[str, Any] | None = None) -> list[str]:
        """``install`` then ``apply_plan_objects``: the rejections, described (none expected)."""
        self.install(stack, plan=plan)
        return [f"{o.describe()}: {e}" for o, e in self.apply_plan_objects() if e is not None]

    def _wait_for_policies(self, installed: Installed) -> None:
        """Until every applied ValidatingAdmissionPolicy is enforced.

        kube-apiserver loads policies and bindings from informers, so a binding admits requests
        for a moment after it is created. A dry-run write that the policy must deny (an admin is
        not the controller) shows when it is enforced: one per policy, on an object it matches.
        """
        bindings = [o for o in installed.applied if o.get("kind") == "ValidatingAdmissionPolicyBinding"]
        if not bindings or not installed.pools:
            return
        node = installed.pools[0].node_names()[0]
        probe = {"metadata": {"annotations": {hotswap_k.UNHEALTHY_SINCE_ANNOTATION: "2000-01-01T00:00:00Z"}}}
        path = self.admin.path("v1", "Node", None, node)

        def node_write() -> Any:
            return self.admin.request(
                "PATCH", path, probe, query={"dryRun": "All"}, content_type="application/merge-patch+json"
            )

        if any(b["spec"]["policyName"].endswith("node-state") for b in bindings):
            wait_for("the node-state admission policy enforced", lambda: _denied_by_policy(node_write), 30)
        if any(b["spec"]["policyName"].endswith("jobset-state") for b in bindings):
            js = {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "metadata": {
                    "name": "policy-probe",
                    "namespace": "default",
                    "annotations": {hotswap_k.PREEMPTED_FOR_ANNOTATION: "default/probe"},
                },
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "a",
                            "template": {
                                "spec": {
                                    "template": {
                                        "spec": {
                                            "restartPolicy": "Never",
                                            "containers": [{"name": "c", "image": "pause"}],
                                        }
                                    }
                                }
                            },
                        }
                    ]
                },
            }

            wait_for(
                "the JobSet-state admission policy enforced",
                lambda: _denied_by_policy(lambda: self.admin.create(js, dry_run=True)),
                30,
            )

    def _installed(self) -> Installed:
        assert self.current is not None, "install(stack) first"
        return self.current

    def uninstall(self) -> None:
        """Delete what the plan created while the controllers still run with their RBAC (they
        remove their finalizers), wait until it is gone, then take the webhooks away, stop the
        controllers and delete what their charts created. The CRDs stay: every stack installs the
        same chart versions, whose apply updates them."""
        installed = self._installed()
        self.current = None
        self._delete_workloads(
            {o["metadata"]["name"] for o in installed.applied if o.get("kind") == "Namespace"}
        )
        self._delete(installed.applied)
        for addon in reversed(installed.addons):
            for config in addon.chart.webhooks:
                self.admin.delete(config["apiVersion"], config["kind"], config["metadata"]["name"])
            addon.process.stop()
            if addon.process in self.cp.group.processes:
                self.cp.group.processes.remove(addon.process)
        charts = [o for a in installed.addons for o in a.chart.applied]
        charts += [addons.namespace_obj(a.chart.namespace) for a in installed.addons]
        self._delete(charts)
        for pool in installed.pools:
            for name in pool.node_names():
                self.admin.delete("v1", "Node", name)

    def clear_workloads(self) -> None:
        """Every JobSet of the installed plan's namespaces deleted, until its Workload and pods are
        gone: the next test of a module that shares one install starts from an idle cluster."""
        installed = self._installed()
        namespaces = {o["metadata"]["name"] for o in installed.applied if o.get("kind") == "Namespace"}
        self._delete_workloads(namespaces)

        def pods_left() -> list[str]:
            return [
                f"{ns}/{p['metadata']['name']}"
                for ns in namespaces
                for p in self.admin.list("v1", "Pod", ns, selector=JOBSET_NAME_LABEL)
            ]

        try:
            wait_for("pods of the deleted JobSets gone", lambda: not pods_left(), 120)
        except TimeoutError as err:
            raise TimeoutError(f"{err}; left: {self._leftovers(namespaces)}") from None

    def _delete_workloads(self, namespaces: set[str]) -> None:
        """The JobSets first, and their Kueue Workloads gone with them: Kueue drops a Workload's
        finalizer when its JobSet is deleted, not when the JobSet goes with its namespace."""
        for ns in namespaces:
            for js in self.admin.list("jobset.x-k8s.io/v1alpha2", "JobSet", ns):
                self.admin.delete("jobset.x-k8s.io/v1alpha2", "JobSet", js["metadata"]["name"], ns)

        def gone() -> bool:
            return not any(self.admin.list("kueue.x-k8s.io/v1beta2", "Workload", ns) for ns in namespaces)

        try:
            wait_for("Workloads of the deleted JobSets gone", gone, 60)
        except TimeoutError as err:
            raise TimeoutError(f"{err}; left: {self._leftovers(namespaces)}") from None

    def _delete(self, objects: list[dict[str, Any]]) -> None:
        """Delete cluster-scoped objects and namespaces (and so what is in them); wait until gone."""
        namespaces = {o["metadata"]["name"] for o in objects if o.get("kind") == "Namespace"}
        cluster_scoped = [
            o for o in objects if o.get("kind") != "Namespace" and not o["metadata"].get("namespace")
        ]
        for obj in reversed(cluster_scoped):
            with contextlib.suppress(KeyError):
                self.admin.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"])
        for ns in namespaces:
            self.admin.delete("v1", "Namespace", ns)
        try:
            wait_for("namespaces deleted", lambda: not namespaces & self._namespaces(), 120)
        except TimeoutError as err:
            raise TimeoutError(f"{err}; left: {self._leftovers(namespaces & self._namespaces())}") from None
        wait_for("cluster-scoped objects deleted", lambda: not self._existing(cluster_scoped), 60)

    def _leftovers(self, namespaces: set[str]) -> list[str]:
        """What keeps namespaces from going: the objects left in them and their finalizers."""
        left = []
        kinds = (
            ("v1", "Pod"),
            ("jobset.x-k8s.io/v1alpha2", "JobSet"),
            ("batch/v1", "Job"),
            ("kueue.x-k8s.io/v1beta2", "Workload"),
        )
        for ns in sorted(namespaces):
            for api, kind in kinds:
                for obj in self.admin.list(api, kind, ns):
                    meta, node = obj["metadata"], obj.get("spec", {}).get("nodeName")
                    left.append(f"{kind} {ns}/{meta['name']} finalizers={meta.get('finalizers')} node={node}")
        return left

    def _existing(self, objects: list[dict[str, Any]]) -> list[str]:
        left = []
        for obj in objects:
            try:
                self.admin.get(obj["apiVersion"], obj["kind"], obj["metadata"]["name"])
                left.append(f"{obj['kind']} {obj['metadata']['name']}")
            except ApiError as err:
                if err.status != 404:
                    raise
            except KeyError:
                continue
        return left

    def _crds(self) -> set[str]:
        return {
            c["metadata"]["name"]
            for c in self.admin.list("apiextensions.k8s.io/v1", "CustomResourceDefinition")
        }

    def _namespaces(self) -> set[str]:
        return {n["metadata"]["name"] for n in self.admin.list("v1", "Namespace")}


def _denied_by_policy(write: Callable[[], Any]) -> bool:
    """Whether a ValidatingAdmissionPolicy denies ``write`` (a dry run)."""
    try:
        write()
    except ApiError as err:
        return err.status == 422 and "ValidatingAdmissionPolicy" in err.message
    return False


def _pool_in_cluster(plan: dict[str, Any], pool: nodes.SlicePool, provider: str) -> bool:
    """A pool belongs to the cluster its provider depends on (a fleet plan has one per cluster)."""
    cluster_of: dict[str, set[str]] = {}
    for res in plan["resources"]:
        clusters = {d for d in res.get("dependsOn") or () if d.startswith("gcp:container/cluster:Cluster::")}
        if res["type"] == "pulumi:providers:kubernetes":
            cluster_of[f"provider::{res['name']}"] = clusters
        elif res["type"] == "gcp:container/nodePool:NodePool" and res["inputs"]["name"] == pool.name:
            cluster_of["pool"] = clusters
    return bool(cluster_of.get("pool", set()) & cluster_of.get(f"provider::{provider}", set()))


@contextlib.contextmanager
def live_cluster(workdir: Path) -> Iterator[LiveCluster]:
    cluster = LiveCluster(workdir).start()
    try:
        yield cluster
    finally:
        cluster.stop()
