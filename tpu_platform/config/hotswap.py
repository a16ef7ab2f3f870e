"""The ``hotswap`` section: whether and how the hotswap controller runs in the cluster.

Decision thresholds go under ``settings`` in camelCase and are validated by the controller's
own settings loader, so a typo fails ``pulumi up`` instead of crash-looping the controller.
``settings.optOutNamespaces`` is the per-team grant to refuse preemption (``preemptible: "false"``):
only namespaces of the stack's teams are accepted.

``computeCorroboration`` (on by default) turns on the controller's Compute Engine corroboration of
suspect nodes, the only evidence on which it force-deletes a silent node's pods by default, and
creates what its reads need (a Google service account with a custom role of ``compute.instances.get``
and ``compute.zoneOperations.list``, bound to the controller's Kubernetes service account through
Workload Identity); it is the only way to turn the setting on, so the permission and its use come
together. ``settings.instanceEvidenceMaxAgeSeconds`` tunes it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator
from pydantic.alias_generators import to_snake

from .base import StackModel, check_dns_label
from .formats import check_quantity, parse_quantity

IMAGE_RE = re.compile(r"^[a-z0-9.-]+(:[0-9]+)?/[a-z0-9._/-]+(:[A-Za-z0-9._-]+)?(@sha256:[a-f0-9]{64})?$")


class ImageBuildConfig(StackModel):
    """Build the controller image from this repository and push it to Artifact Registry."""

    repository: str = Field("tpu-platform", description="Artifact Registry repository (created).")
    platform: Literal["linux/amd64", "linux/arm64"] = "linux/amd64"

    @field_validator("repository")
    @classmethod
    def _repository_name(cls, value: str) -> str:
        return check_dns_label(value, "Artifact Registry repository")


class ControllerResources(StackModel):
    """Requests and limit of the controller container (no CPU limit: avoid throttled reconciles).

    Quantities as the API server parses them; the memory request must not exceed the limit
    (Kubernetes ``ValidateResourceRequirements`` rejects such a container)."""

    cpu_request: str = "250m"
    memory_request: str = "512Mi"
    memory_limit: str = "1Gi"

    @field_validator("cpu_request")
    @classmethod
    def _cpu(cls, value: str) -> str:
        check_quantity(value, "cpuRequest", "64")
        return value

    @field_validator("memory_request", "memory_limit")
    @classmethod
    def _memory(cls, value: str) -> str:
        check_quantity(value, "memory", "512Gi")
        return value

    @model_validator(mode="after")
    def _request_within_limit(self) -> ControllerResources:
        if parse_quantity(self.memory_request) > parse_quantity(self.memory_limit):
            raise ValueError(
                f"memoryRequest {self.memory_request} is above memoryLimit {self.memory_limit}; Kubernetes "
                "rejects a container whose request exceeds its limit: lower the request or raise the limit"
            )
        return self


class HotswapConfig(StackModel):
    """The bundled controller: fast pool-level failure handling for high-priority JobSets."""

    enabled: bool = False
    image: str | None = Field(None, description="Image to run; when unset the stack builds one.")
    build: ImageBuildConfig | None = None
    namespace: str = "tpu-hotswap"
    replicas: int = Field(2, ge=1, le=5)
    dry_run: bool = False
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    pod_monitoring: bool = Field(True, description="Create a PodMonitoring for Managed Prometheus.")
    resources: ControllerResources = ControllerResources()
    compute_corroboration: bool = Field(
        True,
        description="Confirm suspect nodes with Compute Engine before any force-delete; creates the "
        "Google service account, its read-only custom role and the Workload Identity binding. Off: the "
        "controller never force-deletes a pod on a silent node (unless settings.forceDeleteUnconfirmed), "
        "so BlockingRecreate JobSets wait for GKE's repair after a host death.",
    )
    settings: dict[str, Any] = Field(default_factory=dict)

    @field_validator("settings")
    @classmethod
    def _setting_keys(cls, value: dict[str, Any]) -> dict[str, Any]:
        """Thresholds only: process options have their own keys (the loader's ``runtime`` section),
        and corroboration its own switch (it needs IAM the stack creates)."""
        for key in value:
            if key == "runtime":
                raise ValueError(
                    "settings.runtime is the controller's process section, rendered from hotswap.dryRun "
                    "and hotswap.logLevel; remove it and set those keys instead"
                )
            if key == "teams":
                raise ValueError(
                    "settings.teams is rendered from the stack's teams section (each team's namespaces); "
                    "remove it and list the namespaces under teams[].namespaces instead"
                )
            if key == "computeCorroboration":
                raise ValueError(
                    "settings.computeCorroboration is set by hotswap.computeCorroboration, which also "
                    "creates the Google service account and IAM the Compute Engine reads need; remove it "
                    "and set hotswap.computeCorroboration: true instead"
                )
        return value

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        return check_dns_label(value, "namespace")

    def controller_settings(self, teams: Mapping[str, Sequence[str]] | None = None) -> dict[str, Any]:
        """``settings`` with the controller's own snake_case keys (and ``compute_corroboration`` when
        the stack opts in), and ``teams`` (team -> its namespaces: who counts as one tenant)."""
        out = {to_snake(key): value for key, value in self.settings.items()}
        if self.compute_corroboration:
            out["compute_corroboration"] = True
        if teams:
            out["teams"] = {team: list(namespaces) for team, namespaces in sorted(teams.items())}
        return out

    @property
    def resets_vms(self) -> bool:
        """The controller fences silent VMs by resetting them (corroboration on and
        ``settings.resetSilentVms`` not false): its Google role needs ``compute.instances.reset``."""
        return self.compute_corroboration and self.settings.get("resetSilentVms", True) is not False

    def runtime(self) -> dict[str, Any]:
        """Process options the stack controls (the rest keep the controller's defaults)."""
        return {"dry_run": self.dry_run, "log_level": self.log_level}
