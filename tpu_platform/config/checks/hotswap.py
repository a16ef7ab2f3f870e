"""Checks of the ``hotswap`` section: one image source, a namespace of its own, and settings
the controller itself accepts."""

from __future__ import annotations

from pydantic.alias_generators import to_camel

from ...hotswap.core.settings import SettingsError
from ...hotswap.deploy import config_document
from ..hotswap import IMAGE_RE, RESERVED_NAMESPACES
from ..platform import PlatformConfig
from ..problems import Problems


def check_hotswap(cfg: PlatformConfig) -> Problems:
    """One image source, a namespace of the controller's own, settings its loader accepts."""
    problems = Problems()
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
    try:
        config_document(hot.controller_settings(), hot.runtime())
    except SettingsError as err:
        key = err.field.split(".")[-1]
        message = str(err).split(": ", 1)[-1]
        problems.add(
            ("hotswap", "settings", to_camel(key)),
            f"{message}; see tpu_platform/hotswap/README.md for every setting",
        )
    return problems
