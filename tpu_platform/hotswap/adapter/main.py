"""``python -m tpu_platform.hotswap``: load the config, start probes, metrics, leader election, the loop."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from types import FrameType
from typing import TYPE_CHECKING

from tpu_platform.hotswap.adapter import jsonlog
from tpu_platform.hotswap.adapter.config import (
    CONFIG_ENV,
    DEFAULT_CONFIG_PATH,
    Config,
    RuntimeConfig,
    load_config,
)
from tpu_platform.hotswap.core.settings import SettingsError

if TYPE_CHECKING:  # the I/O modules are imported when the process starts, not by the CLI's parse
    from tpu_platform.hotswap.adapter.compute_engine import Evidence, VmResetter
    from tpu_platform.hotswap.adapter.controller import Controller
    from tpu_platform.hotswap.adapter.elector import LeaderElector
    from tpu_platform.hotswap.adapter.kube import KubernetesApi
    from tpu_platform.hotswap.adapter.metrics import Metrics
    from tpu_platform.hotswap.adapter.probes import ProbeServer

log = logging.getLogger("hotswap")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m tpu_platform.hotswap", description="tpu-platform hotswap controller"
    )
    p.add_argument(
        "--config",
        default=None,
        help=f"config file (default: ${CONFIG_ENV} or {DEFAULT_CONFIG_PATH}; missing default = defaults)",
    )
    p.add_argument("--dry-run", action="store_true", default=None, help="decide and log, apply nothing")
    p.add_argument("--kubeconfig", default=None, help="kubeconfig when not running in a cluster")
    p.add_argument(
        "--identity", default=None, help="leader-election identity (default: $POD_NAME or hostname)"
    )
    p.add_argument("--lease-namespace", default=None, help="namespace of the leader-election Lease")
    p.add_argument("--metrics-port", type=int, default=None)
    p.add_argument("--health-port", type=int, default=None)
    p.add_argument("--log-level", default=None, choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    p.add_argument("--check-config", action="store_true", help="validate the config, print it, and exit")
    return p.parse_args(argv)


def resolve_config(args: argparse.Namespace) -> Config:
    """File (explicit path required to exist; the default path may be absent) plus flag overrides."""
    explicit = args.config or os.environ.get(CONFIG_ENV)
    cfg = load_config(explicit or DEFAULT_CONFIG_PATH, required=bool(explicit))
    overrides = {
        "dry_run": args.dry_run,
        "lease_namespace": args.lease_namespace,
        "metrics_port": args.metrics_port,
        "health_port": args.health_port,
        "log_level": args.log_level,
    }
    runtime = replace(cfg.runtime, **{key: v for key, v in overrides.items() if v is not None})
    return Config(cfg.settings, runtime)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        cfg = resolve_config(args)
    except SettingsError as err:
        jsonlog.configure("ERROR")
        log.error("invalid configuration", extra={"fields": {"field": err.field, "error": str(err)}})
        return 2
    jsonlog.configure(cfg.runtime.log_level)
    if args.check_config:
        import json

        print(json.dumps({**cfg.settings.to_dict(), "runtime": cfg.runtime.to_dict()}, indent=2))
        return 0
    return run(
        cfg,
        identity=args.identity or os.environ.get("POD_NAME") or socket.gethostname(),
        kubeconfig=args.kubeconfig,
    )


def _log_thread_death(args: threading.ExceptHookArgs) -> None:
    """A worker thread that dies is logged (liveness then fails and the pod is restarted)."""
    thread = args.thread.name if args.thread is not None else "?"
    log.error(
        "thread died",
        exc_info=(args.exc_type, args.exc_value, args.exc_traceback),  # type: ignore[arg-type]
        extra={"fields": {"thread": thread}},
    )


def run(cfg: Config, *, identity: str, kubeconfig: str | None) -> int:
    """Run until SIGTERM (exit 0) or until the lease is lost (exit 1, so Kubernetes restarts us).

    Order on the way out: stop deciding, let the write in flight return (the loop returns after
    it), stop the elector thread, then release the lease, once."""
    from kubernetes.config.config_exception import ConfigException

    from tpu_platform.hotswap.adapter.controller import Controller
    from tpu_platform.hotswap.adapter.kube import KubernetesApi
    from tpu_platform.hotswap.adapter.metrics import Metrics

    rt = cfg.runtime
    threading.excepthook = _log_thread_death
    metrics = Metrics()
    try:
        api = KubernetesApi.from_environment(kubeconfig, identity=identity, observe=metrics.api_request)
        # Leader election gets a client of its own (pool and rate limiter), as kube-controller-manager
        # does: a batch of writes queued behind the QPS limit must not delay a lease renewal.
        lease_api = KubernetesApi.from_environment(kubeconfig, identity=identity, observe=metrics.api_request)
    except (ConfigException, OSError, ValueError) as err:
        log.error("no cluster to talk to", extra={"fields": {"error": str(err), "kubeconfig": kubeconfig}})
        return 1
    stop = threading.Event()
    leader = _elector(lease_api, cfg, identity, metrics, stop)
    evidence, resetter = _compute_engine(cfg, metrics)
    controller = Controller(
        api, cfg, identity=identity, metrics=metrics, leader=leader, evidence=evidence, resetter=resetter
    )
    probes = _serve(rt, metrics, controller)
    if probes is None:
        return 2

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("stopping", extra={"fields": {"signal": signum}})
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    probes.start()
    log.info(
        "starting",
        extra={
            "fields": {
                "identity": identity,
                "dry_run": rt.dry_run,
                "settings": cfg.settings.to_dict(),
                "lease": f"{rt.effective_lease_namespace()}/{rt.lease_name}",
            }
        },
    )
    elector = threading.Thread(target=leader.run, args=(stop,), name="leader", daemon=True)
    elector.start()
    controller.watch_thread(elector)
    controller.start_caches(stop)
    controller.run(stop)
    elector.join(timeout=leader.request_timeout * 2 + rt.retry_period_seconds)
    lost = leader.lost.is_set()
    if not lost:
        leader.release()
    probes.stop()
    if evidence is not None:
        evidence.close()
    if lost:
        log.error("exiting after losing the lease", extra={"fields": {"identity": identity}})
        return 1
    return 0


def _elector(
    lease_api: KubernetesApi, cfg: Config, identity: str, metrics: Metrics, stop: threading.Event
) -> LeaderElector:
    """The elector on the runtime's Lease; losing the lease stops the process."""
    from tpu_platform.hotswap.adapter.elector import LeaderElector

    rt = cfg.runtime
    return LeaderElector(
        lease_api,
        namespace=rt.effective_lease_namespace(),
        name=rt.lease_name,
        identity=identity,
        lease_duration=rt.lease_duration_seconds,
        renew_deadline=rt.renew_deadline_seconds,
        retry_period=rt.retry_period_seconds,
        on_change=metrics.leadership,
        on_lost=stop.set,
    )


def _compute_engine(cfg: Config, metrics: Metrics) -> tuple[Evidence | None, VmResetter | None]:
    """Compute Engine's reader (with corroboration on) and the VM resetter (with resets on too)."""
    if not cfg.settings.compute_corroboration:
        return None, None
    from tpu_platform.hotswap.adapter.compute_engine import google_evidence, google_resetter

    rt = cfg.runtime
    evidence = google_evidence(
        metrics.registry,
        time.time,
        max_concurrent=rt.compute_max_concurrent_reads,
        deadline_s=rt.compute_read_deadline_seconds,
        reread_s=rt.compute_reread_seconds,
        max_reads_per_minute=rt.compute_max_reads_per_minute,
        endpoint=rt.compute_endpoint,
    )
    if evidence is None or not cfg.settings.reset_silent_vms:
        return evidence, None
    return evidence, google_resetter(time.time, metrics.registry, endpoint=rt.compute_endpoint)


def _serve(rt: RuntimeConfig, metrics: Metrics, controller: Controller) -> ProbeServer | None:
    """The metrics endpoint and the probes; None (logged with the fix) when a port is taken."""
    from prometheus_client import start_http_server

    from tpu_platform.hotswap.adapter.probes import ProbeServer

    try:
        start_http_server(rt.metrics_port, addr=rt.bind_address, registry=metrics.registry)
        return ProbeServer(
            rt.bind_address, rt.health_port, alive=controller.alive, ready=lambda: controller.synced
        )
    except OSError as err:
        log.error(
            "cannot listen: is another process using the metrics or probe port?",
            extra={
                "fields": {
                    "metrics_port": rt.metrics_port,
                    "health_port": rt.health_port,
                    "bind_address": rt.bind_address,
                    "error": str(err),
                    "fix": "free the port, or set runtime.metrics_port / runtime.health_port",
                }
            },
        )
        return None
