"""Compute Engine and its metadata server on loopback, for the controller's corroboration reads.

Compute Engine cannot run locally, so the live tier serves the two reads and the reset the controller
makes and the metadata-server endpoints ``google.auth`` uses to mint Application Default Credentials,
one threaded HTTP server for both. The controller process is pointed at it as it would be at a Private Service
Connect endpoint (``runtime.compute_endpoint``) and at a metadata server (``GCE_METADATA_HOST``,
``GCE_METADATA_IP``, :meth:`ComputeDouble.env`); its code path is the one it runs in the cluster.

What google-auth 2.63.0 asks (``google/auth/_default.py``, ``_get_gce_credentials``;
``google/auth/compute_engine/_metadata.py``; ``google/auth/compute_engine/credentials.py``):

- ``ping``: ``GET http://$GCE_METADATA_IP`` (root path), answered 200 with the response header
  ``Metadata-Flavor: Google``, or ``is_on_gce`` falls back to the DMI product name and ADC fails;
- ``get_project_id``: ``GET /computeMetadata/v1/project/project-id`` on ``$GCE_METADATA_HOST``
  (``GCE_METADATA_HOST`` is read once, when ``_metadata`` is imported);
- on refresh, ``_retrieve_info``: ``GET .../instance/service-accounts/default/?recursive=true``, JSON
  with ``email`` (and ``scopes``), then ``get_service_account_token``:
  ``GET .../instance/service-accounts/default/token?scopes=...``, JSON ``access_token`` and
  ``expires_in``; every metadata request carries ``Metadata-Flavor: Google``, and a JSON answer must
  say ``Content-Type: application/json`` or it is returned as text.

Compute Engine's two reads, as google-cloud-compute 1.48.0's REST transport sends them
(``compute_v1/services/instances/transports/rest_base.py``, ``_BaseGet``;
``zone_operations/transports/rest_base.py``, ``_BaseList``), with the metadata server's token as
``Authorization: Bearer``: ``GET /compute/v1/projects/P/zones/Z/instances/I`` (an ``Instance``) and
``GET /compute/v1/projects/P/zones/Z/operations?filter=...`` (an ``OperationList``; uint64 fields as
JSON strings, as proto3's JSON mapping writes them). The reset, as ``instances/transports/rest_base.py``
``_BaseReset`` sends it: ``POST /compute/v1/projects/P/zones/Z/instances/I/reset?requestId=...``, answered
with the zonal Operation (``operationType: reset``) that the operations list then shows, ``RUNNING`` for
``reset_s`` and ``DONE`` after; a repeated ``requestId`` gets the first Operation back, as the API
documents. Errors use Google's JSON error body, which ``google.api_core.exceptions.from_http_response``
reads.

Every VM is RUNNING until a test stops it; a reset does not change its status; every request is
recorded.
"""

from __future__ import annotations

import json
import re
import threading
import time
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tpu_platform.hotswap.adapter.compute_engine import HOST_ERROR, RESET, VmRef, parse_provider_id

METADATA = "/computeMetadata/v1/"
SERVICE_ACCOUNT = "instance/service-accounts/default/"
TOKEN_TTL_S = 3600
CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"
API = "https://www.googleapis.com/compute/v1"
INSTANCE = re.compile(r"^/compute/v1/projects/([^/]+)/zones/([^/]+)/instances/([^/]+)$")
OPERATIONS = re.compile(r"^/compute/v1/projects/([^/]+)/zones/([^/]+)/operations$")
RESET_PATH = re.compile(r"^/compute/v1/projects/([^/]+)/zones/([^/]+)/instances/([^/]+)/reset$")
TARGET_FILTER = re.compile(r"^\(targetId = ([0-9]+)\)$")
"""The one filter the controller sends (``adapter/compute_engine.py``); anything else is answered 400, so a
changed filter fails the live tier instead of passing unfiltered."""


@dataclass(frozen=True)
class Call:
    """One request: ``kind`` is ``ping``, ``project-id``, ``service-account``, ``token``,
    ``instances.get``, ``zoneOperations.list``, ``instances.reset`` or ``unknown``; ``vm`` for the
    Compute calls."""

    kind: str
    path: str
    query: dict[str, list[str]]
    status: int
    vm: VmRef | None = None


def vm_id(ref: VmRef) -> int:
    """A stable, positive ``Instance.id`` per VM."""
    return zlib.crc32(f"{ref.project}/{ref.zone}/{ref.instance}".encode()) + 1


def _rfc3339(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds")


class ComputeDouble:
    """Thread-safe; ``start()`` binds a free port on 127.0.0.1, ``stop()`` ends the server thread."""

    def __init__(self, project: str = "tpu-live-1234", reset_s: float = 2.0) -> None:
        self.project = project
        self.reset_s = reset_s
        """How long a reset's Operation stays RUNNING before it is DONE."""
        self.email = f"hotswap@{project}.iam.gserviceaccount.com"
        self._lock = threading.Lock()
        self._changes: dict[VmRef, list[tuple[float, str]]] = {}
        self._host_errors: dict[VmRef, list[float]] = {}
        self._resets: dict[VmRef, dict[str, float]] = {}
        """Per VM: requestId -> when the reset was inserted (epoch s)."""
        self._tokens: set[str] = set()
        self._served: dict[int, VmRef] = {}
        self._calls: list[Call] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ------------------------------------------------------------------------------
    def start(self) -> ComputeDouble:
        double = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                double._serve(self)

            def do_POST(self) -> None:
                double._serve(self)

            def log_message(self, format: str, *args: Any) -> None:
                """Requests are recorded in ``calls``, not printed on the tier's stderr."""

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="compute-double", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = self._thread = None

    @property
    def address(self) -> str:
        assert self._server is not None, "start() first"
        host, port = self._server.server_address[:2]
        return f"{host!s}:{port}"

    @property
    def url(self) -> str:
        """``runtime.compute_endpoint`` for the controller."""
        return f"http://{self.address}"

    def env(self) -> dict[str, str]:
        """The metadata server here for google.auth: ``GCE_METADATA_IP`` for its ping,
        ``GCE_METADATA_HOST`` for everything else (``google/auth/environment_vars.py``)."""
        return {"GCE_METADATA_HOST": self.address, "GCE_METADATA_IP": self.address}

    # --- state ----------------------------------------------------------------------------------
    def reset(self) -> None:
        """Every VM RUNNING, no host errors, no calls: new nodes are new VMs."""
        with self._lock:
            self._changes.clear()
            self._host_errors.clear()
            self._resets.clear()
            self._served.clear()
            self._calls.clear()

    def set_status(self, provider_id: str, status: str, lag_s: float = 0.0) -> None:
        """``Instance.status`` of the node's VM from ``lag_s`` seconds from now on."""
        ref = _ref(provider_id)
        with self._lock:
            self._changes.setdefault(ref, []).append((time.monotonic() + lag_s, status))

    def host_error(self, provider_id: str, at: float) -> None:
        """A ``compute.instances.hostError`` operation for the node's VM, inserted at ``at`` (epoch s)."""
        ref = _ref(provider_id)
        with self._lock:
            self._host_errors.setdefault(ref, []).append(at)

    def resets_of(self, provider_id: str) -> list[float]:
        """When each reset of the node's VM was inserted (epoch s), one per distinct requestId."""
        with self._lock:
            return sorted(self._resets.get(_ref(provider_id), {}).values())

    def status(self, ref: VmRef) -> str:
        now = time.monotonic()
        with self._lock:
            due = [status for at, status in self._changes.get(ref, []) if at <= now]
        return due[-1] if due else "RUNNING"

    @property
    def calls(self) -> list[Call]:
        with self._lock:
            return list(self._calls)

    def reads_of(self, provider_id: str, kind: str = "instances.get") -> list[Call]:
        """The answered Compute reads of ``kind`` about the node's VM."""
        ref = _ref(provider_id)
        return [c for c in self.calls if c.kind == kind and c.vm == ref and c.status == 200]

    # --- HTTP -----------------------------------------------------------------------------------
    def _serve(self, req: BaseHTTPRequestHandler) -> None:
        url = urlsplit(req.path)
        query = parse_qs(url.query)
        metadata = url.path == "/" or url.path.startswith(METADATA)
        if metadata:
            kind, status, body, vm = self._metadata(req, url.path)
        else:
            kind, status, body, vm = self._compute(req, url.path, query)
        with self._lock:
            self._calls.append(Call(kind, url.path, query, status, vm))
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        req.send_response(status)
        if metadata:
            req.send_header("Metadata-Flavor", "Google")
        req.send_header("Content-Type", "text/plain" if isinstance(body, str) else "application/json")
        req.send_header("Content-Length", str(len(data)))
        req.end_headers()
        req.wfile.write(data)

    def _metadata(self, req: BaseHTTPRequestHandler, path: str) -> tuple[str, int, Any, None]:
        if req.headers.get("Metadata-Flavor") != "Google":
            return "unknown", 403, "Missing Metadata-Flavor:Google header.", None
        if path == "/":
            return "ping", 200, "computeMetadata/\n", None
        if path == METADATA + "project/project-id":
            return "project-id", 200, self.project, None
        if path == METADATA + SERVICE_ACCOUNT:
            info = {"aliases": ["default"], "email": self.email, "scopes": [CLOUD_PLATFORM]}
            return "service-account", 200, info, None
        if path == METADATA + SERVICE_ACCOUNT + "token":
            with self._lock:
                token = f"ya29.live-{len(self._tokens)}"
                self._tokens.add(token)
            body = {"access_token": token, "expires_in": TOKEN_TTL_S, "token_type": "Bearer"}
            return "token", 200, body, None
        return "unknown", 404, "Not Found", None

    def _compute(
        self, req: BaseHTTPRequestHandler, path: str, query: dict[str, list[str]]
    ) -> tuple[str, int, Any, VmRef | None]:
        instance, operations, reset = (
            INSTANCE.fullmatch(path),
            OPERATIONS.fullmatch(path),
            RESET_PATH.fullmatch(path),
        )
        kind = (
            "instances.get"
            if instance and req.command == "GET"
            else "zoneOperations.list"
            if operations and req.command == "GET"
            else "instances.reset"
            if reset and req.command == "POST"
            else "unknown"
        )
        auth = req.headers.get("Authorization", "")
        with self._lock:
            authorized = auth.startswith("Bearer ") and auth.removeprefix("Bearer ") in self._tokens
        if not authorized:
            return (
                kind,
                401,
                _error(401, "Request is missing required authentication credential.", "required"),
                None,
            )
        if kind == "instances.reset" and reset:
            ref = VmRef(*reset.groups())
            request_id = (query.get("requestId") or [""])[0]
            with self._lock:
                inserted = self._resets.setdefault(ref, {}).setdefault(request_id, time.time())
            return kind, 200, self._operation(ref, vm_id(ref), 0, RESET, inserted), ref
        if kind == "instances.get" and instance:
            ref = VmRef(*instance.groups())
            with self._lock:
                self._served[vm_id(ref)] = ref
            zone = f"{API}/projects/{ref.project}/zones/{ref.zone}"
            body = {
                "kind": "compute#instance",
                "id": str(vm_id(ref)),
                "name": ref.instance,
                "status": self.status(ref),
                "zone": zone,
                "selfLink": f"{zone}/instances/{ref.instance}",
            }
            return kind, 200, body, ref
        if kind == "zoneOperations.list" and operations:
            project, zone = operations.group(1), operations.group(2)
            return kind, *self._operations_of(project, zone, query)
        return kind, 404, _error(404, f"The requested URL {path} was not found.", "notFound"), None

    def _operations_of(
        self, project: str, zone: str, query: dict[str, list[str]]
    ) -> tuple[int, Any, VmRef | None]:
        """The host errors and resets of the one VM the filter names (by the id ``instances.get`` gave)."""
        m = TARGET_FILTER.fullmatch((query.get("filter") or [""])[0])
        if m is None:
            return (
                400,
                _error(400, f"Invalid value for field 'filter': {query.get('filter')}", "invalid"),
                None,
            )
        target = int(m.group(1))
        with self._lock:
            ref = self._served.get(target)
            if ref is not None and (ref.project, ref.zone) != (project, zone):
                ref = None  # an id of another zone's VM: nothing here
            errors = list(self._host_errors.get(ref, [])) if ref is not None else []
            resets = list(self._resets.get(ref, {}).values()) if ref is not None else []
        zone_link = f"{API}/projects/{project}/zones/{zone}"
        items = (
            []
            if ref is None
            else [self._operation(ref, target, 1 + i, HOST_ERROR, at) for i, at in enumerate(errors)]
            + [self._operation(ref, target, 1 + len(errors) + i, RESET, at) for i, at in enumerate(resets)]
        )
        body = {"kind": "compute#operationList", "items": items, "selfLink": f"{zone_link}/operations"}
        return 200, body, ref

    def _operation(self, ref: VmRef, target: int, n: int, kind: str, at: float) -> dict[str, Any]:
        zone_link = f"{API}/projects/{ref.project}/zones/{ref.zone}"
        done = kind != RESET or time.time() - at >= self.reset_s
        op = {
            "kind": "compute#operation",
            "id": str(target + n),
            "name": f"{'systemevent' if kind == HOST_ERROR else 'operation'}-{int(at * 1000)}-{ref.instance}",
            "operationType": kind,
            "targetId": str(target),
            "targetLink": f"{zone_link}/instances/{ref.instance}",
            "insertTime": _rfc3339(at),
            "status": "DONE" if done else "RUNNING",
            "zone": zone_link,
            "selfLink": f"{zone_link}/operations/op-{target + n}",
        }
        if done and kind == RESET:
            op["endTime"] = _rfc3339(at + self.reset_s)
        return op


def _ref(provider_id: str) -> VmRef:
    ref = parse_provider_id(provider_id)
    if ref is None:
        raise ValueError(f"not a gce:// providerID the controller reads: {provider_id!r}")
    return ref


def _error(code: int, message: str, reason: str) -> dict[str, Any]:
    """Google's JSON error body (https://cloud.google.com/apis/design/errors#http_mapping)."""
    detail = {"message": message, "domain": "global", "reason": reason}
    return {"error": {"code": code, "message": message, "errors": [detail]}}
