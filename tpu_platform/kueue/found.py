"""What a cluster already runs of Kueue and JobSet, told from its API objects.

The reader (``components/cluster_installs.py``) fetches the objects; this module only interprets
them, so the decision (:mod:`tpu_platform.kueue.existing`) is a pure function of what was found.
Per add-on: its CRDs and the versions they serve and store, the controller Deployments and the
version each runs, the Helm release records, the webhook configurations on its API group, and
whether the platform installed it itself (its namespace carries the platform's labels).
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from ..constants import DOMAIN, JOBSET_NAMESPACE, KUEUE_NAMESPACE, LABEL_APP_NAME, LABEL_MANAGED_BY
from .configuration import JOBSET_RELEASE, JOBSET_VERSION, KUEUE_RELEASE, KUEUE_VERSION

JSON = dict[str, Any]
PLATFORM = "tpu-platform"
ADOPTED_ANNOTATION = f"{DOMAIN}/adopted-install"
"""On the namespace of an install the platform took over (``kueue.existingInstall: upgrade``): the
version it found there. The next run reads it and keeps the install retained on ``pulumi destroy``."""
CONFIG_KEY = "controller_manager_config.yaml"
"""The key of the ConfigMap a Kueue controller reads its Configuration from (both charts and the
released manifests mount it at ``/controller_manager_config.yaml``)."""
HELM_SECRET_TYPE = "helm.sh/release.v1"
HELM_RELEASE_SELECTOR = "owner=helm,status=deployed"


@dataclass(frozen=True, order=True)
class Version:
    major: int
    minor: int
    patch: int

    @classmethod
    def parse(cls, text: object) -> Version | None:
        """``v0.17.1`` or ``0.17.1`` (a build or pre-release suffix is not a release: None)."""
        m = re.fullmatch(r"v?(\d+)\.(\d+)\.(\d+)", str(text).strip())
        return cls(int(m[1]), int(m[2]), int(m[3])) if m else None

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"


@dataclass(frozen=True)
class Addon:
    """Kueue or JobSet: how to recognise it on a cluster and what the platform pins of it."""

    key: str
    title: str
    group: str
    image: tuple[str, str]  # the last two path segments of its image repository
    chart: str
    namespace: str  # where the platform installs it
    release: str
    deployment: str  # the pinned chart's controller Deployment
    pinned: Version
    crds: tuple[str, ...]
    pinned_versions: frozenset[str]  # the versions the pinned chart's CRDs list

    @property
    def crd_kinds(self) -> dict[str, str]:
        return {name: name.split(".", 1)[0] for name in self.crds}


def _pinned(text: str) -> Version:
    version = Version.parse(text)
    assert version is not None, text
    return version


# kueue v0.19.2 config/components/crd/bases (../shared/crds/kueue-v0.19.2): each lists v1beta1 and
# v1beta2 (storage); charts/kueue/templates/manager/manager.yaml names the Deployment.
KUEUE = Addon(
    key="kueue",
    title="Kueue",
    group="kueue.x-k8s.io",
    image=("kueue", "kueue"),
    chart="kueue",
    namespace=KUEUE_NAMESPACE,
    release=KUEUE_RELEASE,
    deployment=f"{KUEUE_RELEASE}-controller-manager",
    pinned=_pinned(KUEUE_VERSION),
    crds=tuple(
        f"{plural}.kueue.x-k8s.io"
        for plural in (
            "admissionchecks",
            "clusterqueues",
            "cohorts",
            "localqueues",
            "multikueueclusters",
            "multikueueconfigs",
            "provisioningrequestconfigs",
            "resourceflavors",
            "topologies",
            "workloadpriorityclasses",
            "workloads",
        )
    ),
    pinned_versions=frozenset({"v1beta1", "v1beta2"}),
)
# jobset v0.12.0 charts/jobset/crds/jobset.x-k8s.io_jobsets.yaml (v1alpha2 only);
# charts/jobset/templates/controller/deployment.yaml names the Deployment (jobset.controller.name).
JOBSET = Addon(
    key="jobset",
    title="JobSet",
    group="jobset.x-k8s.io",
    image=("jobset", "jobset"),
    chart="jobset",
    namespace=JOBSET_NAMESPACE,
    release=JOBSET_RELEASE,
    deployment=f"{JOBSET_RELEASE}-controller",
    pinned=_pinned(JOBSET_VERSION),
    crds=("jobsets.jobset.x-k8s.io",),
    pinned_versions=frozenset({"v1alpha2"}),
)
ADDONS = (JOBSET, KUEUE)


# --------------------------------------------------------------------------- what was read


@dataclass(frozen=True)
class ClusterObjects:
    """The reader's raw findings, as the API server returned them."""

    crds: Sequence[JSON] = ()
    deployments: Sequence[JSON] = ()
    webhook_configurations: Sequence[JSON] = ()
    namespaces: Sequence[JSON] = ()
    helm_secrets: Sequence[JSON] = ()
    config_maps: Sequence[JSON] = ()
    unread: Sequence[str] = ()  # what the reader could not read, and why


@dataclass(frozen=True)
class FoundCrd:
    name: str
    served: tuple[str, ...]
    stored: tuple[str, ...]  # status.storedVersions: what etcd may still hold
    schemas: Mapping[str, JSON] = field(compare=False, repr=False)  # served version -> openAPIV3Schema
    kind: str = ""


@dataclass(frozen=True)
class RunningController:
    """A Deployment running the add-on's controller image (or labelled as its controller)."""

    namespace: str
    name: str
    image: str
    version: Version | None
    version_from: str  # where the version was read: the image tag, a label
    config_maps: tuple[str, ...] = ()
    feature_gates: Mapping[str, bool] = field(default_factory=dict, compare=False)  # --feature-gates
    chart_instance: str | None = None  # app.kubernetes.io/instance of a chart-rendered Deployment

    def gate(self, name: str, default: bool) -> bool:
        return self.feature_gates.get(name, default)

    @property
    def where(self) -> str:
        return f"Deployment {self.namespace}/{self.name}"


@dataclass(frozen=True)
class HelmRelease:
    namespace: str
    name: str
    chart: str
    version: Version | None
    revision: int


@dataclass(frozen=True)
class FoundInstall:
    """Everything of one add-on on the cluster; empty when it is not there at all."""

    addon: Addon
    crds: tuple[FoundCrd, ...] = ()
    controllers: tuple[RunningController, ...] = ()
    releases: tuple[HelmRelease, ...] = ()
    webhooks: tuple[str, ...] = ()  # Kind/name of its webhook configurations
    platform_installed: bool = False
    adopted_from: str | None = None
    configuration: JSON | None = field(default=None, compare=False)
    unread: tuple[str, ...] = ()

    @property
    def present(self) -> bool:
        return bool(self.crds or self.controllers or self.releases or self.webhooks)

    @property
    def controller(self) -> RunningController | None:
        return self.controllers[0] if len(self.controllers) == 1 else None

    @property
    def version(self) -> Version | None:
        controller = self.controller
        if controller is not None and controller.version is not None:
            return controller.version
        versions = {r.version for r in self.releases}
        return versions.pop() if len(versions) == 1 else None

    @property
    def release(self) -> HelmRelease | None:
        return self.releases[0] if len(self.releases) == 1 else None

    def crd(self, name: str) -> FoundCrd | None:
        return next((c for c in self.crds if c.name == name), None)

    def describe(self) -> str:
        """``Kueue 0.17.1 (Deployment kueue-system/kueue-controller-manager, Helm release kueue)``."""
        version = self.version
        head = f"{self.addon.title} {version}" if version else f"{self.addon.title} (version unknown)"
        parts = [c.where for c in self.controllers]
        parts += [f"Helm release {r.namespace}/{r.name} (chart {r.chart} {r.version})" for r in self.releases]
        if not self.controllers:
            parts.append("no controller running")
            if self.crds:
                parts.append(f"{len(self.crds)} CRDs")
        return f"{head} ({', '.join(parts)})"


@dataclass(frozen=True)
class FoundInstalls:
    jobset: FoundInstall
    kueue: FoundInstall

    def __iter__(self) -> Iterator[FoundInstall]:
        return iter((self.jobset, self.kueue))


NOTHING = FoundInstalls(FoundInstall(JOBSET), FoundInstall(KUEUE))
"""A cluster with neither: what an offline run (Pulumi's mocks) assumes."""


# --------------------------------------------------------------------------- recognising


def image_parts(image: str) -> tuple[str, str]:
    """``registry.k8s.io/kueue/kueue:v0.17.1`` -> (``registry.k8s.io/kueue/kueue``, ``v0.17.1``);
    an image named by its digest alone has no tag."""
    name = image.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    if colon > slash:
        return name[:colon], name[colon + 1 :]
    return name, ""


def _containers(deployment: JSON) -> list[JSON]:
    spec = ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}
    return [c for c in spec.get("containers") or [] if isinstance(c, dict)]


def _meta(obj: JSON) -> JSON:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _labels(obj: JSON) -> dict[str, str]:
    return {str(k): str(v) for k, v in (_meta(obj).get("labels") or {}).items()}


def controller_image(deployment: JSON, addon: Addon) -> str | None:
    """The container image of ``addon``'s controller in ``deployment``, or None if it runs none.

    By image (any registry or mirror keeps ``kueue/kueue`` and ``jobset/jobset``), else by the labels
    both the charts and the released manifests put on the controller (``app.kubernetes.io/name`` and
    ``control-plane: controller-manager`` or ``app.kubernetes.io/component: controller``)."""
    containers = _containers(deployment)
    for container in containers:
        repository, _ = image_parts(str(container.get("image", "")))
        if tuple(repository.split("/")[-2:]) == addon.image:
            return str(container["image"])
    labels = _labels(deployment)
    controller = (
        labels.get("control-plane") == "controller-manager"
        or labels.get("app.kubernetes.io/component") == "controller"
    )
    if labels.get(LABEL_APP_NAME) == addon.key and controller and containers:
        return str(containers[0].get("image", ""))
    return None


def _version_of(deployment: JSON, image: str) -> tuple[Version | None, str]:
    """The image tag first (what runs), then the charts' labels."""
    _, tag = image_parts(image)
    version = Version.parse(tag)
    if version is not None:
        return version, f"image tag {tag}"
    labels = _labels(deployment)
    version = Version.parse(labels.get("app.kubernetes.io/version", ""))
    if version is not None:
        return version, "label app.kubernetes.io/version"
    chart = labels.get("helm.sh/chart", "")
    version = Version.parse(chart.rsplit("-", 1)[-1]) if "-" in chart else None
    if version is not None:
        return version, "label helm.sh/chart"
    return None, f"image {image} names no release and no version label is set"


def mounted_config_maps(deployment: JSON) -> tuple[str, ...]:
    spec = ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}
    names = [
        str((v.get("configMap") or {}).get("name"))
        for v in spec.get("volumes") or []
        if isinstance(v, dict) and (v.get("configMap") or {}).get("name")
    ]
    return tuple(names)


def feature_gates(deployment: JSON, image: str) -> dict[str, bool]:
    """``--feature-gates=A=true,B=false`` of the controller's container (the charts' way to set them)."""
    gates: dict[str, bool] = {}
    for container in _containers(deployment):
        if container.get("image") != image:
            continue
        for arg in [*(container.get("command") or []), *(container.get("args") or [])]:
            text = str(arg)
            if not text.startswith("--feature-gates="):
                continue
            for pair in text.split("=", 1)[1].split(","):
                name, _, value = pair.partition("=")
                if name.strip() and value.strip().lower() in ("true", "false"):
                    gates[name.strip()] = value.strip().lower() == "true"
    return gates


def _chart_instance(deployment: JSON) -> str | None:
    """The release name a chart rendered it with (``helm.sh/chart`` marks a chart's objects; the
    released manifests carry neither label)."""
    labels = _labels(deployment)
    if "helm.sh/chart" not in labels:
        return None
    return labels.get("app.kubernetes.io/instance") or None


def running_controllers(deployments: Iterable[JSON], addon: Addon) -> tuple[RunningController, ...]:
    found = []
    for deployment in deployments:
        image = controller_image(deployment, addon)
        if image is None:
            continue
        meta = _meta(deployment)
        version, source = _version_of(deployment, image)
        found.append(
            RunningController(
                namespace=str(meta.get("namespace", "")),
                name=str(meta.get("name", "")),
                image=image,
                version=version,
                version_from=source,
                config_maps=mounted_config_maps(deployment),
                feature_gates=feature_gates(deployment, image),
                chart_instance=_chart_instance(deployment),
            )
        )
    return tuple(sorted(found, key=lambda c: (c.namespace, c.name)))


def _hook_groups(hook: JSON) -> set[str]:
    return {str(g) for rule in hook.get("rules") or [] for g in rule.get("apiGroups") or []}


def webhook_services(config: JSON, addon: Addon) -> set[str]:
    """Namespaces of the Services that serve ``config``'s webhooks on the add-on's API group."""
    namespaces = set()
    for hook in config.get("webhooks") or []:
        service = (hook.get("clientConfig") or {}).get("service") or {}
        if addon.group in _hook_groups(hook) and service.get("namespace"):
            namespaces.add(str(service["namespace"]))
    return namespaces


def on_group(config: JSON, addon: Addon) -> bool:
    """Whether a webhook configuration has a webhook on the add-on's API group (by service or URL)."""
    return any(addon.group in _hook_groups(hook) for hook in config.get("webhooks") or [])


def candidate_namespaces(deployments: Iterable[JSON], webhook_configurations: Iterable[JSON]) -> set[str]:
    """Where an install of either add-on may keep its objects: the namespaces of their controllers
    and webhook Services, and the platform's own. The reader reads Helm records only there."""
    deployments = list(deployments)
    configs = list(webhook_configurations)
    found = {a.namespace for a in ADDONS}
    for addon in ADDONS:
        found |= {c.namespace for c in running_controllers(deployments, addon)}
        for config in configs:
            found |= webhook_services(config, addon)
    return found


def helm_release(secret: JSON) -> HelmRelease | None:
    """The release a Helm storage Secret records (``helm.sh/release.v1``: the release as gzipped JSON,
    base64-encoded by Helm and again by the Secret; helm v3 ``pkg/storage/driver/util.go``)."""
    if secret.get("type") != HELM_SECRET_TYPE:
        return None
    data = (secret.get("data") or {}).get("release")
    if not isinstance(data, str):
        return None
    try:
        blob = base64.b64decode(base64.b64decode(data))
        if blob[:2] == b"\x1f\x8b":
            blob = gzip.decompress(blob)
        doc = json.loads(blob)
    except (binascii.Error, OSError, EOFError, ValueError):
        return None
    meta = ((doc.get("chart") or {}).get("metadata")) or {}
    return HelmRelease(
        namespace=str(doc.get("namespace") or _meta(secret).get("namespace", "")),
        name=str(doc.get("name", "")),
        chart=str(meta.get("name", "")),
        version=Version.parse(meta.get("version", "")),
        revision=int(doc.get("version") or 0),
    )


def deployed_releases(secrets: Iterable[JSON], addon: Addon) -> tuple[HelmRelease, ...]:
    """The add-on's deployed releases, one (the latest revision) per namespace and name."""
    latest: dict[tuple[str, str], HelmRelease] = {}
    for secret in secrets:
        labels = _labels(secret)
        if labels.get("owner") != "helm" or labels.get("status") != "deployed":
            continue
        release = helm_release(secret)
        if release is None or release.chart != addon.chart:
            continue
        key = (release.namespace, release.name)
        if key not in latest or latest[key].revision < release.revision:
            latest[key] = release
    return tuple(latest[k] for k in sorted(latest))


def found_crd(doc: JSON) -> FoundCrd:
    spec = doc.get("spec") or {}
    served = [v for v in spec.get("versions") or [] if v.get("served")]
    return FoundCrd(
        name=str(_meta(doc).get("name", "")),
        kind=str((spec.get("names") or {}).get("kind", "")),
        served=tuple(str(v["name"]) for v in served),
        stored=tuple(str(v) for v in (doc.get("status") or {}).get("storedVersions") or []),
        schemas={str(v["name"]): ((v.get("schema") or {}).get("openAPIV3Schema") or {}) for v in served},
    )


def kueue_configuration(config_maps: Iterable[JSON], controller: RunningController | None) -> JSON | None:
    """The Configuration the controller mounts (its ConfigMap's ``controller_manager_config.yaml``)."""
    if controller is None:
        return None
    for config_map in config_maps:
        meta = _meta(config_map)
        if meta.get("namespace") != controller.namespace or meta.get("name") not in controller.config_maps:
            continue
        text = (config_map.get("data") or {}).get(CONFIG_KEY)
        if isinstance(text, str):
            try:
                doc = yaml.safe_load(text)
            except yaml.YAMLError:
                return None
            return doc if isinstance(doc, dict) else None
    return None


def _install(objects: ClusterObjects, addon: Addon) -> FoundInstall:
    crds = tuple(found_crd(d) for d in objects.crds if _meta(d).get("name") in addon.crds)
    controllers = running_controllers(objects.deployments, addon)
    webhooks = tuple(
        sorted(
            {
                f"{c.get('kind')}/{_meta(c).get('name')}"
                for c in objects.webhook_configurations
                if on_group(c, addon)
            }
        )
    )
    namespaces = {str(_meta(n).get("name")): n for n in objects.namespaces}
    home = namespaces.get(addon.namespace)
    ours = (
        home is not None
        and _labels(home).get(LABEL_MANAGED_BY) == PLATFORM
        and all(c.namespace == addon.namespace for c in controllers)
    )
    adopted = (_meta(home).get("annotations") or {}).get(ADOPTED_ANNOTATION) if ours and home else None
    configuration = (
        kueue_configuration(objects.config_maps, controllers[0] if len(controllers) == 1 else None)
        if addon is KUEUE
        else None
    )
    return FoundInstall(
        addon=addon,
        crds=crds,
        controllers=controllers,
        releases=deployed_releases(objects.helm_secrets, addon),
        webhooks=webhooks,
        platform_installed=ours,
        adopted_from=str(adopted) if adopted is not None else None,
        configuration=configuration,
        unread=tuple(objects.unread),
    )


def found_installs(objects: ClusterObjects) -> FoundInstalls:
    return FoundInstalls(jobset=_install(objects, JOBSET), kueue=_install(objects, KUEUE))
