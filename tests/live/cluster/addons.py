"""JobSet and Kueue from their charts: CRDs, RBAC, config and webhooks applied, the binary run locally.

Each controller runs as the chart's own ServiceAccount (a TokenRequest token in its kubeconfig), so
it has exactly the RBAC its chart grants, with the chart's container arguments and the chart's
Configuration; only serving addresses, certificate paths and leader election change for a local
process. Kueue with ``internalCertManagement.enable: false`` reads its metrics certificate from
``/etc/kueue/metrics/certs`` and its visibility server's from ``/visibility`` (kueue v0.19.2
``cmd/kueue/main.go``, ``pkg/visibility/server.go``): the process runs in a private mount namespace
(``unshare --mount``) in which the session's certificates are bind-mounted on those two paths, so
nothing is written outside the session's folder but the two empty mount points.
"""

from __future__ import annotations

import functools
import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from . import charts
from .controlplane import ControlPlane
from .kube import ApiError, Kube, wait_for
from .process import Process, StartError, free_port, https_ok, port_open

KUEUE_CERT_PATHS = (Path("/etc/kueue/metrics/certs"), Path("/visibility"))


@dataclass
class Addon:
    """One controller started from its chart."""

    name: str
    chart: charts.RenderedChart
    process: Process
    webhook_url: str


def namespace_obj(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def service_account_token(kube: Kube, namespace: str, name: str, seconds: int = 86400) -> str:
    """A bound token for ``namespace/name`` from the TokenRequest API (as the kubelet would mount)."""
    path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": seconds},
    }
    return str(kube.request("POST", path, body)["status"]["token"])


def crd_established(kube: Kube, name: str) -> bool:
    """Whether the API server serves CRD ``name`` (condition Established); raises if it is absent."""
    got = kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
    conds = (got.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conds)


def install_crds(kube: Kube, crds: list[dict[str, Any]], webhook_url: str, ca_pem: bytes) -> None:
    for crd in crds:
        kube.apply(charts.local_conversion(crd, webhook_url, ca_pem))
    for crd in crds:
        name = crd["metadata"]["name"]
        wait_for(f"CRD {name} established", functools.partial(crd_established, kube, name), 60)


def _config_from_chart(chart: charts.RenderedChart) -> dict[str, Any]:
    maps = [m for m in chart.find("ConfigMap") if "controller_manager_config.yaml" in (m.get("data") or {})]
    if len(maps) != 1:
        raise ValueError(f"{chart.release}: expected one ConfigMap with controller_manager_config.yaml")
    return dict(yaml.safe_load(maps[0]["data"]["controller_manager_config.yaml"]))


def _local_args(container: dict[str, Any], config_path: Path, kubeconfig: Path) -> list[str]:
    args = [a for a in container.get("args", []) if not a.startswith("--config=")]
    return [*args, f"--config={config_path}", f"--kubeconfig={kubeconfig}"]


PORT_ATTEMPTS = 3
"""Starts of a controller whose picked port another process took first."""


@dataclass(frozen=True)
class Serving:
    """Where a local controller serves: its webhooks (a URL the API server calls) and health."""

    webhook_port: int
    health_port: int
    visibility_port: int  # Kueue's visibility API server (an aggregated API)

    @property
    def webhook_url(self) -> str:
        return f"https://127.0.0.1:{self.webhook_port}"

    @classmethod
    def pick(cls) -> Serving:
        return cls(free_port(), free_port(), free_port())


def start_addon(
    cp: ControlPlane,
    kube: Kube,
    binary: Path,
    helm: Path,
    chart_inputs: dict[str, Any],
    *,
    kube_version: str,
) -> Addon:
    """Render, apply, start and register the webhooks of one chart's controller."""
    chart = charts.render(helm, chart_inputs, chart_workdir(cp, chart_inputs), kube_version)
    wait_for(
        f"namespace {chart.namespace} not terminating", lambda: _not_terminating(kube, chart.namespace), 120
    )
    kube.apply(namespace_obj(chart.namespace))
    ca_pem = cp.pki.pem()
    for attempt in range(1, PORT_ATTEMPTS + 1):
        # A free port is picked, then bound by the controller: another process may take it between.
        serving = Serving.pick()
        install_crds(kube, chart.crds, serving.webhook_url, ca_pem)
        kube.apply_all(o for o in chart.applied if o.get("kind") != "APIService")
        try:
            addon = run_controller(cp, kube, binary, chart, serving)
        except StartError as err:
            if "address already in use" not in str(err) or attempt == PORT_ATTEMPTS:
                raise
            continue
        kube.apply_all(charts.local_webhooks(chart.webhooks, serving.webhook_url, ca_pem))
        return addon
    raise AssertionError("unreachable: the last attempt returns or raises")


def _not_terminating(kube: Kube, name: str) -> bool:
    """Absent or live: applying a terminating namespace succeeds, and what goes into it then goes
    with it when it finishes."""
    try:
        namespace = kube.get("v1", "Namespace", name)
    except ApiError as err:
        if err.status == 404:
            return True
        raise
    return not namespace["metadata"].get("deletionTimestamp")


def chart_workdir(cp: ControlPlane, chart_inputs: dict[str, Any]) -> Path:
    workdir = cp.workdir / str(chart_inputs["name"])
    workdir.mkdir(parents=True, exist_ok=True)
    return workdir


def run_controller(
    cp: ControlPlane, kube: Kube, binary: Path, chart: charts.RenderedChart, serving: Serving
) -> Addon:
    """The chart's controller as a local process, once its CRDs, RBAC and ServiceAccount exist:
    the chart's arguments and Configuration, serving on ``serving``, ready when this returns."""
    name = chart.release
    workdir = cp.workdir / name
    certs = workdir / "certs"
    certs.mkdir(parents=True, exist_ok=True)
    # The aggregator checks an APIService's certificate for <service>.<namespace>.svc.
    services = tuple(f"{s['metadata']['name']}.{chart.namespace}.svc" for s in chart.find("Service"))
    pair = cp.pki.issue(
        f"{name}-serving", common_name=f"{name}-webhook", hosts=("127.0.0.1", *services), server=True
    )
    for src, dst in ((pair.cert, "tls.crt"), (pair.key, "tls.key")):
        (certs / dst).write_bytes(src.read_bytes())
    config = _config_from_chart(chart)
    config["webhook"] = {
        **(config.get("webhook") or {}),
        "host": "127.0.0.1",
        "port": serving.webhook_port,
        "certDir": str(certs),
    }
    health = f"127.0.0.1:{serving.health_port}"
    config["health"] = {**(config.get("health") or {}), "healthProbeBindAddress": health}
    config["metrics"] = {**(config.get("metrics") or {}), "bindAddress": "0"}
    config["leaderElection"] = {**(config.get("leaderElection") or {}), "leaderElect": False}
    config["internalCertManagement"] = {"enable": False}
    if name == "kueue":
        config["visibilityServer"] = {"bindAddress": "127.0.0.1", "bindPort": serving.visibility_port}
    config_path = workdir / "config.yaml"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    token = service_account_token(kube, chart.namespace, chart.service_account())
    kubeconfig = cp.token_kubeconfig(f"{name}-controller", token)
    argv = [str(binary), *_local_args(chart.deployment_container(), config_path, kubeconfig)]
    if name == "kueue":
        argv = _in_mount_namespace(argv, certs)
    env = {"PATH": os.environ.get("PATH", ""), "POD_NAMESPACE": chart.namespace, "NAMESPACE": chart.namespace}
    proc = cp.group.add(Process(name, argv, cp.workdir / "logs" / f"{name}.log", env=env))
    proc.start()
    try:
        proc.wait_ready(https_ok(f"http://127.0.0.1:{serving.health_port}/readyz"), 120)
        proc.wait_ready(port_open(serving.webhook_port), 60)
    except StartError:
        cp.group.processes.remove(proc)  # exited: nothing of it to stop
        raise
    return Addon(name, chart, proc, serving.webhook_url)


def _in_mount_namespace(argv: list[str], certs: Path) -> list[str]:
    """Run ``argv`` with ``certs`` bind-mounted on Kueue's fixed certificate paths, privately."""
    for path in KUEUE_CERT_PATHS:
        path.mkdir(parents=True, exist_ok=True)
    mounts = " && ".join(
        f"mount --bind {shlex.quote(str(certs))} {shlex.quote(str(p))}" for p in KUEUE_CERT_PATHS
    )
    script = f"{mounts} && exec {shlex.join(argv)}"
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]


def chart_inputs_from_plan(plan: dict[str, Any], release: str) -> dict[str, Any]:
    """The inputs of the plan's ``kubernetes:helm.sh/v4:Chart`` whose release name is ``release``."""
    for res in plan.get("resources", []):
        if res.get("type") == "kubernetes:helm.sh/v4:Chart" and res.get("inputs", {}).get("name") == release:
            return dict(json.loads(json.dumps(res["inputs"])))
    raise KeyError(f"plan of stack {plan.get('stack')}: no Chart with release name {release!r}")
