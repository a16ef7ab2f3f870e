"""The dashboard's queries: parsed by Prometheus' own parser (``promtool check rules``) and evaluated by
a real Prometheus (Debian's ``prometheus``) on 127.0.0.1 scraping the controller's real metrics
endpoint (``Metrics`` served by prometheus_client, as ``python -m tpu_platform.hotswap`` serves it).

Kueue and JobSet cannot run here, so two more loopback endpoints publish series with exactly the
names, types and label names of kueue v0.19.2 ``pkg/metrics/metrics.go`` and jobset v0.12.0
``pkg/metrics/metrics.go``. Each target gets the ``cluster`` and ``namespace`` labels Managed
Prometheus attaches, so the queries run unchanged.
"""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from tests.monitoring import promtool
from tests.monitoring.test_alert_rules import dev
from tpu_platform.hotswap.adapter.metrics import Metrics
from tpu_platform.monitoring import dashboard
from tpu_platform.monitoring.alerts import cloud_rules
from tpu_platform.plan import list_stacks, load_stack_config, parse_stack_config
from tpu_platform.plan.stacks import stack_file


def _recording_rules(queries: list[str]) -> dict[str, Any]:
    return {
        "groups": [
            {
                "name": "dashboard",
                "rules": [{"record": f"dashboard:q{i}", "expr": q} for i, q in enumerate(queries)],
            }
        ]
    }


@pytest.mark.parametrize("stack", list_stacks())
def test_every_dashboard_query_parses_as_promql(stack: str, tmp_path: Path) -> None:
    cfg = parse_stack_config(load_stack_config(stack_file(stack)))
    queries = dashboard.queries(cfg)
    assert queries
    result = promtool.check_rules(tmp_path, _recording_rules(queries))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(queries)} rules found" in result.stdout


def test_the_parser_rejects_a_broken_query(tmp_path: Path) -> None:
    result = promtool.check_rules(tmp_path, _recording_rules(["sum(rate(hotswap_is_leader[5m])"]))
    assert result.returncode != 0


def test_the_dashboard_json_carries_every_query() -> None:
    cfg = dev()
    doc = dashboard.dashboard(cfg)
    found = [
        ds["timeSeriesQuery"]["prometheusQuery"]
        for tile in doc["mosaicLayout"]["tiles"]
        for ds in tile["widget"]["xyChart"]["dataSets"]
    ]
    assert found == dashboard.queries(cfg)
    tiles = doc["mosaicLayout"]["tiles"]
    assert all(t["xPos"] + t["width"] <= doc["mosaicLayout"]["columns"] for t in tiles)
    assert len({(t["xPos"], t["yPos"]) for t in tiles}) == len(tiles)


# --- a real Prometheus ----------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Exporters:
    """The controller's registry and stand-ins for Kueue's and JobSet's, kept moving by a thread."""

    def __init__(self) -> None:
        self.hotswap = Metrics()
        self.kueue = CollectorRegistry()
        self.jobset = CollectorRegistry()
        cq = ["cohort", "cluster_queue", "flavor", "resource", "replica_role"]
        self.pending = Gauge(
            "kueue_pending_workloads", "", ["cluster_queue", "status", "replica_role"], registry=self.kueue
        )
        self.usage = Gauge("kueue_cluster_queue_resource_usage", "", cq, registry=self.kueue)
        self.nominal = Gauge("kueue_cluster_queue_nominal_quota", "", cq, registry=self.kueue)
        self.wait = Histogram(
            "kueue_admission_wait_time_seconds",
            "",
            ["cluster_queue", "priority_class", "replica_role"],
            registry=self.kueue,
        )
        self.preempted = Counter(
            "kueue_preempted_workloads",
            "",
            ["preempting_cluster_queue", "reason", "replica_role"],
            registry=self.kueue,
        )
        self.failed = Counter("jobset_failed", "", ["jobset_name", "namespace"], registry=self.jobset)
        self.completed = Counter("jobset_completed", "", ["jobset_name", "namespace"], registry=self.jobset)
        self.stop = threading.Event()

    def tick(self) -> None:
        h = self.hotswap
        h.is_leader.set(1)
        h.unhealthy_pools.set(1)
        h.held.set(0)
        h.detections.inc()
        h.recoveries.inc()
        h.recovery_seconds.observe(95)
        h.preemptions.inc()
        h.preempted_slices.inc(2)
        h.reconciles.labels(result="applied").inc()
        h.api_request("list", "pods", 200, 0.01)
        h.api_request("patch", "nodes", 500, 0.02)
        labels = {
            "cohort": "dev",
            "flavor": "tpu-v6e-4x4",
            "resource": "google.com/tpu",
            "replica_role": "leader",
        }
        self.usage.labels(cluster_queue="research-cq", **labels).set(32)
        self.nominal.labels(cluster_queue="research-cq", **labels).set(16)
        self.pending.labels(cluster_queue="research-cq", status="active", replica_role="leader").set(2)
        self.wait.labels(
            cluster_queue="research-cq", priority_class="high-priority-job", replica_role="leader"
        ).observe(42)
        self.preempted.labels(
            preempting_cluster_queue="research-cq", reason="InClusterQueue", replica_role="leader"
        ).inc()
        self.failed.labels(jobset_name="a", namespace="research").inc()
        self.completed.labels(jobset_name="b", namespace="research").inc()

    def run(self) -> None:
        while not self.stop.wait(0.3):
            self.tick()


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read())


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[tuple[str, Exporters]]:
    binary = promtool.binary("prometheus")
    cfg = dev()
    ex = Exporters()
    jobs = []
    servers = []
    for job, registry, namespace in (
        ("hotswap", ex.hotswap.registry, cfg.hotswap.namespace),
        ("kueue", ex.kueue, "kueue-system"),
        ("jobset", ex.jobset, "jobset-system"),
    ):
        server, _ = start_http_server(0, addr="127.0.0.1", registry=registry)
        servers.append(server)
        jobs.append(
            {
                "job_name": job,
                "scrape_interval": "1s",
                "static_configs": [
                    {
                        "targets": [f"127.0.0.1:{server.server_port}"],
                        "labels": {"cluster": cfg.cluster.name, "namespace": namespace},
                    }
                ],
            }
        )
    port = _free_port()
    promtool.write_yaml(
        tmp_path / "prometheus.yml", {"global": {"scrape_interval": "1s"}, "scrape_configs": jobs}
    )
    proc = subprocess.Popen(
        [
            binary,
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    ticker = threading.Thread(target=ex.run, daemon=True)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{url}/-/ready", timeout=2).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("prometheus did not become ready") from None
                time.sleep(0.2)
        ex.tick()
        ticker.start()
        yield url, ex
    finally:
        ex.stop.set()
        proc.terminate()
        proc.wait(timeout=30)
        for server in servers:
            server.shutdown()


def _query(url: str, q: str) -> dict[str, Any]:
    doc: dict[str, Any] = _get(f"{url}/api/v1/query?{urllib.parse.urlencode({'query': q})}")
    return doc


def test_a_real_prometheus_evaluates_every_query_with_data(prometheus: tuple[str, Exporters]) -> None:
    url, _ = prometheus
    queries = dashboard.queries(dev())
    deadline = time.monotonic() + 60
    empty = queries
    while empty and time.monotonic() < deadline:
        time.sleep(1)
        results = {q: _query(url, q) for q in empty}
        assert all(r["status"] == "success" for r in results.values()), results
        empty = [q for q, r in results.items() if not r["data"]["result"]]
    assert not empty, f"queries that found no series: {empty}"
    ratio = _query(url, dashboard.queries(dev())[-2])["data"]["result"][0]["value"][1]
    assert float(ratio) == pytest.approx(0.5, abs=0.1)  # one 500 for every 200


def test_a_real_prometheus_evaluates_the_cloud_alert_queries(prometheus: tuple[str, Exporters]) -> None:
    """The scoped rules Cloud Monitoring receives run, and those whose condition holds return series."""
    url, _ = prometheus
    rules = {r.name: r.expr for r in cloud_rules(dev())}
    deadline = time.monotonic() + 60
    want = {
        "KueueQueueAtQuota",
        "KueueWorkloadsPendingTooLong",
        "HotswapPoolUnhealthyTooLong",
        "HotswapApiErrors",
    }
    found: set[str] = set()
    while time.monotonic() < deadline and found != want:
        time.sleep(1)
        found = set()
        for name, expr in rules.items():
            result = _query(url, expr)
            assert result["status"] == "success", (name, result)
            if result["data"]["result"]:
                found.add(name)
    # A replica leads (hotswap_is_leader 1) and high-priority waits are short: those two stay quiet.
    assert found == want
