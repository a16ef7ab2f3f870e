"""Two live controller processes against one API double: never both writing.

The double judges every write by the Lease as it stands at that moment on the server's clock
(holder and ``renewTime + leaseDurationSeconds``), so a write by a replica that is not the
unexpired holder counts, whatever the replicas believe.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

from tests.hotswap.double_world import LEASE, fail_pool, seed_cluster, wait_for
from tests.hotswap.replicas import Replica, write_config
from tests.kubeapi import ApiDouble, ApiStatus, Fault, Seeder
from tests.kubeapi.objects import lease_obj
from tpu_platform.hotswap.adapter import main as hotswap_main
from tpu_platform.hotswap.adapter.config import Config, RuntimeConfig
from tpu_platform.hotswap.core import Settings
from tpu_platform.hotswap.core import constants as k

RUNTIME = {
    "lease_namespace": LEASE[0],
    "lease_name": LEASE[1],
    "lease_duration_seconds": 3.0,
    "renew_deadline_seconds": 2.0,
    "retry_period_seconds": 0.25,
    "reconcile_interval_seconds": 0.2,
    "min_reconcile_gap_seconds": 0.05,
    "watch_timeout_seconds": 10,
    "metrics_port": 0,
    "health_port": 0,
    "bind_address": "127.0.0.1",
}
SETTINGS = {"unhealthy_after_seconds": 1, "dead_node_confirm_seconds": 1}


def tainted(seed: Seeder, pool: str) -> bool:
    nodes = seed.list("nodes")
    return any(
        t["key"] == k.UNHEALTHY_TAINT_KEY
        for n in nodes
        if n["metadata"]["labels"][k.NODEPOOL_LABEL] == pool
        for t in n["spec"].get("taints") or []
    )


def holder(seed: Seeder) -> str:
    try:
        lease = seed.get("leases", LEASE[1], LEASE[0])
    except ApiStatus:
        return ""
    return str(lease["spec"].get("holderIdentity") or "")


def test_two_replicas_never_both_write_across_handover_and_takeover(tmp_path: Path) -> None:
    """Waits are upper bounds for a loaded 2-core CI machine (process start-up dominates them)."""
    with ApiDouble(bookmark_interval=0.5, guard_lease=LEASE) as d:
        seed = seed_cluster(d)
        kc = d.kubeconfig(str(tmp_path / "kubeconfig"))
        cfg = write_config(tmp_path / "config.yaml", settings=SETTINGS, runtime=RUNTIME)
        replicas = {i: Replica(f"hotswap-{i}", kubeconfig=kc, config=cfg, log_dir=tmp_path) for i in (0, 1)}
        try:
            for r in replicas.values():
                r.start()
            assert wait_for(lambda: holder(seed) in ("hotswap-0", "hotswap-1"), 60)
            first = holder(seed)
            fail_pool(seed, "a")
            assert wait_for(lambda: tainted(seed, "a"), 15), "the leader acts"
            # SIGTERM: the leader releases the lease once, the standby takes it at once.
            leader = next(r for r in replicas.values() if r.identity == first)
            leader.sigterm()
            assert leader.proc is not None and leader.proc.wait(15) == 0
            assert wait_for(lambda: holder(seed) not in ("", first), 10), (
                "handed over without waiting for expiry"
            )
            second = holder(seed)
            leader.start()
            fail_pool(seed, "b")
            assert wait_for(lambda: tainted(seed, "b"), 15), "the new leader acts"
            # The lease taken by another holder (after refusing the leader's renewals for a lease
            # duration, as an unreachable API would): the leader stops writing and exits with 1.
            # The standby is kept off the Lease meanwhile too, so the intruder, not the standby, is
            # what the leader finds when it can read again (else the test races the renew deadline).
            rules = [
                d.faults.add(Fault(status=500, resources=("leases",), identity=who, times=None))
                for who in (second, first)
            ]
            time.sleep(3.5)
            seed.update("leases", lease_obj(LEASE[1], LEASE[0], "intruder", time.time(), duration=3))
            for rule in rules:
                d.faults.remove(rule)
            loser = next(r for r in replicas.values() if r.identity == second)
            assert loser.proc is not None and loser.proc.wait(15) == 1, "a lost lease ends the process"
            assert wait_for(lambda: holder(seed) == first, 60), "the other replica leads after expiry"
        finally:
            for r in replicas.values():
                r.stop()
        assert d.writes_without_lease == [], [
            (w.request.identity, w.request.verb, w.request.resource) for w in d.writes_without_lease
        ]
        releases = [w for w in d.writes(resource="leases") if w.status == 409]
        assert len(releases) <= 2, "lease conflicts only from races between candidates"
        for r in replicas.values():
            logs = r.logs()
            assert not [line for line in logs if line.get("msg") == "thread died"]
            assert not [line for line in logs if "Traceback" in str(line.get("raw", ""))]


def test_a_busy_probe_port_is_a_clear_error_not_a_traceback(tmp_path: Path, caplog: object) -> None:
    with ApiDouble() as d, socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        kc = d.kubeconfig(str(tmp_path / "kubeconfig"))
        cfg = Config(Settings(), RuntimeConfig(metrics_port=0, health_port=port, bind_address="127.0.0.1"))
        assert hotswap_main.run(cfg, identity="x", kubeconfig=kc) == 2
        assert not d.served, "nothing ran: no request reached the API"
