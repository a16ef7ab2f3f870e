"""``tpu-platform status``: what a running platform is doing, read-only.

Per slice pool: shape, Ready nodes and the hotswap controller's state (healthy, suspect, unhealthy,
recovering; since when; why). Per ClusterQueue: nominal, used and borrowed chips per flavor,
admitted and pending workloads with priority and time waiting (Kueue's visibility API, else Workload
objects). Managed JobSets: where they run, restarts, last preemption and why. The controller: who
leads, its last Lease renewal, its decisions of the last hour from its Events. Only GET and LIST
requests.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from ..hotswap.adapter.config import DEFAULT_LEASE_NAMESPACE, RuntimeConfig

HELP = "show slice pools, queues, managed JobSets and the controller of a live cluster (read-only)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then ~/.kube/config)")
    parser.add_argument("--context", help="kubeconfig context (default: the current context)")
    parser.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default: text)"
    )
    parser.add_argument(
        "--controller-namespace",
        default=DEFAULT_LEASE_NAMESPACE,
        help=f"namespace of the hotswap controller's Lease (default: {DEFAULT_LEASE_NAMESPACE})",
    )
    parser.add_argument(
        "--lease-name",
        default=RuntimeConfig().lease_name,
        help=f"the controller's Lease name (default: {RuntimeConfig().lease_name})",
    )


def where_it_looked(kubeconfig: str | None) -> str:
    """The files the Kubernetes client read, in its order (an explicit file, else $KUBECONFIG's
    list, else ~/.kube/config; kubernetes-client ``config/kube_config.py``, KUBE_CONFIG_DEFAULT_LOCATION),
    after the in-cluster service account when no file was named."""
    if kubeconfig:
        return kubeconfig
    files = os.environ.get("KUBECONFIG", "").split(os.pathsep)
    named = [f for f in files if f] or [os.path.expanduser("~/.kube/config")]
    return "the in-cluster service account, then " + ", ".join(named)


def run(args: argparse.Namespace) -> int:
    from kubernetes.config.config_exception import ConfigException

    from ..status import build_status, render_json, render_text
    from ..status.fetch import ReadError, client_getter, read_cluster

    try:
        get = client_getter(args.kubeconfig, args.context)
    except (ConfigException, OSError) as err:
        print(f"tpu-platform status: no cluster to read: {err}", file=sys.stderr)
        print(f"tpu-platform status: looked in {where_it_looked(args.kubeconfig)}", file=sys.stderr)
        print(
            "tpu-platform status: for a GKE cluster: gcloud container clusters get-credentials CLUSTER "
            "--location LOCATION --project PROJECT (then --context, or the current context); else pass "
            "--kubeconfig FILE",
            file=sys.stderr,
        )
        return 2
    try:
        objects = read_cluster(get, lease_namespace=args.controller_namespace, lease_name=args.lease_name)
    except ReadError as err:
        print(f"tpu-platform status: {err}", file=sys.stderr)
        return 1
    status = build_status(objects, time.time())
    sys.stdout.write(render_json(status) if args.format == "json" else render_text(status))
    return 0
