"""The review says what the engine does where a provider's own table is not enough.

- The Kubernetes provider (pulumi-kubernetes v4.25.0 provider.go ``DiffConfig``): replaced only when
  both kubeconfigs name an active cluster and those differ, or one is computed; ``clusterIdentifier``
  replaces when changed (not added), and while set and unchanged nothing replaces.
- Resource options as the plan records them: ``replaceOnChanges`` and ``deleteBeforeReplace``
  (pulumi v3.274.0 step_generator.go ``applyReplaceOnChanges``, ``goal.DeleteBeforeReplace``); a
  PriorityClass's ``value`` is immutable (kubernetes v1.34 pkg/apis/scheduling/validation).
- Dependents of a delete-before-replace (``calculateDependentReplacements``): an input taken from the
  replaced resource's outputs is made unknown, and the dependent is replaced when that replaces it.
- A component's inputs are no engine step; a Chart's children are told from what the pinned chart
  renders with each plan's values (data/chart_renders.yaml).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tpu_platform.plan import chart_renders, installs
from tpu_platform.plan.changes import classify, review
from tpu_platform.plan.chart_renders import CHART_TYPE, values_key
from tpu_platform.plan.harness import REDACTED
from tpu_platform.plan.review import format_review
from tpu_platform.plan.stacks import PLANS_DIR

LOCAL = yaml.safe_load((PLANS_DIR / "local.yaml").read_text())
DEV = yaml.safe_load((PLANS_DIR / "dev.yaml").read_text())
PROVIDER = "pulumi:providers:kubernetes"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap::tpu-hotswap-config"
DEPLOYMENT = "kubernetes:apps/v1:Deployment::tpu-hotswap-deployment"
PRIORITY_CLASS = "kubernetes:scheduling.k8s.io/v1:PriorityClass"
HELM = Path(chart_renders.pinned_tools(Path(__file__).resolve().parents[2]).get("helm", {}).get("path", "/-"))


def _kubeconfig(server: str, context: str = "c") -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "k", "cluster": {"server": server}}],
            "contexts": [{"name": context, "context": {"cluster": "k", "user": "u"}}],
            "users": [{"name": "u", "user": {"token": "t"}}],
            "current-context": context,
        }
    )


def _provider(**inputs: Any) -> dict[str, Any]:
    return {"type": PROVIDER, "name": "k8s", "inputs": inputs}


def _action(old: dict[str, Any], new: dict[str, Any]) -> tuple[str, dict[str, str]]:
    change = classify(old, new)
    assert change is not None
    return change.action, {f.path: f.unknown for f in change.fields if f.unknown}


def _resource(plan: dict[str, Any], label: str) -> dict[str, Any]:
    kind, name = label.split("::", 1)
    return next(r for r in plan["resources"] if r["type"] == kind and r["name"] == name)


def _labels(changes: Any) -> dict[str, tuple[str, set[str]]]:
    return {c.label: (c.action, {f.path.split(".", 1)[0] for f in c.fields}) for c in changes}


def test_a_provider_without_a_kubeconfig_is_updated_when_one_is_set() -> None:
    """The live tier's local stack: the committed plan reads the ambient kubeconfig, the test's sets
    one and a context; DiffConfig finds no old active cluster, so nothing is replaced."""
    action, unknown = _action(_provider(context="tpu-local"), _provider(context="live", kubeconfig=REDACTED))
    assert (action, unknown) == ("update", {})


def test_a_provider_is_replaced_when_its_active_cluster_changes() -> None:
    old = _provider(kubeconfig=_kubeconfig("https://a"))
    assert _action(old, _provider(kubeconfig=_kubeconfig("https://b")))[0] == "replace"
    renamed = _provider(kubeconfig=_kubeconfig("https://a", context="d"))  # same cluster, new context
    assert _action(old, renamed)[0] == "update"
    assert _action(old, _provider(kubeconfig="[computed]"))[0] == "replace"
    secret = _provider(kubeconfig=REDACTED, context="x")
    action, unknown = _action(_provider(kubeconfig=REDACTED, context="y"), secret)
    assert action == "update" and "context" in unknown  # the plan cannot read the clusters


def test_a_cluster_identifier_replaces_when_changed_and_holds_while_set() -> None:
    assert _action(_provider(), _provider(clusterIdentifier="a"))[0] == "update"  # added
    assert _action(_provider(clusterIdentifier="a"), _provider(clusterIdentifier="b"))[0] == "replace"
    held = _action(
        _provider(clusterIdentifier="a", kubeconfig=_kubeconfig("https://a")),
        _provider(clusterIdentifier="a", kubeconfig=_kubeconfig("https://b")),
    )
    assert held == ("update", {})


def test_the_plan_records_options_and_property_dependencies() -> None:
    classes = [r for r in LOCAL["resources"] if r["type"] == PRIORITY_CLASS]
    assert classes and all(
        r["options"] == {"deleteBeforeReplace": True, "replaceOnChanges": ["value", "preemptionPolicy"]}
        for r in classes
    )
    binding = _resource(LOCAL, "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding::tpu-hotswap-rolebinding")
    assert binding["propertyDependencies"] == {
        "roleRef": ["kubernetes:rbac.authorization.k8s.io/v1:Role::tpu-hotswap-role"]
    }
    # The Deployment names its ConfigMap as written: ordered after it, it takes none of its outputs.
    deployment = _resource(LOCAL, DEPLOYMENT)
    assert CONFIG_MAP in deployment["dependsOn"] and "propertyDependencies" not in deployment


def test_a_priority_value_change_replaces_the_class_and_updates_the_workload_class() -> None:
    new = copy.deepcopy(LOCAL)
    for r in new["resources"]:
        if r["name"] in ("tpu-priorities-low-priority-job", "tpu-priorities-low-priority-job-workload"):
            r["inputs"]["value"] = 1500000
    changes = _labels(review("local", LOCAL, new).changes)
    assert changes == {
        f"{PRIORITY_CLASS}::tpu-priorities-low-priority-job": ("replace", {"value"}),
        "kubernetes:kueue.x-k8s.io/v1beta2:WorkloadPriorityClass::tpu-priorities-low-priority-job-workload": (
            "update",
            {"value"},
        ),
    }
    replaced = review("local", LOCAL, new).by_action("replace")[0]
    assert "replaceOnChanges value" in replaced.fields[0].replaces


def _hotswap_setting(plan: dict[str, Any]) -> dict[str, Any]:
    new = copy.deepcopy(plan)
    config_map = _resource(new, CONFIG_MAP)
    config_map["inputs"]["data"]["config.yaml"] += "# changed\n"
    annotations = _resource(new, DEPLOYMENT)["inputs"]["spec"]["template"]["metadata"]["annotations"]
    annotations["tpu-platform.dev/config-sha256"] = "0" * 16
    return new


def test_a_settings_change_replaces_the_config_map_and_updates_the_deployment() -> None:
    changes = _labels(review("local", LOCAL, _hotswap_setting(LOCAL)).changes)
    assert changes == {CONFIG_MAP: ("replace", {"data"}), DEPLOYMENT: ("update", {"spec"})}


def test_a_dependent_of_a_delete_before_replace_is_replaced_with_it() -> None:
    """The program before the ConfigMap was named by its literal name: the Deployment's spec took the
    ConfigMap's output, so deleting the ConfigMap first makes the spec unknown, and spec.selector
    replaces a Deployment (pulumi-kubernetes diff.go)."""
    old = copy.deepcopy(LOCAL)
    _resource(old, DEPLOYMENT)["propertyDependencies"] = {"spec": [CONFIG_MAP]}
    new = _hotswap_setting(old)
    result = review("local", old, new)
    assert _labels(result.changes) == {CONFIG_MAP: ("replace", {"data"}), DEPLOYMENT: ("replace", {"spec"})}
    deployment = next(c for c in result.changes if c.label == DEPLOYMENT)
    assert "calculateDependentReplacements" in deployment.fields[0].replaces
    assert CONFIG_MAP in deployment.fields[0].replaces
    # Created first (a new name), the ConfigMap takes no dependent with it.
    renamed = copy.deepcopy(new)
    _resource(renamed, CONFIG_MAP)["inputs"]["metadata"]["name"] = "hotswap-controller-config-2"
    assert _labels(review("local", old, renamed).changes)[DEPLOYMENT] == ("update", {"spec"})


def test_the_delete_before_replace_option_decides_for_the_provider() -> None:
    old = copy.deepcopy(LOCAL)
    _resource(old, DEPLOYMENT)["propertyDependencies"] = {"spec": [CONFIG_MAP]}
    new = _hotswap_setting(old)
    _resource(new, CONFIG_MAP)["options"] = {"deleteBeforeReplace": False}
    assert _labels(review("local", old, new).changes)[DEPLOYMENT] == ("update", {"spec"})


def _kueue_chart(plan: dict[str, Any]) -> dict[str, Any]:
    return next(r for r in plan["resources"] if r["type"] == CHART_TYPE and r["inputs"]["name"] == "kueue")


def _with_values(plan: dict[str, Any], edit: Any, children: Any = None) -> dict[str, Any]:
    """The plan with new Kueue chart values, its install section keyed by them, and ``children``."""
    new = copy.deepcopy(plan)
    chart = _kueue_chart(new)
    edit(chart["inputs"]["values"])
    section = new["installs"]["kueue"]
    section["values"] = values_key(chart["inputs"])[:16]
    if children is None:
        section.pop("children")
    else:
        children(section["children"])
    return new


def _fair_sharing_off(values: dict[str, Any]) -> None:
    values["managerConfig"]["controllerManagerConfigYaml"] += "# fairSharing off\n"


def test_a_chart_values_change_is_listed_apart_and_its_children_are_diffed() -> None:
    def rendered(children: dict[str, Any]) -> None:
        children["core/v1:ConfigMap::kueue-system/kueue-manager-config"]["data"] = "0" * 16
        children["apps/v1:Deployment::kueue-system/kueue-controller-manager"]["spec"] = "1" * 16

    result = review("local", LOCAL, _with_values(LOCAL, _fair_sharing_off, rendered))
    chart = _kueue_chart(LOCAL)["name"]
    assert _labels(result.changes) == {
        f"kubernetes:core/v1:ConfigMap::{chart}:kueue-system/kueue-manager-config": ("replace", {"data"}),
        f"kubernetes:apps/v1:Deployment::{chart}:kueue-system/kueue-controller-manager": ("update", {"spec"}),
    }
    assert [c.label for c in result.components] == [f"{CHART_TYPE}::{chart}"]
    assert result.trustworthy
    text = format_review(result)
    assert "component inputs change" in text and f"inputs  {CHART_TYPE}::{chart}" in text
    assert "installs.kueue.children" not in text


def test_a_chart_change_without_rendered_children_is_not_trusted() -> None:
    result = review("local", LOCAL, _with_values(LOCAL, _fair_sharing_off))
    chart = _kueue_chart(LOCAL)["name"]
    assert result.untold_children == (f"{CHART_TYPE}::{chart}",) and not result.trustworthy
    assert "CHART CHILDREN UNKNOWN" in format_review(result)
    # Unchanged inputs render the same children: a plan without the digests reads as no change.
    older = copy.deepcopy(LOCAL)
    for section in older["installs"].values():
        if isinstance(section, dict):
            section.pop("children", None)
    assert review("local", older, LOCAL).trustworthy and not review("local", older, LOCAL).changes


@pytest.mark.skipif(not HELM.is_file(), reason="the pinned helm is not built (./dev upstream)")
def test_fair_sharing_off_replaces_the_manager_config_and_updates_the_controller() -> None:
    """What the live agreement test's "kueue setting" row sees, from helm template of the pinned chart."""
    new = copy.deepcopy(DEV)
    chart = _kueue_chart(new)
    yaml_text = chart["inputs"]["values"]["managerConfig"]["controllerManagerConfigYaml"]
    config = yaml.safe_load(yaml_text)
    config.pop("fairSharing", None)
    chart["inputs"]["values"]["managerConfig"]["controllerManagerConfigYaml"] = yaml.safe_dump(config)
    renders = dict(chart_renders.load()["renders"])
    folder = chart_renders.chart_folder(chart_renders.default_module_cache(), chart["inputs"])
    if not folder.is_dir():
        pytest.skip(f"{folder} not cached")
    data = chart_renders.load()
    renders[values_key(chart["inputs"])] = chart_renders.render_entry(
        HELM, folder, chart["inputs"], data["kubeVersion"]
    )
    new["installs"] = installs.plan_section(new["resources"], renders)
    result = review("dev", DEV, new)
    name = chart["name"]
    assert _labels(result.changes) == {
        f"kubernetes:core/v1:ConfigMap::{name}:kueue-system/kueue-manager-config": ("replace", {"data"}),
        f"kubernetes:apps/v1:Deployment::{name}:kueue-system/kueue-controller-manager": ("update", {"spec"}),
    }
