"""The small client interface the adapter uses, and the resources it watches.

Bodies are plain JSON-ready dicts so a fake can assert on exactly what would go over the wire.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

JSON = dict[str, Any]

JOBSET_GROUP = "jobset.x-k8s.io"
JOBSET_VERSION = "v1alpha2"


TRANSPORT = 0
"""``ApiError.status`` when no HTTP status came back: refused, reset, timed out, TLS, bad JSON."""


class ApiError(Exception):
    """Any failed API call, and the only error the transport raises.

    ``status`` is the HTTP status, or :data:`TRANSPORT` (0) when there was no usable response.
    ``retry_after`` is the server's Retry-After in seconds (header or Status
    ``details.retryAfterSeconds``), if it sent one. ``cause`` is the Status ``details.causes[].reason``
    list (e.g. ``ResourceVersionTooLarge``), so callers need not parse messages.
    """

    def __init__(
        self,
        status: int,
        reason: str = "",
        body: str = "",
        *,
        retry_after: float | None = None,
        causes: tuple[str, ...] = (),
    ) -> None:
        self.status = status
        self.reason = reason
        self.body = body
        self.retry_after = retry_after
        self.causes = causes
        super().__init__(f"{status} {reason}".strip())

    @property
    def transport(self) -> bool:
        """No HTTP status: the request may or may not have reached the server."""
        return self.status == TRANSPORT

    @property
    def retryable(self) -> bool:
        """Worth retrying later unchanged: transport errors, 429 and 5xx."""
        return self.status in (TRANSPORT, 429) or self.status >= 500


@dataclass(frozen=True, slots=True)
class Resource:
    """A collection to list and watch: cluster-wide, or in ``namespace`` if given."""

    name: str
    """``nodes``, ``pods``, ``jobsets``, ``jobs`` or ``leases``."""
    label_selector: str = ""
    namespace: str = ""
    """Only for namespaced collections read from one namespace (node Leases in kube-node-lease)."""


class KubeApi(Protocol):
    """The writes (``patch_node``, ``patch_jobset``, ``evict_pod``, ``delete_pod``, ``create_event``)
    made inside :func:`~tpu_platform.hotswap.adapter.write_fence.fenced` are fenced again by the
    real client as it sends them, and time out within the lease's budget; Lease calls never are.
    A fake may ignore the fence: the applier checks it before every write too."""

    def list_objects(self, resource: Resource) -> tuple[list[JSON], str]:
        """All objects and the list's resourceVersion."""
        ...

    def watch_objects(
        self, resource: Resource, resource_version: str, timeout_seconds: int
    ) -> Iterator[JSON]:
        """Raw watch events ``{"type": ..., "object": {...}}`` from ``resource_version`` on."""
        ...

    def patch_node(self, name: str, patch: list[JSON]) -> None:
        """JSON Patch (RFC 6902) on a Node."""
        ...

    def patch_jobset(self, namespace: str, name: str, patch: JSON) -> None:
        """JSON merge patch on a JobSet."""
        ...

    def evict_pod(self, namespace: str, name: str, body: JSON) -> None:
        """POST a policy/v1 Eviction."""
        ...

    def delete_pod(self, namespace: str, name: str, *, grace_period_seconds: int, uid: str) -> None:
        """DELETE a pod with a grace period and a UID precondition."""
        ...

    def create_event(self, namespace: str, body: JSON) -> None: ...

    def get_lease(self, namespace: str, name: str, *, timeout: float | None = None) -> JSON | None:
        """The Lease, or None if it does not exist."""
        ...

    def create_lease(self, namespace: str, body: JSON, *, timeout: float | None = None) -> JSON: ...

    def replace_lease(self, namespace: str, name: str, body: JSON, *, timeout: float | None = None) -> JSON:
        """PUT with the body's resourceVersion: 409 if someone else updated it first."""
        ...
