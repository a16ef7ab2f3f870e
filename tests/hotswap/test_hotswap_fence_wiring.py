"""The fence end to end: the controller over the loopback API double with the evidence cache and the
resetter over the strict Compute Engine fake, one reconcile at a time through the real client.

Node ``a-1`` goes NotReady with its VM still RUNNING (a hung guest, or a kubelet that will not come
back soon). The shipped settings never force-delete on that answer; once the pool is declared the VM
is reset (one request per suspicion, the same ``requestId`` from any replica), and the node's managed
pods are force-deleted only after Compute Engine reports the reset ``DONE``. A failing reset call
leaves the pods Terminating and is sent again later; a dry run sends nothing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from google.api_core import exceptions as gexc

from tests.hotswap.compute_fake import FakeInstances, FakeOperations, FakeResets, Vm
from tests.hotswap.double_world import FAST, kube, seed_cluster
from tests.kubeapi import ApiDouble, Seeder
from tpu_platform.hotswap.adapter.compute import InstanceReader
from tpu_platform.hotswap.adapter.config import Config
from tpu_platform.hotswap.adapter.controller import Controller
from tpu_platform.hotswap.adapter.evidence import ComputeMetrics, Evidence
from tpu_platform.hotswap.adapter.metrics import Metrics
from tpu_platform.hotswap.adapter.vm_reset import VmResetter, request_id
from tpu_platform.hotswap.core import Settings, suspect_since

PROJECT, ZONE = "tpu-prod-1234", "us-east5-b"
SHIPPED = Settings(compute_corroboration=True)
SILENT_S = 15.0
"""NotReady this long: past unhealthy_after_seconds (10), so the pool is declared."""


def pid(node: str) -> str:
    return f"gce://{PROJECT}/{ZONE}/gke-{node}"


class Cluster:
    def __init__(self, d: ApiDouble, settings: Settings, *, dry_run: bool = False) -> None:
        self.seed: Seeder = seed_cluster(d)
        for node in self.seed.list("nodes"):
            node["spec"]["providerID"] = pid(node["metadata"]["name"])
            self.seed.update("nodes", node)
        vms = {
            (PROJECT, ZONE, f"gke-{p}-{i}"): Vm("RUNNING", id=1000 + 10 * ord(p) + i)
            for p in "ab"
            for i in range(4)
        }
        self.instances = FakeInstances(vms)
        self.operations = FakeOperations()
        self.resets = FakeResets(vms, self.operations)
        self.metrics = Metrics()
        compute = ComputeMetrics(self.metrics.registry)
        reader = InstanceReader(self.instances, self.operations, time.time, observe=compute.call)
        self.evidence = Evidence(reader.read, compute, deadline_s=0.5, reread_s=0.0)
        self.resetter = VmResetter(self.resets, time.time, self.metrics.registry)
        self.controller = Controller(
            kube(d, "hotswap-0", self.metrics),
            Config(settings, replace(FAST, dry_run=dry_run)),
            identity="hotswap-0",
            metrics=self.metrics,
            evidence=self.evidence,
            resetter=self.resetter,
        )

    def reconcile(self) -> None:
        for cache in self.controller.caches:
            cache.relist()
        assert self.controller.reconcile_once() is not None

    def pod(self, name: str) -> dict[str, Any] | None:
        return next((p for p in self.seed.list("pods", "default") if p["metadata"]["name"] == name), None)

    def value(self, name: str, **labels: str) -> float:
        return self.metrics.value(name, labels)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with ApiDouble(bookmark_interval=0.5) as d:
        c = Cluster(d, SHIPPED)
        c.seed.set_node_ready("a-1", "Unknown", time.time() - SILENT_S)
        yield c
        c.evidence.close()


def test_a_silent_node_on_a_running_vm_is_reset_then_cleared(cluster: Cluster) -> None:
    cluster.reconcile()
    assert [r["instance"] for r in cluster.resets.requests] == ["gke-a-1"], "one reset, the silent VM"
    pod = cluster.pod("high-1")
    assert pod is not None and pod["metadata"].get("deletionTimestamp"), "evicted, not force-deleted yet"
    cluster.reconcile()
    assert len(cluster.resets.requests) == 1, "pending: not sent again"
    assert cluster.pod("high-1") is not None, "a reset not DONE fences nothing"
    cluster.resets.finish()
    cluster.reconcile()
    assert cluster.pod("high-1") is None, "force-deleted once the reset is done"
    assert cluster.value("hotswap_compute_confirmations_total", status="RESET") == 1
    assert cluster.value("hotswap_vm_resets_total", outcome="sent") == 1


def test_the_request_id_names_the_suspicion_so_a_second_replica_resets_nothing_twice(
    cluster: Cluster,
) -> None:
    cluster.reconcile()
    (sent,) = cluster.resets.requests
    other = VmResetter(cluster.resets, time.time)
    now = time.time()
    node = next(n for n in cluster.controller.snapshot(now).nodes if n.name == "a-1")
    suspicion = suspect_since(node, SHIPPED, now)
    assert suspicion is not None
    assert sent["request_id"] == request_id(pid("a-1"), suspicion)
    assert request_id(pid("a-1"), suspicion) != request_id(pid("a-1"), suspicion + 60.0)
    assert other.pending(pid("a-1"), time.time()) is None, "another process knows of no reset"
    ops = [o for o in cluster.operations.ops if o.operation_type == "reset"]
    assert len(ops) == 1


def test_a_failed_reset_leaves_the_pods_and_is_sent_again_later(cluster: Cluster) -> None:
    cluster.resets.fault = gexc.Forbidden("Required 'compute.instances.reset' permission")
    cluster.reconcile()
    assert cluster.value("hotswap_vm_resets_total", outcome="Forbidden") == 1
    pod = cluster.pod("high-1")
    assert pod is not None, "no reset, no force deletion"
    cluster.resets.fault = None
    cluster.reconcile()
    assert cluster.value("hotswap_vm_resets_total", outcome="sent") == 1


def test_a_dry_run_sends_no_reset() -> None:
    with ApiDouble(bookmark_interval=0.5) as d:
        c = Cluster(d, SHIPPED, dry_run=True)
        c.seed.set_node_ready("a-1", "Unknown", time.time() - SILENT_S)
        c.reconcile()
        c.evidence.close()
        assert c.resets.requests == []
        assert c.value("hotswap_actions_total", kind="ResetVm", outcome="dry-run") == 1
