"""The HTTP side of the API double: Kubernetes REST paths, chunked watch streams, injected faults.

Watch semantics follow the API server's watch cache (staging/src/k8s.io/apiserver/pkg/storage/cacher):
a watch with no resourceVersion first sends the current objects as ADDED; a watch from a version that
was compacted away answers 200 and then one ERROR event with a 410 Expired Status; ``timeoutSeconds``
ends the stream; with ``allowWatchBookmarks`` a BOOKMARK carrying only the current resourceVersion is
sent every ``bookmark_interval`` (the API server sends one about every minute) and when the stream
ends. Objects that move into or out of a label/field selector arrive as ADDED or DELETED.

A request's ``timeout`` query parameter (a Go duration) is its deadline from when the request was
received, as kube-apiserver's ``WithRequestDeadline`` sets it (k8s.io/apiserver v0.34.12
``pkg/endpoints/filters/request_deadline.go``: ``context.WithDeadline(ctx, started.Add(timeout))``);
a request still waiting on an injected delay at its deadline is answered 504 ``Timeout``, "request
did not complete within requested timeout - context deadline exceeded" (``pkg/endpoints/handlers/
finisher/finisher.go``, ``finishRequest``), and a write is not applied: a slow server never applies a
write after the deadline its client gave it.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from tests.kubeapi import visibility
from tests.kubeapi.faults import Fault, Faults, Request
from tests.kubeapi.selectors import SelectorError, field_matcher, label_matcher
from tests.kubeapi.store import JSON, ApiStatus, Kind, Store, kind_for


@dataclass(frozen=True, slots=True)
class Served:
    """One request as served (for assertions): server time, request, reply status, lease check."""

    at: float
    request: Request
    query: dict[str, str]
    status: int
    held_lease: bool
    """For writes: the caller held the guarded Lease (holder and unexpired by the server's clock)."""


def identity_of(user_agent: str) -> str:
    """``tpu-platform-hotswap/NAME ...`` -> ``NAME``; anything else: the whole first token."""
    token = (user_agent or "").split(" ", 1)[0]
    return token.split("/", 1)[1] if token.startswith("tpu-platform-hotswap/") else token


_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def _deadline(timeout: str | None, received: float) -> float | None:
    """The request's deadline from its ``timeout`` parameter (a single-unit Go duration such as
    ``1500ms``, as the controller sends); None without one, or with ``0s`` (no deadline asked)."""
    if not timeout:
        return None
    for unit in sorted(_GO_UNITS, key=len, reverse=True):
        if timeout.endswith(unit):
            try:
                seconds = float(timeout[: -len(unit)]) * _GO_UNITS[unit]
            except ValueError:
                return None
            return received + seconds if seconds > 0 else None
    return None


def _parse_path(path: str) -> tuple[str, str, list[str]]:
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        return "", "v1", parts[2:]
    if len(parts) >= 3 and parts[0] == "apis":
        return parts[1], parts[2], parts[3:]
    raise ApiStatus(404, "NotFound", f"the server could not find the requested resource {path}")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    double: ApiDouble

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the double records requests in ``served``."""

    def _route(self) -> None:
        received = time.monotonic()
        url = urlsplit(self.path)
        query = dict(parse_qsl(url.query, keep_blank_values=True))
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        d = self.double
        try:
            group, version, rest = _parse_path(url.path)
            if group == visibility.GROUP:
                visibility.serve(self, version, rest, query)
                return
            namespace = ""
            if len(rest) >= 3 and rest[0] == "namespaces":
                namespace, rest = rest[1], rest[2:]
            if not rest:
                raise ApiStatus(404, "NotFound", "no resource")
            plural, name, sub = (
                rest[0],
                (rest[1] if len(rest) > 1 else ""),
                (rest[2] if len(rest) > 2 else ""),
            )
            kind = kind_for(group, plural)
            if version not in kind.versions:
                raise ApiStatus(404, "NotFound", f"{group}/{version} does not serve {plural}")
            verb = _verb(self.command, name, sub, query)
        except ApiStatus as err:
            self._status(err)
            return
        req = Request(
            self.command,
            verb,
            group,
            plural,
            namespace,
            name,
            sub,
            identity_of(self.headers.get("User-Agent", "")),
        )
        fault = d.faults.take(req)
        if fault is not None and fault.delay:
            deadline = _deadline(query.get("timeout"), received)
            if deadline is not None and received + fault.delay >= deadline:
                time.sleep(max(0.0, deadline - time.monotonic()))
                d.record(req, query, 504)
                self._status(
                    ApiStatus(
                        504,
                        "Timeout",
                        "request did not complete within requested timeout - context deadline exceeded",
                    )
                )
                return
            time.sleep(fault.delay)
        if fault is not None and fault.reset:
            d.record(req, query, 0)
            self._reset()
            return
        if fault is not None and fault.body is not None:
            d.record(req, query, 200)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(fault.body)))
            self.end_headers()
            self.wfile.write(fault.body)
            return
        if fault is not None and fault.status:
            d.record(req, query, fault.status)
            self._status(
                ApiStatus(
                    fault.status,
                    _REASONS.get(fault.status, "InternalError"),
                    "injected fault",
                    retry_after=fault.retry_after,
                )
            )
            return
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            self._status(ApiStatus(400, "BadRequest", "the request body is not JSON"))
            return
        if verb == "watch":
            self._watch(req, kind, namespace, query, fault)
            return
        try:
            status, reply = d.handle(req, kind, version, query, body, self.headers.get("Content-Type", ""))
        except ApiStatus as err:
            d.record(req, query, err.code)
            self._status(err)
            return
        except (SelectorError, ValueError) as err:
            d.record(req, query, 400)
            self._status(ApiStatus(400, "BadRequest", str(err)))
            return
        d.record(req, query, status)
        self._json(status, reply)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _route

    def _json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _status(self, err: ApiStatus) -> None:
        headers = {"Retry-After": str(err.retry_after)} if err.retry_after is not None else {}
        self._json(err.code, err.body(), headers)

    def _reset(self) -> None:
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.close()

    def _chunk(self, event: JSON) -> None:
        data = json.dumps(event).encode() + b"\n"
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _watch(
        self, req: Request, kind: Kind, namespace: str, query: dict[str, str], fault: Fault | None
    ) -> None:
        d = self.double
        try:
            labels = label_matcher(query.get("labelSelector", ""))
            fields = field_matcher(kind.plural, query.get("fieldSelector", ""))
        except SelectorError as err:
            d.record(req, query, 400)
            self._status(ApiStatus(400, "BadRequest", str(err)))
            return
        d.record(req, query, 200)
        timeout = float(query.get("timeoutSeconds") or d.default_watch_timeout)
        bookmarks = query.get("allowWatchBookmarks") == "true"
        ends = time.monotonic() + timeout
        if fault is not None and fault.drop_after is not None:
            ends = min(ends, time.monotonic() + fault.drop_after)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def visible(obj: JSON | None) -> bool:
            if obj is None:
                return False
            meta = obj.get("metadata") or {}
            return (
                (not namespace or meta.get("namespace") == namespace)
                and labels(meta.get("labels") or {})
                and fields(obj)
            )

        try:
            rv_text = query.get("resourceVersion", "")
            if rv_text in ("", "0"):
                items, rv_now = d.store.list_items(kind, namespace)
                for obj in items:
                    if visible(obj):
                        self._chunk({"type": "ADDED", "object": obj})
                rv = int(rv_now)
            else:
                rv = int(rv_text)
            next_bookmark = time.monotonic() + d.bookmark_interval
            generation = d.watch_generation
            while not d.closing.is_set() and generation == d.watch_generation:
                try:
                    changes = d.store.changes_since(rv)
                except ApiStatus as err:
                    self._chunk({"type": "ERROR", "object": err.body()})
                    break
                for c in changes:
                    rv = c.rv
                    if (c.kind.group, c.kind.plural) != (kind.group, kind.plural):
                        continue
                    was, now_ = visible(c.old), visible(c.new)
                    if c.type == "DELETED":
                        kind_of = "DELETED" if was else None
                    elif was and now_:
                        kind_of = "MODIFIED"
                    elif now_:
                        kind_of = "ADDED"
                    elif was:
                        kind_of = "DELETED"
                    else:
                        kind_of = None
                    if kind_of is not None:
                        self._chunk({"type": kind_of, "object": c.new})
                now = time.monotonic()
                if now >= ends:
                    break
                if bookmarks and now >= next_bookmark:
                    self._chunk(_bookmark(kind, d.store.rv if not changes else rv))
                    next_bookmark = now + d.bookmark_interval
                with d.store.cond:
                    if d.store.rv == rv and generation == d.watch_generation:
                        d.store.cond.wait(min(0.2, max(0.0, ends - now)))
            else:
                self.close_connection = True
            if bookmarks and not d.closing.is_set():
                self._chunk(_bookmark(kind, rv))
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True


def _bookmark(kind: Kind, rv: int) -> JSON:
    return {
        "type": "BOOKMARK",
        "object": {
            "kind": kind.kind,
            "apiVersion": kind.api_version(),
            "metadata": {"resourceVersion": str(rv)},
        },
    }


_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    409: "Conflict",
    410: "Expired",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def _verb(method: str, name: str, sub: str, query: dict[str, str]) -> str:
    if method == "GET":
        if query.get("watch") in ("true", "1"):
            return "watch"
        return "get" if name else "list"
    if method == "POST":
        return "evict" if sub == "eviction" else "create"
    if method == "PUT":
        return "update"
    if method == "PATCH":
        return "patch"
    if method == "DELETE":
        return "delete"
    raise ApiStatus(405, "MethodNotAllowed", method)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self, addr: tuple[str, int], handler: type[BaseHTTPRequestHandler], double: ApiDouble
    ) -> None:
        self.double = double
        super().__init__(addr, handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Connections cut by injected faults or by the client are expected; anything else is not."""
        import sys

        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError, OSError)):
            return
        super().handle_error(request, client_address)

    def process_request(self, request: Any, client_address: Any) -> None:
        self.double._track(request)
        super().process_request(request, client_address)


class ApiDouble:
    """A strict, loopback stand-in for kube-apiserver.

    ``guard_lease=(namespace, name)`` makes every write (other than to that Lease) checked against
    it: the caller (by User-Agent identity) must be its holder and it must be unexpired by the
    server's clock; writes that are not are counted in ``writes_without_lease``.
    """

    def __init__(
        self,
        *,
        store: Store | None = None,
        port: int = 0,
        bookmark_interval: float = 60.0,
        default_watch_timeout: float = 1800.0,
        guard_lease: tuple[str, str] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store if store is not None else Store(clock=clock)
        self.clock = clock
        self.faults = Faults()
        self.bookmark_interval = bookmark_interval
        self.default_watch_timeout = default_watch_timeout
        self.guard_lease = guard_lease
        self.served: list[Served] = []
        self.connections = 0
        self.closing = threading.Event()
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._port = port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.on_write: Callable[[Served], None] | None = None
        self.watch_generation = 0
        """Bumped by :meth:`close_watches`; open streams end when it changes."""

    @staticmethod
    def store_kind(plural: str) -> Kind:
        from tests.kubeapi.store import kind_named

        return kind_named(plural)

    # --- lifecycle ---------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def start(self) -> ApiDouble:
        handler = type("Handler", (_Handler,), {"double": self})
        self.closing.clear()
        self._server = _Server(("127.0.0.1", self._port), handler, self)
        self._port = int(self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="kubeapi", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening and cut every open connection (new connections are refused)."""
        self.closing.set()
        with self.store.cond:
            self.store.cond.notify_all()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        with self._lock:
            for s in list(self._sockets):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
            self._sockets.clear()

    def close_watches(self) -> None:
        """End every open watch stream cleanly (as an API server does on shutdown or rollout)."""
        with self.store.cond:
            self.watch_generation += 1
            self.store.cond.notify_all()

    def outage(self, seconds: float) -> None:
        """The API server is unreachable for ``seconds`` (refused connections), then back."""
        self.stop()
        time.sleep(seconds)
        self.start()

    def __enter__(self) -> ApiDouble:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self.connections += 1
            self._sockets = {s for s in self._sockets if s.fileno() != -1}
            self._sockets.add(sock)

    def kubeconfig(self, path: str, *, user: str = "test") -> str:
        """Write a kubeconfig for the double (plain HTTP on loopback, a dummy token) and return it."""
        import yaml

        cfg = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "double", "cluster": {"server": self.url}}],
            "users": [{"name": user, "user": {"token": "double-token"}}],
            "contexts": [{"name": "double", "context": {"cluster": "double", "user": user}}],
            "current-context": "double",
        }
        with open(path, "w", encoding="utf-8") as f:
            yaml.safe_dump(cfg, f)
        return path

    # --- accounting --------------------------------------------------------------------------------
    def record(self, req: Request, query: dict[str, str], status: int) -> None:
        held = True
        if req.write and self.guard_lease is not None and (req.namespace, req.name) != self.guard_lease:
            held = self.holds_lease(req.identity)
        served = Served(self.clock(), req, query, status, held)
        with self._lock:
            self.served.append(served)
        if req.write and self.on_write is not None:
            self.on_write(served)

    def holds_lease(self, identity: str) -> bool:
        assert self.guard_lease is not None
        ns, name = self.guard_lease
        try:
            lease = self.store.get(kind_for("coordination.k8s.io", "leases"), ns, name)
        except ApiStatus:
            return False
        spec = lease.get("spec") or {}
        if spec.get("holderIdentity") != identity or not spec.get("renewTime"):
            return False
        from datetime import datetime

        renewed = datetime.fromisoformat(str(spec["renewTime"]).replace("Z", "+00:00")).timestamp()
        return self.clock() < renewed + float(spec.get("leaseDurationSeconds") or 0)

    def writes(self, *, verb: str | None = None, resource: str | None = None) -> list[Served]:
        with self._lock:
            return [
                s
                for s in self.served
                if s.request.write
                and (verb is None or s.request.verb == verb)
                and (resource is None or s.request.resource == resource)
            ]

    @property
    def writes_without_lease(self) -> list[Served]:
        return [s for s in self.writes() if not s.held_lease and 200 <= s.status < 300]

    # --- REST --------------------------------------------------------------------------------------
    def handle(
        self, req: Request, kind: Kind, version: str, query: dict[str, str], body: Any, content_type: str
    ) -> tuple[int, Any]:
        s = self.store
        if (
            req.subresource
            and not (req.subresource == "eviction" and kind.plural == "pods")
            and req.subresource != "status"
        ):
            raise ApiStatus(404, "NotFound", f"subresource {req.subresource} not served")
        if (
            kind.namespaced
            and req.verb in ("create", "update", "patch", "delete", "evict", "get")
            and not req.namespace
        ):
            raise ApiStatus(404, "NotFound", f"{kind.plural} is namespaced")
        match req.verb:
            case "list":
                items, rv = s.list_items(
                    kind,
                    req.namespace,
                    label_selector=query.get("labelSelector", ""),
                    field_selector=query.get("fieldSelector", ""),
                    resource_version=query.get("resourceVersion", ""),
                )
                return 200, self._page(kind, version, items, rv, query)
            case "get":
                return 200, s.get(kind, req.namespace, req.name)
            case "create":
                if not isinstance(body, dict):
                    raise ApiStatus(400, "BadRequest", "body must be an object")
                if body.get("kind") not in (None, kind.kind):
                    raise ApiStatus(400, "BadRequest", f"expected kind {kind.kind}, got {body.get('kind')}")
                return 201, s.create(kind, req.namespace, body)
            case "update":
                if not isinstance(body, dict):
                    raise ApiStatus(400, "BadRequest", "body must be an object")
                return 200, s.replace(kind, req.namespace, req.name, body)
            case "patch":
                media = content_type.split(";", maxsplit=1)[0].strip()
                return 200, s.patch(kind, req.namespace, req.name, media, body)
            case "delete":
                options = dict(body or {})
                if "gracePeriodSeconds" in query:
                    options["gracePeriodSeconds"] = int(query["gracePeriodSeconds"])
                return 200, s.delete(kind, req.namespace, req.name, options)
            case "evict":
                s.evict(req.namespace, req.name, body)
                return 201, {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "code": 201,
                }
        raise ApiStatus(405, "MethodNotAllowed", req.verb)

    @staticmethod
    def _page(kind: Kind, version: str, items: list[JSON], rv: str, query: dict[str, str]) -> JSON:
        """Pagination with ``limit`` and an opaque ``continue`` token (the offset, pinned to the RV)."""
        limit = int(query.get("limit") or 0)
        start = 0
        token = query.get("continue", "")
        if token:
            try:
                start_text, rv = token.split(":", 1)
                start = int(start_text)
            except ValueError as err:
                raise ApiStatus(400, "BadRequest", "invalid continue token") from err
        page = items[start : start + limit] if limit else items[start:]
        meta: JSON = {"resourceVersion": rv}
        if limit and start + limit < len(items):
            meta["continue"] = f"{start + limit}:{rv}"
        return {
            "apiVersion": kind.api_version(version),
            "kind": f"{kind.kind}List",
            "metadata": meta,
            "items": page,
        }
