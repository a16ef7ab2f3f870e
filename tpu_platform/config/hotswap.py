"""The ``hotswap`` section: whether and how the hotswap controller runs in the cluster.

Decision thresholds go under ``settings`` in camelCase and are validated by the controller's
own settings loader, so a typo fails ``pulumi up`` instead of crash-looping the controller.
``settings.optOutNamespaces`` is the per-team grant to refuse preemption (``preemptible: "false"``):
only namespaces of the stack's teams are accepted.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator
from pydantic.alias_generators import to_camel, to_snake

from .base import StackModel, check_dns_label

if TYPE_CHECKING:
    from .platform import PlatformConfig, Problems

IMAGE_RE = re.compile(r"^[a-z0-9.-]+(:[0-9]+)?/[a-z0-9._/-]+(:[A-Za-z0-9._-]+)?(@sha256:[a-f0-9]{64})?$")
RESERVED_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kueue-system", "jobset-system"})


class ImageBuildConfig(StackModel):
    """Build the controller image from this repository and push it to Artifact Registry."""

    repository: str = Field("tpu-platform", description="Artifact Registry repository (created).")
    platform: Literal["linux/amd64", "linux/arm64"] = "linux/amd64"

    @field_validator("repository")
    @classmethod
    def _repository_name(cls, value: str) -> str:
        return check_dns_label(value, "Artifact Registry repository")


class ControllerResources(StackModel):
    """Requests and limit of the controller container (no CPU limit: avoid throttled reconciles)."""

    cpu_request: str = "250m"
    memory_request: str = "512Mi"
    memory_limit: str = "1Gi"


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
    settings: dict[str, Any] = Field(default_factory=dict)

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        return check_dns_label(value, "namespace")

    def controller_settings(self) -> dict[str, Any]:
        """``settings`` with the controller's own snake_case keys."""
        return {to_snake(key): value for key, value in self.settings.items()}

    def runtime(self) -> dict[str, Any]:
        """Process options the stack controls (the rest keep the controller's defaults)."""
        return {"dry_run": self.dry_run, "log_level": self.log_level}


def _check_hotswap(cfg: PlatformConfig, problems: Problems) -> None:
    from tpu_platform.hotswap.core.settings import SettingsError
    from tpu_platform.hotswap.deploy import config_document

    hot = cfg.hotswap
    if hot.image is not None and hot.build is not None:
        problems.add(
            ("hotswap", "build"),
            "give either image (a pushed image) or build (build it from this repository), not both",
        )
    if hot.image is not None and not IMAGE_RE.match(hot.image):
        problems.add(
            ("hotswap", "image"),
            f"{hot.image!r} is not a full image reference such as "
            "'us-docker.pkg.dev/PROJECT/REPO/hotswap:0.1.0' (a digest pin '@sha256:...' is best)",
        )
    if hot.namespace in RESERVED_NAMESPACES:
        problems.add(
            ("hotswap", "namespace"), f"{hot.namespace!r} is not ours to own; pick a dedicated namespace"
        )
    team_namespaces = {ns for team in cfg.teams for ns in team.namespace_names()}
    if hot.namespace in team_namespaces:
        problems.add(
            ("hotswap", "namespace"),
            f"{hot.namespace!r} is also a team namespace; the controller needs its own",
        )
    opt_out = hot.controller_settings().get("opt_out_namespaces")
    for i, ns in enumerate(opt_out if isinstance(opt_out, list) else []):
        if ns not in team_namespaces:
            problems.add(
                ("hotswap", "settings", "optOutNamespaces", i),
                f"{ns!r} is no team's namespace; list the namespaces of the teams whose JobSets may "
                "refuse preemption with tpu-platform.dev/preemptible: 'false'",
            )
    try:
        config_document(hot.controller_settings(), hot.runtime())
    except SettingsError as err:
        key = err.field.split(".")[-1]
        message = str(err).split(": ", 1)[-1]
        problems.add(
            ("hotswap", "settings", to_camel(key)),
            f"{message}; see tpu_platform/hotswap/README.md for every setting",
        )


HOTSWAP_CHECKS = [_check_hotswap]
