"""The Kueue and JobSet a cluster already runs: what is found, what fits, and the decision table.

Found objects are written here as the API server returns them (Deployments, CRDs, Helm's storage
Secrets); the decision rows are docs/existing-installs.md's table, and the properties below hold for
every version a cluster may run.
"""

from __future__ import annotations

import base64
import copy
import gzip
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import MINIMAL_STACK
from tpu_platform.config import PlatformConfig, parse_platform
from tpu_platform.kueue import compatibility, existing, found
from tpu_platform.kueue.compatibility import Fit
from tpu_platform.kueue.existing import decide, release_notes
from tpu_platform.kueue.found import JOBSET, KUEUE, Addon, ClusterObjects, FoundInstall, Version

JSON = dict[str, Any]
OPEN: JSON = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
KINDS = {
    "admissionchecks": "AdmissionCheck",
    "clusterqueues": "ClusterQueue",
    "cohorts": "Cohort",
    "localqueues": "LocalQueue",
    "multikueueclusters": "MultiKueueCluster",
    "multikueueconfigs": "MultiKueueConfig",
    "provisioningrequestconfigs": "ProvisioningRequestConfig",
    "resourceflavors": "ResourceFlavor",
    "topologies": "Topology",
    "workloadpriorityclasses": "WorkloadPriorityClass",
    "workloads": "Workload",
}


def platform(**kueue: Any) -> PlatformConfig:
    raw = {key.split(":", 1)[1]: value for key, value in copy.deepcopy(MINIMAL_STACK).items()}
    raw["cluster"] = {"name": "tpu-test", "mode": "kubeconfig"}
    raw["kueue"] = kueue
    return parse_platform(raw)


def deployment(
    namespace: str, name: str, image: str, labels: dict[str, str] | None = None, args: list[str] | None = None
) -> JSON:
    container = {"name": "manager", "image": image, "args": args or []}
    volumes = [{"name": "manager-config", "configMap": {"name": "kueue-manager-config"}}]
    return {
        "metadata": {"namespace": namespace, "name": name, "labels": labels or {}},
        "spec": {"template": {"spec": {"containers": [container], "volumes": volumes}}},
    }


def crd(name: str, kind: str, served: dict[str, JSON], stored: list[str] | None = None) -> JSON:
    versions = [{"name": v, "served": True, "schema": {"openAPIV3Schema": s}} for v, s in served.items()]
    return {
        "metadata": {"name": name},
        "spec": {"names": {"kind": kind}, "versions": versions},
        "status": {"storedVersions": stored if stored is not None else list(served)},
    }


def helm_secret(namespace: str, release: str, chart: str, version: str, revision: int = 1) -> JSON:
    doc = {
        "name": release,
        "namespace": namespace,
        "version": revision,
        "info": {"status": "deployed"},
        "chart": {"metadata": {"name": chart, "version": version}},
    }
    helm = base64.b64encode(gzip.compress(json.dumps(doc).encode()))  # Helm's own encoding
    return {
        "metadata": {
            "namespace": namespace,
            "name": f"sh.helm.release.v1.{release}.v{revision}",
            "labels": {"owner": "helm", "status": "deployed", "name": release},
        },
        "type": "helm.sh/release.v1",
        "data": {"release": base64.b64encode(helm).decode()},  # and the Secret's
    }


def kueue_at(version: str, args: list[str] | None = None, **extra: Any) -> FoundInstall:
    """Kueue at its chart's place, every CRD open (its schema checks are tested apart)."""
    crds = [crd(n, KINDS[n.split(".")[0]], {"v1beta2": OPEN}) for n in KUEUE.crds]
    config: JSON = {
        "integrations": {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset"]},
        "resources": {"quotaCheckStrategy": "IgnoreUndeclared"},
    }
    config_map = {
        "metadata": {"namespace": "kueue-system", "name": "kueue-manager-config"},
        "data": {"controller_manager_config.yaml": json.dumps(config)},
    }
    objects = ClusterObjects(
        crds=crds,
        deployments=[
            deployment(
                "kueue-system",
                "kueue-controller-manager",
                f"registry.k8s.io/kueue/kueue:{version}",
                args=args,
            )
        ],
        config_maps=[config_map],
        **extra,
    )
    return found.found_installs(objects).kueue


def controller_at(
    addon: Addon, version: Version, *, at_chart_place: bool = True, release: bool = False
) -> FoundInstall:
    name = addon.deployment if at_chart_place else "controller-manager"
    served = "v1beta2" if addon is KUEUE else "v1alpha2"
    objects = ClusterObjects(
        crds=[crd(n, KINDS.get(n.split(".")[0], "JobSet"), {served: OPEN}) for n in addon.crds],
        deployments=[
            deployment(addon.namespace, name, f"registry.k8s.io/{addon.key}/{addon.key}:v{version}")
        ],
        helm_secrets=[helm_secret(addon.namespace, addon.release, addon.chart, str(version))]
        if release
        else [],
    )
    install = found.found_installs(objects)
    return install.kueue if addon is KUEUE else install.jobset


# --------------------------------------------------------------------------- what is found


@pytest.mark.parametrize(
    ("image", "parts"),
    [
        ("registry.k8s.io/kueue/kueue:v0.17.1", ("registry.k8s.io/kueue/kueue", "v0.17.1")),
        ("localhost:5000/kueue/kueue:v0.19.2", ("localhost:5000/kueue/kueue", "v0.19.2")),
        ("localhost:5000/kueue/kueue", ("localhost:5000/kueue/kueue", "")),
        ("registry.k8s.io/kueue/kueue@sha256:abc", ("registry.k8s.io/kueue/kueue", "")),
    ],
)
def test_an_image_splits_into_repository_and_tag(image: str, parts: tuple[str, str]) -> None:
    assert found.image_parts(image) == parts


def test_the_version_comes_from_the_tag_then_the_charts_labels() -> None:
    labelled = deployment(
        "ns",
        "kueue-controller-manager",
        "mirror.example/kueue/kueue@sha256:abc",
        {"helm.sh/chart": "kueue-0.17.1"},
    )
    (controller,) = found.running_controllers([labelled], KUEUE)
    assert (controller.version, controller.version_from) == (Version(0, 17, 1), "label helm.sh/chart")
    (tagged,) = found.running_controllers(
        [deployment("ns", "x", "registry.k8s.io/kueue/kueue:v0.19.2")], KUEUE
    )
    assert tagged.version == Version(0, 19, 2)
    (unknown,) = found.running_controllers([deployment("ns", "x", "registry.k8s.io/kueue/kueue:main")], KUEUE)
    assert unknown.version is None and "names no release" in unknown.version_from


def test_a_controller_is_known_by_its_image_or_its_labels_and_nothing_else() -> None:
    by_labels = deployment(
        "kueue",
        "kueue",
        "mirror.example/x:1",
        {"app.kubernetes.io/name": "kueue", "control-plane": "controller-manager"},
    )
    viz = deployment("kueue", "kueueviz", "registry.k8s.io/kueue/kueueviz-backend:v0.17.1", {})
    assert [c.name for c in found.running_controllers([by_labels, viz], KUEUE)] == ["kueue"]
    assert found.running_controllers([by_labels], JOBSET) == ()


def test_feature_gates_are_read_from_the_controllers_arguments() -> None:
    image = "registry.k8s.io/kueue/kueue:v0.18.0"
    dep = deployment(
        "kueue-system",
        "kueue-controller-manager",
        image,
        args=["--feature-gates=QuotaCheckStrategy=true,X=false"],
    )
    (controller,) = found.running_controllers([dep], KUEUE)
    assert controller.gate("QuotaCheckStrategy", False) and not controller.gate("X", True)


def test_helms_release_record_is_decoded_and_only_the_latest_deployed_revision_counts() -> None:
    secrets = [
        helm_secret("kueue-system", "kueue", "kueue", "0.17.1", 1),
        helm_secret("kueue-system", "kueue", "kueue", "0.19.2", 2),
    ]
    (release,) = found.deployed_releases(secrets, KUEUE)
    assert (release.name, release.version, release.revision) == ("kueue", Version(0, 19, 2), 2)
    assert found.deployed_releases(secrets, JOBSET) == ()
    assert found.helm_release({"type": "helm.sh/release.v1", "data": {"release": "not base64!"}}) is None


def test_the_platforms_own_install_is_known_by_its_namespace_and_a_takeover_by_its_annotation() -> None:
    ours = {"metadata": {"name": "kueue-system", "labels": {"app.kubernetes.io/managed-by": "tpu-platform"}}}
    taken = copy.deepcopy(ours)
    taken["metadata"]["annotations"] = {found.ADOPTED_ANNOTATION: "Kueue 0.17.1"}
    assert kueue_at("v0.19.2", namespaces=[ours]).platform_installed
    install = kueue_at("v0.19.2", namespaces=[taken])
    assert install.platform_installed and install.adopted_from == "Kueue 0.17.1"
    assert not kueue_at("v0.19.2", namespaces=[{"metadata": {"name": "kueue-system"}}]).platform_installed


def test_the_reader_looks_for_releases_where_controllers_and_webhook_services_are() -> None:
    webhook = {
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "vwc"},
        "webhooks": [
            {"rules": [{"apiGroups": ["jobset.x-k8s.io"]}], "clientConfig": {"service": {"namespace": "js"}}}
        ],
    }
    dep = deployment("kq", "kueue-controller-manager", "registry.k8s.io/kueue/kueue:v0.17.1")
    assert found.candidate_namespaces([dep], [webhook]) == {"kq", "js", "kueue-system", "jobset-system"}
    assert found.found_installs(ClusterObjects(webhook_configurations=[webhook])).jobset.webhooks == (
        "ValidatingWebhookConfiguration/vwc",
    )


# --------------------------------------------------------------------------- what fits


def test_schema_gaps_name_unknown_fields_and_values_outside_an_enum() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "mode": {"type": "string", "enum": ["A"]},
                    "labels": {"additionalProperties": {"type": "string"}},
                },
            }
        },
    }
    value = {"spec": {"mode": "B", "labels": {"x": "y"}, "newField": 1}}
    assert compatibility.schema_gaps(value, schema) == ["spec.mode: 'B' (it takes A)", "field spec.newField"]


def test_an_object_of_a_version_the_crd_does_not_serve_is_a_gap() -> None:
    install = FoundInstall(
        KUEUE, crds=(found.found_crd(crd("clusterqueues.kueue.x-k8s.io", "ClusterQueue", {"v1beta1": OPEN})),)
    )
    gaps = compatibility.object_gaps(
        install, [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue"}]
    )
    assert gaps == ["ClusterQueue: clusterqueues.kueue.x-k8s.io does not serve v1beta2 (serves v1beta1)"]
    assert compatibility.object_gaps(
        install, [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort"}]
    ) == ["Cohort: no CRD on the cluster"]


@pytest.mark.parametrize(
    ("version", "gates", "gap"),
    [
        ("v0.17.1", [], "does not run QuotaCheckStrategy"),
        ("v0.18.0", [], "does not run QuotaCheckStrategy"),
        ("v0.18.0", ["--feature-gates=QuotaCheckStrategy=true"], None),
        ("v0.19.2", [], None),
        ("v0.19.2", ["--feature-gates=QuotaCheckStrategy=false"], "does not run QuotaCheckStrategy"),
    ],
)
def test_ignoring_undeclared_resources_needs_kueue_0_19_or_its_gate(
    version: str, gates: list[str], gap: str | None
) -> None:
    install = kueue_at(version, args=gates)
    fit = compatibility.kueue_fit(install, platform())
    assert (gap is None) == (not fit.gaps), fit.gaps
    if gap is not None:
        assert any(gap in g for g in fit.gaps)
    assert not compatibility.kueue_fit(install, platform(quotaCheckStrategy="BlockUndeclared")).gaps


def test_a_configuration_without_jobset_or_ignoring_undeclared_is_a_gap_and_other_settings_are_notes() -> (
    None
):
    install = kueue_at("v0.19.2")
    assert install.configuration is not None
    install = FoundInstall(
        KUEUE,
        crds=install.crds,
        controllers=install.controllers,
        configuration={"integrations": {"frameworks": ["batch/job"]}},
    )
    fit = compatibility.kueue_fit(install, platform(fairSharing={"enabled": True}))
    assert any("does not manage jobset.x-k8s.io/jobset" in g for g in fit.gaps)
    assert any("quotaCheckStrategy unset (BlockUndeclared)" in g for g in fit.gaps)
    assert any(n.startswith("kueue fairSharing: the cluster's unset") for n in fit.notes)


def test_jobset_before_0_9_lacks_the_pod_label_the_hotswap_controller_follows() -> None:
    old = controller_at(JOBSET, Version(0, 8, 1))
    raw = {key.split(":", 1)[1]: value for key, value in copy.deepcopy(MINIMAL_STACK).items()}
    raw["cluster"] = {"name": "tpu-test", "mode": "kubeconfig"}
    raw["hotswap"] = {"enabled": True, "image": "example.com/hotswap:v1", "computeCorroboration": False}
    with_hotswap = parse_platform(raw)
    assert any("jobset-uid" in g for g in compatibility.jobset_fit(old, with_hotswap).gaps)
    assert not compatibility.jobset_fit(controller_at(JOBSET, Version(0, 10, 1)), with_hotswap).gaps
    raw["hotswap"] = {"enabled": False}
    assert not compatibility.jobset_fit(old, parse_platform(raw)).gaps


# --------------------------------------------------------------------------- the decision table

NO_GAPS = Fit()
GAPS = Fit(gaps=("something the stack needs",))
P_KUEUE, P_JOBSET = KUEUE.pinned, JOBSET.pinned
OLDER = Version(0, 17, 1)
NEWER = Version(0, 20, 0)


@pytest.mark.parametrize(
    ("install", "choice", "fits", "action", "words"),
    [
        (FoundInstall(KUEUE), "refuse", NO_GAPS, "install", "none on the cluster"),
        (controller_at(KUEUE, OLDER), "use", NO_GAPS, "use", "installs no Kueue chart"),
        (controller_at(KUEUE, OLDER), "use", GAPS, "refuse", "lacks what the stack needs"),
        (controller_at(KUEUE, OLDER), "refuse", NO_GAPS, "refuse", "kueue.existingInstall is refuse"),
        (controller_at(KUEUE, OLDER), "upgrade", NO_GAPS, "upgrade", "-> 0.19.2"),
        (controller_at(KUEUE, OLDER), "upgrade", GAPS, "upgrade", "-> 0.19.2"),
        (controller_at(KUEUE, P_KUEUE), "upgrade", NO_GAPS, "use", "serves everything"),
        (controller_at(KUEUE, P_KUEUE), "upgrade", GAPS, "upgrade", "applied again over it"),
        (controller_at(KUEUE, NEWER), "upgrade", NO_GAPS, "use", "never downgrades"),
        (controller_at(KUEUE, NEWER), "upgrade", GAPS, "refuse", "never downgrades"),
        (controller_at(KUEUE, OLDER, release=True), "upgrade", NO_GAPS, "refuse", "Helm release"),
        (
            controller_at(KUEUE, OLDER, at_chart_place=False),
            "upgrade",
            NO_GAPS,
            "refuse",
            "second controller",
        ),
        (controller_at(JOBSET, Version(0, 10, 1)), "upgrade", NO_GAPS, "upgrade", "-> 0.12.0"),
    ],
)
def test_the_decision_table(
    install: FoundInstall, choice: existing.Choice, fits: Fit, action: str, words: str
) -> None:
    decision = decide(install, choice, fits)
    assert decision.action == action, decision.lines()
    assert words in decision.reason, decision.reason


def test_two_installs_found_are_refused_whatever_the_choice() -> None:
    objects = ClusterObjects(
        deployments=[
            deployment("kueue-system", "kueue-controller-manager", "registry.k8s.io/kueue/kueue:v0.17.1"),
            deployment("other", "kueue-controller-manager", "registry.k8s.io/kueue/kueue:v0.19.2"),
        ]
    )
    install = found.found_installs(objects).kueue
    for choice in ("use", "upgrade", "refuse"):
        decision = decide(install, choice, NO_GAPS)
        assert decision.action == "refuse" and "more than one" in decision.reason
        assert decision.fix == (
            "kubectl delete deployment kueue-controller-manager --namespace kueue-system",
            "kubectl delete deployment kueue-controller-manager --namespace other",
        )


def test_leftovers_without_a_controller() -> None:
    crds_only = found.found_installs(
        ClusterObjects(crds=[crd("jobsets.jobset.x-k8s.io", "JobSet", {"v1alpha2": OPEN})])
    ).jobset
    decision = decide(crds_only, "use", NO_GAPS)
    assert (decision.action, decision.adopt) == ("install", True)
    stale = found.found_installs(
        ClusterObjects(
            crds=[
                crd("jobsets.jobset.x-k8s.io", "JobSet", {"v1alpha2": OPEN}, stored=["v1alpha1", "v1alpha2"])
            ]
        )
    ).jobset
    assert "stores v1alpha1" in decide(stale, "use", NO_GAPS).reason
    webhook = {
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "jobset-validating-webhook-configuration"},
        "webhooks": [{"rules": [{"apiGroups": ["jobset.x-k8s.io"]}]}],
    }
    orphaned = decide(
        found.found_installs(ClusterObjects(webhook_configurations=[webhook])).jobset, "use", NO_GAPS
    )
    assert orphaned.action == "refuse"
    assert orphaned.fix == (
        "kubectl delete validatingwebhookconfiguration/jobset-validating-webhook-configuration",
    )


def test_a_refusal_names_the_exact_commands_of_how_it_was_installed() -> None:
    release = decide(controller_at(JOBSET, Version(0, 10, 1), release=True), "use", GAPS)
    assert release.fix[-2:] == (
        "upgrade it yourself: kubectl apply --server-side --force-conflicts -f https://raw.githubusercontent.com/"
        "kubernetes-sigs/jobset/v0.12.0/charts/jobset/crds/jobset.x-k8s.io_jobsets.yaml",
        "upgrade it yourself: helm upgrade jobset oci://registry.k8s.io/jobset/charts/jobset "
        "--version 0.12.0 --namespace jobset-system",
    )
    manifests = decide(controller_at(KUEUE, OLDER), "refuse", NO_GAPS)
    assert manifests.fix == (
        "set kueue.existingInstall: use, to keep it as it is",
        "set kueue.existingInstall: upgrade, to let the platform upgrade it to 0.19.2",
        "remove it: kubectl delete -f https://github.com/kubernetes-sigs/kueue/releases/download/v0.17.1/manifests.yaml",
    )
    labels = {"helm.sh/chart": "kueue-0.17.1", "app.kubernetes.io/instance": "kueue"}
    rendered = found.found_installs(
        ClusterObjects(
            deployments=[
                deployment(
                    "kueue-system", "kueue-controller-manager", "registry.k8s.io/kueue/kueue:v0.17.1", labels
                )
            ]
        )
    ).kueue
    assert decide(rendered, "use", GAPS).fix[-1] == (
        "upgrade it yourself: helm template kueue oci://registry.k8s.io/kueue/charts/kueue --version 0.19.2 "
        "--namespace kueue-system --include-crds | kubectl apply --server-side --force-conflicts -f -"
    )


def test_kueues_upgrade_policy_names_the_notes_to_read() -> None:
    # The policy's own example (upgrade-policy-example.html at v0.19.2): v0.17.1 -> v0.19.2.
    assert release_notes(Version(0, 17, 1), Version(0, 19, 2)) == ["v0.18.0", "v0.19.0", "v0.19.1", "v0.19.2"]
    assert release_notes(Version(0, 19, 0), Version(0, 19, 2)) == ["v0.19.1", "v0.19.2"]
    decision = decide(controller_at(KUEUE, OLDER), "upgrade", NO_GAPS)
    assert decision.notes[0] == "Kueue's upgrade policy: read the notes of v0.18.0, v0.19.0, v0.19.1, v0.19.2"


def test_the_platforms_own_install_is_kept_and_a_taken_over_one_stays_taken_over() -> None:
    ours = {"metadata": {"name": "kueue-system", "labels": {"app.kubernetes.io/managed-by": "tpu-platform"}}}
    for choice in ("use", "upgrade", "refuse"):
        decision = decide(kueue_at("v0.19.2", namespaces=[ours]), choice, GAPS)
        assert (decision.action, decision.adopt) == ("install", False)
    ours["metadata"]["annotations"] = {found.ADOPTED_ANNOTATION: "Kueue 0.17.1"}
    decision = decide(kueue_at("v0.19.2", namespaces=[ours]), "use", NO_GAPS)
    assert (decision.action, decision.adopt) == ("install", True)


def test_a_refusal_stops_the_run_with_every_refused_add_on() -> None:
    decisions = existing.decide_all(
        found.FoundInstalls(controller_at(JOBSET, Version(0, 10, 1)), controller_at(KUEUE, OLDER)),
        platform(existingInstall="refuse"),
    )
    error = decisions.error()
    assert error is not None
    assert "JobSet: refuse: the cluster already runs JobSet 0.10.1" in error
    assert "Kueue: refuse: the cluster already runs Kueue 0.17.1" in error
    assert existing.decide_all(found.NOTHING, platform()).error() is None


VERSIONS = st.builds(Version, st.integers(0, 1), st.integers(0, 30), st.integers(0, 12))


@given(
    version=VERSIONS,
    choice=st.sampled_from(["use", "upgrade", "refuse"]),
    gaps=st.booleans(),
    release=st.booleans(),
    at_chart_place=st.booleans(),
    addon=st.sampled_from([KUEUE, JOBSET]),
)
def test_never_two_installs_and_never_a_downgrade(
    version: Version, choice: existing.Choice, gaps: bool, release: bool, at_chart_place: bool, addon: Addon
) -> None:
    install = controller_at(addon, version, at_chart_place=at_chart_place, release=release)
    decision = decide(install, choice, GAPS if gaps else NO_GAPS)
    # A chart goes on a cluster running a foreign controller only over it: same place, no Helm owner.
    if decision.registers_chart:
        assert decision.action == "upgrade" and decision.adopt and choice == "upgrade"
        assert at_chart_place and not release and version <= addon.pinned
        assert version < addon.pinned or gaps
    if decision.action == "use":
        assert not gaps and choice != "refuse"
    if decision.action == "refuse":
        assert decision.fix, decision
    assert decision.action != "install"
