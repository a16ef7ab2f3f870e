"""The ``hotswap`` section: whether and how the hotswap controller runs in the cluster.

Decision thresholds go under ``settings`` in camelCase and are read by the controller's own
:class:`Settings` model when the stack file is read, so a typo fails ``pulumi up`` instead of
crash-looping the controller.
``settings.optOutNamespaces`` is the per-team grant to refuse preemption (``preemptible: "false"``):
only namespaces of the stack's teams are accepted.

``computeCorroboration`` (on by default) turns on the controller's Compute Engine corroboration of
suspect nodes, the only evidence on which it force-deletes a silent node's pods by default, and
creates what its reads need (a Google service account with a custom role of ``compute.instances.get``
and ``compute.zoneOperations.list``, bound to the controller's Kubernetes service account through
Workload Identity); it is the only way to turn the setting on, so the permission and its use come
together. ``settings.instanceEvidenceMaxAgeSeconds`` tunes it. On a cluster reached only by its
kubeconfig the stack creates no service account: ``googleIdentity`` names the one the controller acts
as, and whether the stack registers its roles, bindings and tag (``manage: true``) or leaves them to
the ``gcloud`` commands ``validate`` and ``plan`` print (``tpu_platform.hotswap.iam_commands``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar, Literal

from pydantic import Field, ValidationInfo, ValidatorFunctionWrapHandler, field_validator, model_validator
from pydantic.alias_generators import to_snake

from ..hotswap.adapter.config import RuntimeConfig
from ..hotswap.core.settings import Settings, team_pairs
from .base import StackModel, check_dns_label
from .formats import check_quantity, check_service_account_email, parse_quantity
from .problems import unknown_key

IMAGE_RE = re.compile(r"^[a-z0-9.-]+(:[0-9]+)?/[a-z0-9._/-]+(:[A-Za-z0-9._-]+)?(@sha256:[a-f0-9]{64})?$")
SETTINGS_DOC = "see tpu_platform/hotswap/README.md for every setting"
SET_ELSEWHERE = frozenset({"teams", "compute_corroboration"})
"""Settings the stack sets through keys of its own (the section's validator says which)."""
STACK_SETTING_KEYS = sorted(
    info.alias or name for name, info in Settings.model_fields.items() if name not in SET_ELSEWHERE
)


class _UnknownSettingAnswers(Mapping[str, str]):
    """The stack's answer to any key ``hotswap.settings`` does not read: the setting most likely meant,
    every setting a stack writes there, and where they are documented."""

    def __getitem__(self, key: str) -> str:
        return f"{unknown_key(key, STACK_SETTING_KEYS)}; {SETTINGS_DOC}"

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


class StackSettings(Settings):
    """``hotswap.settings``: the controller's :class:`Settings`, answering a key it does not read in the
    stack's words (``StackModel.misused_keys``, which ``config/explain.py`` looks an unknown key up in)."""

    misused_keys: ClassVar[Mapping[str, str]] = _UnknownSettingAnswers()


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


class GoogleIdentityConfig(StackModel):
    """``hotswap.googleIdentity``: the Google service account the controller acts as through Workload
    Identity on a GKE cluster the stack reaches only by kubeconfig (``cluster.mode: kubeconfig``).

    The cluster needs Workload Identity (workload pool ``PROJECT.svc.id.goog``) and the GKE metadata
    server on a node pool the controller runs on, and ``cluster.name`` must be the GKE cluster's name.
    """

    service_account: str = Field(
        description="Email of the Google service account (NAME@PROJECT.iam.gserviceaccount.com) the "
        "controller acts as; an account of its own, which must exist.",
    )
    manage: bool = Field(
        False,
        description="true: the stack registers the account's two custom roles, their bindings (the "
        "calls on one VM under the TPU tag's condition), the Workload Identity binding and the tag "
        "(pulumi up needs Google credentials). false: it registers no Google resource, and validate "
        "and plan print the gcloud commands that do (the stack exports them too).",
    )
    network: str | None = Field(
        None,
        description="The cluster's VPC network, a name in gcp:project or projects/P/global/networks/N: "
        "the TPU tag's GCE_FIREWALL purpose names it. Default: default.",
    )
    cluster_location: str | None = Field(
        None,
        description="The GKE cluster's region or zone, for the node pool commands. Default: gcp:region.",
    )

    @field_validator("service_account")
    @classmethod
    def _own_account(cls, value: str) -> str:
        check_service_account_email(value)
        if not value.endswith(".iam.gserviceaccount.com"):
            raise ValueError(
                f"{value!r} is a default Compute Engine account, which carries far more than the "
                "controller's calls; name an account of its own (NAME@PROJECT.iam.gserviceaccount.com)"
            )
        return value


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
        "so BlockingRecreate JobSets wait for GKE's repair after a host death. With cluster.mode: "
        "kubeconfig it needs googleIdentity.",
    )
    google_identity: GoogleIdentityConfig | None = Field(
        None,
        description="cluster.mode: kubeconfig on a GKE cluster: the Google service account corroboration "
        "acts as, and whether the stack registers its access or prints the gcloud commands.",
    )
    settings: StackSettings = Field(
        default_factory=dict,
        validate_default=True,
        description="The controller's decision settings in camelCase, with the corroboration switch above.",
    )

    @field_validator("settings", mode="wrap")
    @classmethod
    def _settings(
        cls, value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo
    ) -> StackSettings:
        """Thresholds only: process options have their own keys (the loader's ``runtime`` section),
        and corroboration its own switch (it needs IAM the stack creates), which the settings take."""
        if not isinstance(value, Mapping):
            return handler(value)
        for key in value:
            if key == "runtime":
                raise ValueError(
                    "settings.runtime is the controller's process section, rendered from hotswap.dryRun "
                    "and hotswap.logLevel; remove it and set those keys instead"
                )
            if to_snake(str(key)) == "teams":
                raise ValueError(
                    "settings.teams is rendered from the stack's teams section (each team's namespaces); "
                    "remove it and list the namespaces under teams[].namespaces instead"
                )
            if to_snake(str(key)) == "compute_corroboration":
                raise ValueError(
                    "settings.computeCorroboration is set by hotswap.computeCorroboration, which also "
                    "creates the Google service account and IAM the Compute Engine reads need; remove it "
                    "and set hotswap.computeCorroboration: true instead"
                )
        switch = info.data.get("compute_corroboration")  # absent when the switch itself is refused
        if isinstance(switch, bool):
            value = {**value, "computeCorroboration": switch}
        return handler(value)

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        return check_dns_label(value, "namespace")

    def controller_settings(self, teams: Mapping[str, Sequence[str]] | None = None) -> Settings:
        """The controller's settings as the stack deploys them: ``settings`` (its corroboration switch
        included, validated when the stack file was read) and ``teams`` (team -> its namespaces: who
        counts as one tenant)."""
        values = {name: getattr(self.settings, name) for name in Settings.model_fields}
        return Settings.model_construct(**{**values, "teams": team_pairs(dict(teams or {}))})

    @property
    def resets_vms(self) -> bool:
        """The controller fences silent VMs by resetting them (corroboration on and
        ``settings.resetSilentVms`` not false): its Google role needs ``compute.instances.reset``."""
        return self.compute_corroboration and self.settings.reset_silent_vms

    def runtime(self) -> RuntimeConfig:
        """Process options the stack controls (the rest keep the controller's defaults)."""
        return RuntimeConfig(dry_run=self.dry_run, log_level=self.log_level)
