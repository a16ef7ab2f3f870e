"""A small TPU cluster seeded into the API double, and controllers wired to it with fast timings.

Pools ``a`` and ``b`` of four 4x4 nodes; the managed JobSets ``high`` (on a) and ``low`` (on b) run
one pod per node. :func:`fail_pool` makes a node of a pool NotReady long enough ago that the next
reconcile declares the pool unhealthy, taints it and fails ``high`` fast.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from kubernetes import client

from tests.kubeapi import ApiDouble, Seeder
from tests.kubeapi.objects import jobset_obj, node_obj, pod_obj
from tpu_platform.hotswap.adapter.config import Config, RuntimeConfig
from tpu_platform.hotswap.adapter.controller import Controller
from tpu_platform.hotswap.adapter.elector import LeaderElector
from tpu_platform.hotswap.adapter.kube import KubernetesApi, configure
from tpu_platform.hotswap.adapter.metrics import Metrics
from tpu_platform.hotswap.core import Settings

HIGH, LOW = 2_000_000, 1_000_000
LEASE = ("hotswap", "tpu-hotswap")
FAST = RuntimeConfig(
    lease_duration_seconds=3.0,
    renew_deadline_seconds=2.0,
    retry_period_seconds=0.25,
    reconcile_interval_seconds=0.2,
    min_reconcile_gap_seconds=0.05,
    lease_namespace=LEASE[0],
    lease_name=LEASE[1],
    watch_timeout_seconds=5,
)


def seed_cluster(d: ApiDouble, *, pools: tuple[str, ...] = ("a", "b")) -> Seeder:
    seed = Seeder(d)
    now = time.time()
    for pool in pools:
        for i in range(4):
            seed.node(node_obj(f"{pool}-{i}", pool, since=now - 9000))
    for name, pool, prio in (("high", "a", HIGH), ("low", "b", LOW)):
        if pool not in pools:
            continue
        seed.jobset(jobset_obj(name))
        for i in range(4):
            seed.pod(
                pod_obj(
                    f"{name}-{i}",
                    name,
                    job=f"{name}-slice-0",
                    node=f"{pool}-{i}",
                    priority=prio,
                    started=now - 3000,
                )
            )
    return seed


def fail_pool(seed: Seeder, pool: str, *, node: int = 1, ago: float = 60.0) -> None:
    seed.set_node_ready(f"{pool}-{node}", "Unknown", time.time() - ago)


def kube(
    d: ApiDouble,
    identity: str,
    metrics: Metrics | None = None,
    request_timeout: tuple[float, float] = (1.0, 2.0),
) -> KubernetesApi:
    cfg = configure(client.Configuration(host=d.url))
    return KubernetesApi(
        client.ApiClient(cfg),
        request_timeout=request_timeout,
        identity=identity,
        observe=metrics.api_request if metrics else None,
    )


def elector(api: KubernetesApi, identity: str, rt: RuntimeConfig = FAST, **kw: object) -> LeaderElector:
    return LeaderElector(
        api,
        namespace=rt.lease_namespace,
        name=rt.lease_name,
        identity=identity,
        lease_duration=rt.lease_duration_seconds,
        renew_deadline=rt.renew_deadline_seconds,
        retry_period=rt.retry_period_seconds,
        **kw,  # type: ignore[arg-type]
    )


def controller(
    d: ApiDouble,
    identity: str = "hotswap-0",
    *,
    rt: RuntimeConfig = FAST,
    leader: bool = True,
    request_timeout: tuple[float, float] = (1.0, 2.0),
) -> Controller:
    """``request_timeout``: a test whose counts must not depend on how loaded the machine is passes a
    bound far above any answer the double gives (its faults are injected, not timed)."""
    metrics = Metrics()
    api = kube(d, identity, metrics, request_timeout)
    le = elector(api, identity, rt, on_change=metrics.leadership) if leader else None
    return Controller(api, Config(Settings(), rt), identity=identity, metrics=metrics, leader=le)


def wait_for(check: Callable[[], object], timeout: float = 10.0, every: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(every)
    return False
