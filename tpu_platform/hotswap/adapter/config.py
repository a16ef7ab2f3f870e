"""The controller's config file: decision settings at the top level, process options under ``runtime``.

Read once at start (:func:`load_config`): the settings by the same :class:`Settings` model the stack
file's ``hotswap.settings`` is read with, the process options by :class:`RuntimeConfig`.

Example (what the Pulumi component renders into the ConfigMap)::

    unhealthy_after_seconds: 10
    healthy_after_seconds: 120
    runtime:
      dry_run: false
      metrics_port: 8080
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from tpu_platform.hotswap.core.settings import Settings, SettingsError, settings_from_mapping

DEFAULT_CONFIG_PATH = "/etc/hotswap/config.yaml"
CONFIG_ENV = "HOTSWAP_CONFIG"
DEFAULT_LEASE_NAMESPACE = "tpu-hotswap"
RENDER_WHEN_SET = "when_set"
"""Field metadata ``render``: the field is left out of a rendered config while at its default."""
_ENDPOINT = re.compile(
    r"^(?:(https?)://)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)(?::([0-9]{1,5}))?$"
)
"""``[http[s]://]host[:port]``: google-cloud-compute 1.48.0 reads a lowercase ``http://`` or
``https://`` prefix as the scheme and prepends ``https://`` to anything else
(``compute_v1/services/instances/transports/rest_base.py``, ``_BaseInstancesRestTransport.__init__``:
``re.match("^(?P<scheme>http(?:s)?://)?(?P<host>.*)$", host)``), then sends ``f"{host}{uri}"`` with
``uri`` starting ``/compute/v1/`` (``rest.py``, ``_get_response``), so a path, query or other scheme
would be sent as part of every URL."""


@dataclass(frozen=True, slots=True)
class RuntimeConfig:
    """Process options. Leader-election timings are client-go's defaults."""

    dry_run: bool = field(default=False, metadata={"doc": "Decide and log; apply nothing."})
    reconcile_interval_seconds: float = field(
        default=2.0,
        metadata={
            "doc": "Upper bound between reconciles; watch events trigger one sooner. Time-based "
            "transitions (T_bad, T_good) are noticed within this interval."
        },
    )
    min_reconcile_gap_seconds: float = field(
        default=0.2, metadata={"doc": "Debounce: bursts of watch events cause one reconcile."}
    )
    metrics_port: int = field(default=8080, metadata={"doc": "Prometheus /metrics port."})
    health_port: int = field(default=8081, metadata={"doc": "/healthz and /readyz port."})
    bind_address: str = field(default="0.0.0.0", metadata={"doc": "Address the HTTP servers bind."})
    lease_name: str = field(default="tpu-hotswap", metadata={"doc": "coordination.k8s.io/v1 Lease name."})
    lease_namespace: str = field(
        default="", metadata={"doc": "Lease namespace; empty: $POD_NAMESPACE, else tpu-hotswap."}
    )
    lease_duration_seconds: float = field(default=15.0, metadata={"doc": "client-go default."})
    renew_deadline_seconds: float = field(default=10.0, metadata={"doc": "client-go default."})
    retry_period_seconds: float = field(default=2.0, metadata={"doc": "client-go default."})
    pod_label_selector: str = field(
        default="jobset.sigs.k8s.io/jobset-name",
        metadata={"doc": "Only JobSet pods are watched (pods without the label cannot be managed)."},
    )
    node_label_selector: str = field(
        default="cloud.google.com/gke-tpu-accelerator", metadata={"doc": "Only TPU nodes are watched."}
    )
    watch_timeout_seconds: int = field(
        default=300, metadata={"doc": "Server-side watch timeout; the watch resumes from the last version."}
    )
    node_event_namespace: str = field(
        default="default", metadata={"doc": "Namespace for Events about (cluster-scoped) Nodes."}
    )
    log_level: str = field(default="INFO", metadata={"doc": "DEBUG, INFO, WARNING or ERROR."})
    compute_read_deadline_seconds: float = field(
        default=1.0,
        metadata={
            "doc": "With compute_corroboration: how long a reconcile waits for the Compute Engine reads "
            "it started (half the default reconcile interval); later answers serve the next one."
        },
    )
    compute_reread_seconds: float = field(
        default=5.0,
        metadata={
            "doc": "A suspect node's VM answer is re-read once this old: several fresh answers within "
            "instance_evidence_max_age_seconds (30 s) while a node stays suspect."
        },
    )
    compute_max_concurrent_reads: int = field(
        default=4,
        metadata={"doc": "Compute Engine reads in flight at once (threads of the reader pool), >= 1."},
    )
    compute_endpoint: str = field(
        default="",
        metadata={
            "doc": "With compute_corroboration: the Compute Engine API endpoint, ``[https://]host[:port]`` "
            "(a Private Service Connect endpoint, https://cloud.google.com/vpc/docs/"
            "configure-private-service-connect-apis); empty: the client library's default, "
            "https://compute.googleapis.com. ``http://`` only to a loopback address: the requests carry "
            "an OAuth bearer token.",
            "render": RENDER_WHEN_SET,
        },
    )
    compute_max_reads_per_minute: int = field(
        default=120,
        metadata={
            "doc": "VM reads started per 60 s, >= 1 (each one instances.get and one zoneOperations.list): "
            "under a tenth of Compute Engine's default per-project read and list rate quotas (1,500 per "
            "minute each, https://cloud.google.com/compute/api-quota), which the project shares."
        },
    )

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            default = f.default
            if isinstance(default, bool):
                ok = isinstance(value, bool)
            elif isinstance(default, int):
                ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
            elif isinstance(default, float):
                ok = isinstance(value, int | float) and not isinstance(value, bool) and value >= 0
            else:
                ok = isinstance(value, str)
            if not ok:
                raise SettingsError(
                    f"runtime.{f.name}", f"expected {type(default).__name__} >= 0, got {value!r}"
                )
        if self.log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR"):
            raise SettingsError(
                "runtime.log_level", f"expected DEBUG, INFO, WARNING or ERROR, got {self.log_level!r}"
            )
        if not self.retry_period_seconds < self.renew_deadline_seconds < self.lease_duration_seconds:
            raise SettingsError(
                "runtime.renew_deadline_seconds",
                "need retry_period_seconds < renew_deadline_seconds < lease_duration_seconds",
            )
        for name in ("compute_max_concurrent_reads", "compute_max_reads_per_minute"):
            if getattr(self, name) < 1:
                raise SettingsError(f"runtime.{name}", f"must be >= 1, got {getattr(self, name)}")
        for port in ("metrics_port", "health_port"):
            if not 0 <= getattr(self, port) <= 65535:
                raise SettingsError(f"runtime.{port}", f"not a port: {getattr(self, port)}")
        if self.compute_endpoint:
            _check_endpoint(self.compute_endpoint)

    def effective_lease_namespace(self) -> str:
        return self.lease_namespace or os.environ.get("POD_NAMESPACE", "") or DEFAULT_LEASE_NAMESPACE

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def rendered(self) -> dict[str, Any]:
        """What a ConfigMap holds: every field, but those marked render-when-set only when set, so a
        new optional field leaves every existing stack's config (and its hash on the pods) as it was."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.metadata.get("render") != RENDER_WHEN_SET or getattr(self, f.name) != f.default
        }


def _check_endpoint(value: str) -> None:
    m = _ENDPOINT.fullmatch(value)
    if m is None:
        raise SettingsError(
            "runtime.compute_endpoint",
            f"expected [https://]host[:port] (no path, query or credentials), got {value!r}",
        )
    scheme, host, port = m.groups()
    if port is not None and not 1 <= int(port) <= 65535:
        raise SettingsError("runtime.compute_endpoint", f"not a port: {port} in {value!r}")
    if scheme == "http" and not _loopback(host):
        raise SettingsError(
            "runtime.compute_endpoint",
            f"http:// only to a loopback address (the requests carry a bearer token), got {value!r}",
        )


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: only "localhost" is known to resolve to loopback
        return False


def runtime_from_mapping(data: Mapping[str, Any] | None) -> RuntimeConfig:
    if data is None:
        return RuntimeConfig()
    if not isinstance(data, Mapping):
        raise SettingsError("runtime", f"must be a mapping, got {type(data).__name__}")
    known = {f.name for f in fields(RuntimeConfig)}
    for name in data:
        if name not in known:
            raise SettingsError(f"runtime.{name}", f"unknown field (known: {', '.join(sorted(known))})")
    defaults = RuntimeConfig()
    values = dict(data)
    for name, value in values.items():
        if (
            isinstance(getattr(defaults, name), float)
            and isinstance(value, int)
            and not isinstance(value, bool)
        ):
            values[name] = float(value)
    return replace(defaults, **values)


@dataclass(frozen=True, slots=True)
class Config:
    settings: Settings
    runtime: RuntimeConfig


def config_from_mapping(data: Mapping[str, Any] | None) -> Config:
    if data is None:
        return Config(Settings(), RuntimeConfig())
    if not isinstance(data, Mapping):
        raise SettingsError("", f"config must be a mapping, got {type(data).__name__}")
    body = dict(data)
    runtime = runtime_from_mapping(body.pop("runtime", None))
    return Config(settings_from_mapping(body), runtime)


def load_config(path: str | os.PathLike[str], *, required: bool) -> Config:
    """Read the YAML (or JSON) file; a missing optional file means defaults."""
    import yaml

    p = Path(path)
    if not p.exists():
        if required:
            raise SettingsError("", f"config file {p} does not exist")
        return config_from_mapping(None)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise SettingsError("", f"invalid YAML in {p}: {err}") from err
    return config_from_mapping(data)
