"""The real hotswap controller process, started as its image starts it, with the RBAC the stack renders.

The image runs ``python -m tpu_platform.hotswap`` with ``HOTSWAP_CONFIG`` pointing at the mounted
ConfigMap and ``POD_NAME``/``POD_NAMESPACE`` from the downward API (``tpu_platform/hotswap/Dockerfile``
and the plan's Deployment). Here the same module runs from this checkout with the plan's ConfigMap
as its config file and a kubeconfig holding a TokenRequest token of the plan's ServiceAccount, so
every call it makes is authorized by the plan's Roles and judged by the plan's admission policies,
exactly as in the cluster, and never by an admin credential.

Compute Engine is the live cluster's double (``compute_double``): the config's
``runtime.compute_endpoint`` names it, as a Private Service Connect endpoint would be named, and
``GCE_METADATA_HOST``/``GCE_METADATA_IP`` make it the metadata server google.auth mints the
Application Default Credentials from, as the GKE metadata server does for Workload Identity.
"""

from __future__ import annotations

import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

from .addons import service_account_token
from .cluster import LiveCluster
from .process import Process, free_port, https_ok


@dataclass
class Controller:
    process: Process
    namespace: str
    service_account: str
    kubeconfig: Path
    metrics_url: str

    def metric(self, name: str, labels: dict[str, str] | None = None) -> float:
        """A sample of the controller's /metrics (0 if absent), as Prometheus would scrape it."""
        with urllib.request.urlopen(self.metrics_url, timeout=5) as response:
            text = response.read().decode()
        want = labels or {}
        return sum(
            sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
            if sample.name == name and all(sample.labels.get(k) == v for k, v in want.items())
        )


def _planned(plan: dict[str, Any], kind: str, name_contains: str = "") -> list[dict[str, Any]]:
    return [
        r["inputs"]
        for r in plan["resources"]
        if r["type"].endswith(f":{kind}") and name_contains in r["inputs"]["metadata"]["name"]
    ]


def controller_deployment(plan: dict[str, Any]) -> dict[str, Any]:
    found = [d for d in _planned(plan, "Deployment") if d["metadata"]["name"] == "hotswap-controller"]
    if len(found) != 1:
        raise KeyError("plan has no single hotswap-controller Deployment")
    return found[0]


def start_controller(
    live: LiveCluster, identity: str = "hotswap-live-0", extra_args: tuple[str, ...] = ()
) -> Controller:
    """One replica of the controller, with its Deployment's env and args and its ConfigMap."""
    installed = live.current
    assert installed is not None, "install a stack first"
    deployment = controller_deployment(installed.plan)
    namespace = deployment["metadata"]["namespace"]
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    volume = next(v for v in pod["volumes"] if "configMap" in v)
    config_map = next(
        c
        for c in _planned(installed.plan, "ConfigMap")
        if c["metadata"]["name"] == volume["configMap"]["name"]
    )
    workdir = live.workdir / identity
    workdir.mkdir(parents=True, exist_ok=True)
    config_path = workdir / "config.yaml"
    config = yaml.safe_load(config_map["data"]["config.yaml"])
    # As in the pod, but its ports on loopback (the flags below choose free ones) and Compute Engine
    # at the double.
    config["runtime"]["bind_address"] = "127.0.0.1"
    config["runtime"]["compute_endpoint"] = live.compute.url
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    service_account = pod["serviceAccountName"]
    token = service_account_token(live.admin, namespace, service_account)
    kubeconfig = live.cp.token_kubeconfig(identity, token)
    metrics, health = free_port(), free_port()
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONUNBUFFERED": "1",
        "POD_NAME": identity,
        "POD_NAMESPACE": namespace,
        **{e["name"]: e["value"] for e in container.get("env", []) if "value" in e},
        **live.compute.env(),
        # No gcloud credentials of the machine running the tier: ADC from the metadata server only.
        "CLOUDSDK_CONFIG": str(workdir / "gcloud"),
    }
    env["HOTSWAP_CONFIG"] = str(config_path)  # the ConfigMap's mount path, here a file
    argv = [
        sys.executable,
        "-m",
        "tpu_platform.hotswap",
        *container.get("args", []),
        f"--kubeconfig={kubeconfig}",
        f"--metrics-port={metrics}",
        f"--health-port={health}",
        *extra_args,
    ]
    proc = live.cp.group.add(Process(identity, argv, live.workdir / "logs" / f"{identity}.log", env=env))
    proc.start().wait_ready(https_ok(f"http://127.0.0.1:{health}/healthz"), 60)
    return Controller(proc, namespace, service_account, kubeconfig, f"http://127.0.0.1:{metrics}/metrics")
