"""Corroboration end to end: nodes with a ``spec.providerID`` in the loopback API double, the controller
with the evidence cache over the strict Compute Engine fake, one reconcile through the real client.

Pool ``a``'s node ``a-1`` goes NotReady. Its VM TERMINATED: the managed pods on it are force-deleted in
the same reconcile that fails the JobSet fast, long before ``dead_node_confirm_seconds``. RUNNING: they
are not, not even once that timer has run out (the veto). Forbidden, 503 or a hung API: no evidence, the
conservative path (nothing before the timer, the timer after it). The providerID is parsed strictly
(hypothesis over arbitrary strings).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from hypothesis import given
from hypothesis import strategies as st

from tests.hotswap.compute_fake import FakeInstances, FakeOperations, Vm
from tests.hotswap.double_world import FAST, kube, seed_cluster
from tests.kubeapi import ApiDouble, Seeder
from tests.kubeapi.objects import node_obj
from tpu_platform.hotswap.adapter.compute import MAX_PROVIDER_ID, InstanceReader, parse_provider_id
from tpu_platform.hotswap.adapter.config import Config
from tpu_platform.hotswap.adapter.controller import Controller
from tpu_platform.hotswap.adapter.convert import node_from_api
from tpu_platform.hotswap.adapter.evidence import ComputeMetrics, Evidence
from tpu_platform.hotswap.adapter.metrics import Metrics
from tpu_platform.hotswap.core import Settings

PROJECT, ZONE = "tpu-prod-1234", "us-east5-b"
DEFAULT = Settings(compute_corroboration=True)
"""What a stack ships: corroboration on, no force deletion without a not-running answer."""
ON = Settings(compute_corroboration=True, force_delete_unconfirmed=True)
"""Opted in to the NotReady timer as well: what a RUNNING answer must veto and a missing answer not."""
BEFORE_TIMER = 15.0
"""NotReady this long: past unhealthy_after_seconds (10), before dead_node_confirm_seconds (30)."""
AFTER_TIMER = ON.dead_node_confirm_seconds + 15.0


def pid(node: str) -> str:
    return f"gce://{PROJECT}/{ZONE}/gke-{node}"


class Cluster:
    def __init__(self, d: ApiDouble, settings: Settings = ON) -> None:
        self.d = d
        self.seed: Seeder = seed_cluster(d)
        for node in self.seed.list("nodes"):
            node["spec"]["providerID"] = pid(node["metadata"]["name"])
            self.seed.update("nodes", node)
        self.instances = FakeInstances(
            {(PROJECT, ZONE, f"gke-{p}-{i}"): Vm("RUNNING") for p in "ab" for i in range(4)}
        )
        self.metrics = Metrics()
        compute = ComputeMetrics(self.metrics.registry)
        reader = InstanceReader(self.instances, FakeOperations(), time.time, observe=compute.call)
        self.evidence = Evidence(reader.read, compute, deadline_s=0.5)
        self.controller = Controller(
            kube(d, "hotswap-0", self.metrics),
            Config(settings, FAST),
            identity="hotswap-0",
            metrics=self.metrics,
            evidence=self.evidence,
        )

    def fail(self, node: str, ago: float) -> None:
        self.seed.set_node_ready(node, "Unknown", time.time() - ago)

    def reconcile(self) -> None:
        for cache in self.controller.caches:
            cache.relist()
        assert self.controller.reconcile_once() is not None

    def pod(self, name: str) -> dict[str, Any] | None:
        return next((p for p in self.seed.list("pods", "default") if p["metadata"]["name"] == name), None)

    def terminating(self, name: str) -> bool:
        pod = self.pod(name)
        return pod is not None and bool(pod["metadata"].get("deletionTimestamp"))

    def value(self, name: str, **labels: str) -> float:
        return self.metrics.value(name, labels)


@contextmanager
def _cluster(settings: Settings) -> Iterator[Cluster]:
    with ApiDouble(bookmark_interval=0.5) as d:
        c = Cluster(d, settings)
        yield c
        if c.instances.gate is not None:
            c.instances.gate.set()
        c.evidence.close()


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with _cluster(ON) as c:
        yield c


@pytest.fixture
def shipped() -> Iterator[Cluster]:
    with _cluster(DEFAULT) as c:
        yield c


def test_a_terminated_vm_has_its_managed_pods_force_deleted_at_once(cluster: Cluster) -> None:
    cluster.instances.vms[(PROJECT, ZONE, "gke-a-1")] = Vm("TERMINATED")
    cluster.fail("a-1", BEFORE_TIMER)
    cluster.reconcile()
    assert cluster.instances.calls == [{"project": PROJECT, "zone": ZONE, "instance": "gke-a-1"}]
    assert cluster.pod("high-1") is None, "force-deleted, not left Terminating on a dead node"
    assert cluster.value("hotswap_force_deletions_total") == 1
    assert cluster.value("hotswap_compute_confirmations_total", status="TERMINATED") == 1
    assert all(cluster.terminating(f"high-{i}") for i in (0, 2, 3)), (
        "the rest of the slice is evicted gracefully (fail fast); only the dead VM's pod is forced"
    )


def test_a_running_vm_vetoes_even_after_the_timer(cluster: Cluster) -> None:
    cluster.fail("a-1", AFTER_TIMER)
    cluster.reconcile()
    assert cluster.terminating("high-1"), "evicted, not force-deleted"
    assert cluster.value("hotswap_force_deletions_total") == 0
    assert cluster.value("hotswap_compute_vetoes_total") == 1


@pytest.mark.parametrize("ago", [BEFORE_TIMER, AFTER_TIMER])
@pytest.mark.parametrize(
    "fault",
    [gexc.Forbidden("Required 'compute.instances.get' permission"), gexc.ServiceUnavailable("503"), "slow"],
)
def test_no_evidence_falls_back_to_the_conservative_path(cluster: Cluster, fault: object, ago: float) -> None:
    """Without an answer the NotReady timer decides, as without corroboration: nothing before it runs
    out, the force-delete after it (``ago`` is fixed per run: the node lifecycle controller keeps
    ``lastTransitionTime`` while the status stays Unknown)."""
    cluster.instances.vms[(PROJECT, ZONE, "gke-a-1")] = Vm("TERMINATED")
    if fault == "slow":
        cluster.instances.gate = threading.Event()
    else:
        assert isinstance(fault, Exception)
        cluster.instances.fault = fault
    cluster.fail("a-1", ago)
    cluster.reconcile()
    timer_ran_out = ago >= ON.dead_node_confirm_seconds
    assert (cluster.pod("high-1") is None) is timer_ran_out
    assert cluster.value("hotswap_force_deletions_total") == (1 if timer_ran_out else 0)
    assert cluster.value("hotswap_compute_confirmations_total", status="TERMINATED") == 0
    if fault == "slow":
        assert cluster.value("hotswap_compute_late_reads_total") == 1
    else:
        outcome = type(fault).__name__
        assert cluster.value("hotswap_compute_reads_total", call="instances.get", outcome=outcome) == 1


@pytest.mark.parametrize("fault", [gexc.Forbidden("Required 'compute.instances.get' permission"), "slow"])
def test_by_default_no_answer_never_force_deletes(shipped: Cluster, fault: object) -> None:
    """The shipped settings: a pod on a node NotReady well past the timer stays Terminating while
    Compute Engine cannot say the VM is down (the kubelet may be restarting, the guest hung)."""
    shipped.instances.vms[(PROJECT, ZONE, "gke-a-1")] = Vm("TERMINATED")
    if fault == "slow":
        shipped.instances.gate = threading.Event()
    else:
        assert isinstance(fault, Exception)
        shipped.instances.fault = fault
    shipped.fail("a-1", AFTER_TIMER + 600)
    shipped.reconcile()
    assert shipped.terminating("high-1"), "evicted, not force-deleted"
    assert shipped.value("hotswap_force_deletions_total") == 0


def test_by_default_a_terminated_vm_is_force_deleted(shipped: Cluster) -> None:
    shipped.instances.vms[(PROJECT, ZONE, "gke-a-1")] = Vm("TERMINATED")
    shipped.fail("a-1", BEFORE_TIMER)
    shipped.reconcile()
    assert shipped.pod("high-1") is None
    assert shipped.value("hotswap_force_deletions_total") == 1


# --- spec.providerID -----------------------------------------------------------------------------
def _node(provider_id: object) -> dict[str, object]:
    obj = node_obj("a-0", "a")
    obj["spec"]["providerID"] = provider_id
    return obj


def test_the_node_carries_its_validated_provider_id() -> None:
    rec = node_from_api(_node(pid("a-0")))
    assert rec is not None and rec.node.provider_id == pid("a-0")
    for bad in ("", None, 7, ["gce://x"], "aws:///us-east-1a/i-0abc", pid("a-0").upper(), pid("a-0") + "\n"):
        rec = node_from_api(_node(bad))
        assert rec is not None and rec.node.provider_id == "", bad
    no_spec = node_obj("a-0", "a")
    del no_spec["spec"]
    rec = node_from_api(no_spec)
    assert rec is not None and rec.node.provider_id == ""


_label = st.from_regex(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?", fullmatch=True)
_project = st.from_regex(r"[a-z][-a-z0-9]{4,28}[a-z0-9]", fullmatch=True)
_zone = st.from_regex(r"[a-z]{2,12}-[a-z]{2,12}[0-9]{1,2}-[a-z]", fullmatch=True)


@given(st.one_of(st.text(max_size=300), st.binary(max_size=64), st.integers(), st.none()))
def test_fuzz_any_provider_id_is_refused_or_round_trips(value: object) -> None:
    rec = node_from_api(_node(value))
    assert rec is not None
    got = rec.node.provider_id
    assert got == "" or (got == value and parse_provider_id(got) is not None)


@given(_project, _zone, _label)
def test_fuzz_well_formed_provider_ids_are_kept(project: str, zone: str, instance: str) -> None:
    value = f"gce://{project}/{zone}/{instance}"
    rec = node_from_api(_node(value))
    assert rec is not None
    assert rec.node.provider_id == (value if len(value) <= MAX_PROVIDER_ID else "")


@given(_project, _zone, _label, st.text(min_size=1, max_size=8))
def test_fuzz_anything_appended_or_prepended_is_refused(project: str, zone: str, vm: str, junk: str) -> None:
    value = f"gce://{project}/{zone}/{vm}"
    for hostile in (value + "/" + junk, junk + value, f"gce://{project}/{zone}/{vm}{junk}\x00"):
        got = parse_provider_id(hostile)
        assert got is None or f"gce://{got.project}/{got.zone}/{got.instance}" == hostile


def test_a_standby_reads_nothing(cluster: Cluster) -> None:
    """Only the leader's decision is applied, so only the leader spends Compute Engine reads."""
    from tests.hotswap.double_world import elector

    c = cluster.controller
    c.leader = elector(kube(cluster.d, "hotswap-1"), "hotswap-1")
    assert not c.is_leader()
    cluster.fail("a-1", BEFORE_TIMER)
    cluster.reconcile()
    assert cluster.instances.calls == []
    assert cluster.pod("high-1") is not None and not cluster.terminating("high-1"), "a standby writes nothing"


# --- the Google client --------------------------------------------------------------------------
def test_without_credentials_the_controller_runs_the_conservative_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``google.auth.default`` finding nothing: no evidence cache, an error logged, no crash (and no
    network: the metadata-server probe is what this stands in for)."""
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError

    from tpu_platform.hotswap.adapter.evidence import google_evidence

    def no_credentials(*args: object, **kwargs: object) -> object:
        raise DefaultCredentialsError("Your default credentials were not found")

    monkeypatch.setattr(google.auth, "default", no_credentials)
    metrics = Metrics()
    assert (
        google_evidence(
            metrics.registry,
            time.time,
            max_concurrent=2,
            deadline_s=1.0,
            reread_s=5.0,
            max_reads_per_minute=60,
        )
        is None
    )
    assert metrics.value("hotswap_compute_reader_up") == 0


def test_with_credentials_the_reader_is_built_over_the_real_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    import google.auth
    from google.auth.credentials import AnonymousCredentials

    from tpu_platform.hotswap.adapter.evidence import google_evidence

    monkeypatch.setattr(google.auth, "default", lambda *a, **k: (AnonymousCredentials(), PROJECT))
    metrics = Metrics()
    ev = google_evidence(
        metrics.registry, time.time, max_concurrent=2, deadline_s=1.0, reread_s=5.0, max_reads_per_minute=60
    )
    try:
        assert ev is not None and ev.max_concurrent == 2
        assert metrics.value("hotswap_compute_reader_up") == 1
        reader = ev.read.__self__  # type: ignore[attr-defined]
        from google.cloud import compute_v1

        assert isinstance(reader.instances, compute_v1.InstancesClient)
        assert isinstance(reader.operations, compute_v1.ZoneOperationsClient)
    finally:
        if ev is not None:
            ev.close()
