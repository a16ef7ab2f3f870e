"""Checks of the ``hotswap`` section: one image source, a namespace of its own, opt-out namespaces of
the stack's teams, and floors on the settings (their kinds and ranges are the settings model's own,
checked when the stack file is read)."""

from __future__ import annotations

from ...constants import BUILTIN_NAMESPACES, RESERVED_NAMESPACES
from ...hotswap.core.settings import Settings
from ..hotswap import IMAGE_RE
from ..platform import PlatformConfig
from ..problems import Problems


def check_hotswap(cfg: PlatformConfig) -> Problems:
    """One image source, a namespace of the controller's own, opt-outs of team namespaces, floors."""
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
    if hot.namespace in RESERVED_NAMESPACES | BUILTIN_NAMESPACES:
        problems.add(
            ("hotswap", "namespace"), f"{hot.namespace!r} is not ours to own; pick a dedicated namespace"
        )
    team_namespaces = {ns for team in cfg.teams for ns in team.namespace_names()}
    if hot.namespace in team_namespaces:
        problems.add(
            ("hotswap", "namespace"),
            f"{hot.namespace!r} is also a team namespace; the controller needs its own",
        )
    for i, ns in enumerate(hot.settings.opt_out_namespaces):
        if ns not in team_namespaces:
            problems.add(
                ("hotswap", "settings", _key("opt_out_namespaces"), i),
                f"{ns!r} is no team's namespace; list the namespaces of the teams whose JobSets may "
                "refuse preemption with tpu-platform.dev/preemptible: 'false'",
            )
    _check_floors(hot.settings, problems)
    if "instance_evidence_max_age_seconds" in hot.settings.model_fields_set and not hot.compute_corroboration:
        problems.add(
            ("hotswap", "settings", _key("instance_evidence_max_age_seconds")),
            "has no effect without Compute Engine corroboration; set hotswap.computeCorroboration: true "
            "or remove it",
        )
    return problems


def _key(name: str) -> str:
    """The stack's (camelCase) key of a setting."""
    return Settings.model_fields[name].alias or name


# Floors that keep the controller's safety rules (tpu_platform/hotswap/core/settings.py documents
# each default): below them it would act on status blips, force-delete pods of live nodes, hand a
# pool back before its runtime settles, or race kube-scheduler. (setting, floor, why)
FLOORS: tuple[tuple[str, float, str], ...] = (
    ("unhealthy_after_seconds", 5, "shorter windows turn kubelet restarts and status blips into evictions"),
    (
        "healthy_after_seconds",
        30,
        "a recreated multi-host slice needs time to settle before it gets work back",
    ),
    (
        "flapping_healthy_after_seconds",
        300,
        "a flapping pool must stay out long enough for GKE repair to act",
    ),
    ("flap_window_seconds", 600, "the window must span at least one repair (~10 min) to see flapping"),
    ("dead_node_confirm_seconds", 10, "force deletion is only safe once the kubelet has surely gone silent"),
    ("preemption_pending_seconds", 5, "kube-scheduler must get the first try, or both preempt for one pod"),
    ("preemption_settle_seconds", 30, "a victim's pods need time to terminate before the next preemption"),
    (
        "instance_evidence_max_age_seconds",
        10,
        "the controller re-reads a suspect node's VM every 5 s (runtime compute_reread_seconds); a "
        "shorter age would drop every answer before the next read lands",
    ),
)
# leaseStaleSeconds has its floor in the settings model itself (0 or at least 20 s).


def _check_floors(settings: Settings, problems: Problems) -> None:
    """Thresholds that parse but would break a safety rule (the settings model only asks >= 0)."""
    for name, floor, why in FLOORS:
        value = float(getattr(settings, name))
        if value < floor:
            problems.add(
                ("hotswap", "settings", _key(name)),
                f"{value:g} s is below the floor of {floor:g} s: {why}; use at least {floor:g} or remove it",
            )
