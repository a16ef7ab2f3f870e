"""What to do with the Kueue and JobSet a cluster already runs: install, use, upgrade or refuse.

A pure function of what was found (:mod:`tpu_platform.kueue.found`), what the stack needs of it
(:mod:`tpu_platform.kueue.compatibility`) and the stack's ``kueue.existingInstall``. Whatever the
outcome, the cluster never ends up with two installs of one add-on: the pinned chart is applied only
where nothing is, where the platform installed it before, or over an older install at exactly the
chart's namespace and controller name (docs/existing-installs.md has the table and its reasons).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from ..config import PlatformConfig
from .compatibility import Fit, fit
from .configuration import JOBSET_CHART, KUEUE_CHART
from .found import KUEUE, Addon, FoundInstall, FoundInstalls, Version

Choice = Literal["use", "upgrade", "refuse"]
Action = Literal["install", "use", "upgrade", "refuse"]
KEY = "kueue.existingInstall"

RELEASES = {
    "kueue": "https://github.com/kubernetes-sigs/kueue/releases/download",
    "jobset": "https://github.com/kubernetes-sigs/jobset/releases/download",
}
APPLY = "kubectl apply --server-side --force-conflicts"
JOBSET_CRD = "https://raw.githubusercontent.com/kubernetes-sigs/jobset/v{version}/charts/jobset/crds/jobset.x-k8s.io_jobsets.yaml"


@dataclass(frozen=True)
class Decision:
    addon: Addon
    action: Action
    reason: str
    found: FoundInstall
    fix: tuple[str, ...] = ()  # refuse: what to run or set, one option a line
    notes: tuple[str, ...] = ()
    adopt: bool = False  # the chart goes over objects already there: taken over, kept on destroy

    @property
    def registers_chart(self) -> bool:
        return self.action in ("install", "upgrade")

    @property
    def version(self) -> Version | None:
        """The version the cluster runs once this decision is carried out."""
        return self.found.version if self.action == "use" else self.addon.pinned

    def lines(self) -> list[str]:
        head = f"{self.addon.title}: {self.action}: {self.reason}"
        fixes = [f"  {'to go on: ' if i == 0 else 'or: '}{fix}" for i, fix in enumerate(self.fix)]
        return [head, *(f"  {note}" for note in self.notes), *fixes]


@dataclass(frozen=True)
class Decisions:
    jobset: Decision
    kueue: Decision
    unread: tuple[str, ...] = ()

    def __iter__(self) -> Iterator[Decision]:
        return iter((self.jobset, self.kueue))

    def refusals(self) -> list[Decision]:
        return [d for d in self if d.action == "refuse"]

    def error(self) -> str | None:
        refused = self.refusals()
        if not refused:
            return None
        lines = [f"the platform will not install a second Kueue or JobSet ({KEY}):"]
        for decision in refused:
            lines += decision.lines()
        return "\n".join(lines)


def release_notes(found: Version, pinned: Version) -> list[str]:
    """The notes Kueue's upgrade policy asks to read from ``found`` to ``pinned``: the ``.0`` of each
    minor crossed, then the patches of the target minor (kueue v0.19.2
    ``site/content/en/docs/getting-started/installation.md`` "Upgrade policy" and its
    ``site/layouts/shortcodes/upgrade-policy-example.html``)."""
    notes = [f"v{found.major}.{minor}.0" for minor in range(found.minor + 1, pinned.minor + 1)]
    first = 1 if found.minor < pinned.minor else found.patch + 1
    notes += [f"v{pinned.major}.{pinned.minor}.{p}" for p in range(first, pinned.patch + 1)]
    return notes


def _release_commands(found: FoundInstall, upgrade: bool) -> list[str]:
    addon, release = found.addon, found.release
    assert release is not None
    ns, name, version = release.namespace, release.name, addon.pinned
    if not upgrade:
        return [f"helm uninstall {name} --namespace {ns}"]
    if addon is KUEUE:
        # The Kueue chart keeps its CRDs in templates/crd/: `helm upgrade` upgrades them.
        return [f"helm upgrade {name} {KUEUE_CHART} --version {version} --namespace {ns}"]
    # JobSet's chart keeps its CRD in crds/, which Helm installs but never upgrades: CRD first.
    return [
        f"{APPLY} -f {JOBSET_CRD.format(version=version)}",
        f"helm upgrade {name} {JOBSET_CHART} --version {version} --namespace {ns}",
    ]


def _charts(addon: Addon) -> str:
    return KUEUE_CHART if addon is KUEUE else JOBSET_CHART


def _removal(found: FoundInstall) -> list[str]:
    """Upstream's uninstall for how it was installed: Helm, a rendered chart or the release manifests
    (each deletes the CRDs too, and every object of them, but JobSet's Helm uninstall)."""
    addon, controller, version = found.addon, found.controller, found.version
    if found.release is not None:
        return _release_commands(found, upgrade=False)
    if controller is not None and controller.chart_instance and version is not None:
        return [
            f"helm template {controller.chart_instance} {_charts(addon)} --version {version} "
            f"--namespace {controller.namespace} --include-crds | kubectl delete -f -"
        ]
    if version is not None:
        return [f"kubectl delete -f {RELEASES[addon.key]}/v{version}/manifests.yaml"]
    return [f"kubectl delete deployment {c.name} --namespace {c.namespace}" for c in found.controllers]


def _upgrade_options(found: FoundInstall) -> list[str]:
    """Upstream's own upgrade for how it was installed (Helm, a rendered chart, the manifests)."""
    addon, controller = found.addon, found.controller
    if found.release is not None:
        return _release_commands(found, upgrade=True)
    if controller is not None and controller.chart_instance:
        return [
            f"helm template {controller.chart_instance} {_charts(addon)} --version {addon.pinned} "
            f"--namespace {controller.namespace} --include-crds | {APPLY} -f -"
        ]
    return [f"{APPLY} -f {RELEASES[addon.key]}/v{addon.pinned}/manifests.yaml"]


def _stored_outside(found: FoundInstall) -> list[str]:
    """CRD versions etcd may still hold that the pinned CRDs do not list: the API server refuses a
    CRD update that drops a version in ``status.storedVersions``."""
    return [
        f"{crd.name} stores {v}"
        for crd in found.crds
        for v in crd.stored
        if v not in found.addon.pinned_versions
    ]


def _options(*lines: str) -> tuple[str, ...]:
    return tuple(lines)


def decide(found: FoundInstall, choice: Choice, fits: Fit) -> Decision:
    """One add-on's outcome; the first matching row of docs/existing-installs.md's table."""
    addon = found.addon
    pinned = addon.pinned
    where = found.describe()
    if not found.present:
        return Decision(addon, "install", f"none on the cluster: installs {pinned}", found)
    namespaces = {c.namespace for c in found.controllers} | {r.namespace for r in found.releases}
    if len(found.controllers) > 1 or len(found.releases) > 1 or len(namespaces) > 1:
        fix = [f"kubectl delete deployment {c.name} --namespace {c.namespace}" for c in found.controllers]
        fix += [f"helm uninstall {r.name} --namespace {r.namespace}" for r in found.releases]
        return Decision(
            addon,
            "refuse",
            f"the cluster already runs more than one: {where}; keep one (remove the others), then run again",
            found,
            fix=tuple(fix),
        )
    if found.platform_installed:
        adopted = found.adopted_from
        reason = "the platform's own install (an earlier pulumi up) is updated to " + str(pinned)
        if adopted:
            reason += f" (taken over from {adopted}: kept on pulumi destroy)"
        return Decision(addon, "install", reason, found, adopt=adopted is not None)
    keep = f"set {KEY}: use, to keep it as it is"
    if choice == "refuse":
        return Decision(
            addon,
            "refuse",
            f"the cluster already runs {where} and {KEY} is refuse",
            found,
            fix=_options(keep, *_platform_upgrade(found), *(f"remove it: {c}" for c in _removal(found))),
        )
    controller = found.controller
    if controller is None:
        return _leftovers(found, where)
    version = found.version
    if choice == "use" or (version is not None and version >= pinned and not fits.gaps):
        if not fits.gaps:
            newer = (
                f"; newer than the pinned {pinned}, which the platform never downgrades to"
                if version and version > pinned
                else ""
            )
            return Decision(
                addon,
                "use",
                f"{where} serves everything the stack needs{newer}: "
                f"the platform installs no {addon.title} chart",
                found,
                notes=fits.notes,
            )
        return Decision(
            addon,
            "refuse",
            f"{where} lacks what the stack needs: " + "; ".join(fits.gaps),
            found,
            fix=_options(
                *_platform_upgrade(found), *(f"upgrade it yourself: {c}" for c in _upgrade_options(found))
            ),
            notes=fits.notes,
        )
    # choice == "upgrade"
    if version is None:
        return Decision(
            addon,
            "refuse",
            f"{where}: {controller.version_from}; "
            "the platform upgrades only an install whose version it knows",
            found,
            fix=_options(keep, *(f"remove it: {c}" for c in _removal(found))),
        )
    if version > pinned:
        return Decision(
            addon,
            "refuse",
            f"{where} is newer than the pinned {pinned}, which the platform never downgrades to, and lacks: "
            + "; ".join(fits.gaps),
            found,
            fix=_options(*(f"remove it: {c}" for c in _removal(found))),
        )
    problem = _takeover_problem(found)
    if problem is not None:
        return Decision(
            addon,
            "refuse",
            f"{where}: {problem}",
            found,
            fix=_options(*(f"upgrade it yourself: {c}" for c in _upgrade_options(found)), keep),
        )
    if version == pinned:
        what = "the pinned chart is applied again over it with the stack's settings, for: " + "; ".join(
            fits.gaps
        )
        notes = []
    else:
        what = f"-> {pinned}: the pinned chart is applied over it, CRDs first, then the controller"
        notes = [f"objects {version} has and the {pinned} chart does not are left as they are"]
        if addon is KUEUE:
            notes.insert(
                0, "Kueue's upgrade policy: read the notes of " + ", ".join(release_notes(version, pinned))
            )
    return Decision(
        addon,
        "upgrade",
        f"{where} {what} (server-side apply taking over its fields); it stays on pulumi destroy",
        found,
        notes=tuple(notes),
        adopt=True,
    )


def _platform_upgrade(found: FoundInstall) -> list[str]:
    """The ``upgrade`` option, offered where the platform can carry it out."""
    version, pinned = found.version, found.addon.pinned
    if version is None or version > pinned or _takeover_problem(found) is not None:
        return []
    if version == pinned:
        return [f"set {KEY}: upgrade, to let the platform apply the {pinned} chart with the stack's settings"]
    return [f"set {KEY}: upgrade, to let the platform upgrade it to {pinned}"]


def _takeover_problem(found: FoundInstall) -> str | None:
    """Why the pinned chart cannot go over this install as one install, or None."""
    addon, controller = found.addon, found.controller
    if found.release is not None:
        return (
            f"it is Helm release {found.release.namespace}/{found.release.name}: applying the chart over "
            "it would leave Helm a second owner of every object; upgrade it with Helm (upstream's path) "
            "and the next run uses it"
        )
    chart_controller = f"{addon.namespace}/{addon.deployment}"
    if controller is not None and f"{controller.namespace}/{controller.name}" != chart_controller:
        return (
            f"its controller {controller.where} is not the pinned chart's {chart_controller}: "
            "the chart would start a second controller beside it"
        )
    stored = _stored_outside(found)
    if stored:
        return f"{', '.join(stored)}, which the pinned CRDs do not list (migrate the stored objects first)"
    return None


def _leftovers(found: FoundInstall, where: str) -> Decision:
    """CRDs, webhooks or a release record without a running controller."""
    addon = found.addon
    if found.release is not None:
        return Decision(
            addon,
            "refuse",
            f"{where}: its Helm release remains but no controller runs",
            found,
            fix=_options(*_release_commands(found, upgrade=False)),
        )
    if found.webhooks:
        return Decision(
            addon,
            "refuse",
            f"{where}: webhook configurations {', '.join(found.webhooks)} remain with no controller to "
            "answer them, so every request they cover fails",
            found,
            fix=_options(*(f"kubectl delete {w.lower()}" for w in found.webhooks)),  # kind/name
        )
    stored = _stored_outside(found)
    if stored:
        return Decision(
            addon,
            "refuse",
            f"{where}: {', '.join(stored)}, which the pinned CRDs do not list",
            found,
            fix=_options("migrate the stored objects to a version the pinned CRDs list, or delete the CRDs"),
        )
    return Decision(
        addon,
        "install",
        f"{where}: only its CRDs remain; installs {addon.pinned} over them, keeping the objects they hold "
        "(the CRDs stay on pulumi destroy)",
        found,
        adopt=True,
    )


def decide_all(found: FoundInstalls, cfg: PlatformConfig) -> Decisions:
    choice = cfg.kueue.existing_install
    return Decisions(
        jobset=decide(found.jobset, choice, fit(found.jobset, cfg)),
        kueue=decide(found.kueue, choice, fit(found.kueue, cfg)),
        unread=found.kueue.unread,
    )
