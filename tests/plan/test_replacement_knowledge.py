"""Replacement knowledge for every resource type a plan holds, derived from each provider's source.

Google types: ForceNew of hashicorp/terraform-provider-google v7.44.0, named as the pulumi-gcp 10.2.0
SDK names them; Kubernetes kinds: pulumi-kubernetes v4.25.0 ``forceNewProperties`` (diff.go) and
``DiffConfig`` (provider.go); components: the engine's step generator (pulumi v3.274.0); a type with
none of these fails the review with the command that derives it.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tpu_platform.plan import chart_children, knowledge, pulumi_rules
from tpu_platform.plan.changes import classify, review
from tpu_platform.plan.force_new import GKE_TYPES, GOOGLE_TYPES, google, load
from tpu_platform.plan.go_schema import Evaluator, Source, tokenize
from tpu_platform.plan.review import format_review, review_stack
from tpu_platform.plan.sdk_names import args_class, plural_forms, resolve
from tpu_platform.plan.stacks import PLANS_DIR

PLANS = {path.stem: yaml.safe_load(path.read_text()) for path in sorted(PLANS_DIR.glob("*.yaml"))}
DEV = PLANS["dev"]
MIRROR = Path("/work/.mirror/hashicorp+terraform-provider-google/repo")
GOMODCACHE = Path.home() / "go" / "pkg" / "mod"
K8S_MODULE = GOMODCACHE / "github.com/pulumi/pulumi-kubernetes/provider/v4@v4.0.0-20260115033456-f47bc2d6f199"
ENGINE_MODULE = GOMODCACHE / "github.com/pulumi/pulumi/pkg/v3@v3.274.0"


def _entry(plan: dict[str, Any], resource_type: str, name: str | None = None) -> dict[str, Any]:
    return copy.deepcopy(
        next(r for r in plan["resources"] if r["type"] == resource_type and name in (None, r["name"]))
    )


def _changed(plan: dict[str, Any], resource_type: str, edit: Any) -> dict[str, Any]:
    new = copy.deepcopy(plan)
    target = next(r for r in new["resources"] if r["type"] == resource_type)
    edit(target["inputs"])
    return new


def test_every_type_the_plans_hold_has_derived_knowledge() -> None:
    types = {r["type"] for plan in PLANS.values() for r in plan["resources"]}
    assert len(types) > 60
    missing = sorted(t for t in types if knowledge.rules(t) is None)
    assert missing == [], missing
    for plan in PLANS.values():
        assert review("s", plan, plan).trustworthy


def test_a_service_account_id_and_a_topic_name_are_replacements() -> None:
    """Done when: the two changes the user saw as updates show as replace, naming the ForceNew field."""

    def rename_account(inputs: dict[str, Any]) -> None:
        inputs["accountId"] += "-b"

    def rename_topic(inputs: dict[str, Any]) -> None:
        inputs["name"] += "-b"

    new = _changed(
        _changed(DEV, "gcp:serviceaccount/account:Account", rename_account),
        "gcp:pubsub/topic:Topic",
        rename_topic,
    )
    result = review("dev", DEV, new)
    assert {(c.type, c.action) for c in result.changes} == {
        ("gcp:serviceaccount/account:Account", "replace"),
        ("gcp:pubsub/topic:Topic", "replace"),
    }
    text = format_review(result)
    assert "replace gcp:serviceaccount/account:Account::" in text and "accountId: " in text
    assert "ForceNew in hashicorp/terraform-provider-google v7.44.0 (google_service_account)" in text
    assert "ForceNew in hashicorp/terraform-provider-google v7.44.0 (google_pubsub_topic)" in text


@pytest.mark.parametrize(
    ("resource_type", "path", "value", "action"),
    [
        ("gcp:projects/iAMMember:IAMMember", ("role",), "roles/viewer", "replace"),
        ("gcp:projects/iAMCustomRole:IAMCustomRole", ("roleId",), "other", "replace"),
        ("gcp:projects/iAMCustomRole:IAMCustomRole", ("title",), "Other", "update"),
        ("gcp:compute/firewall:Firewall", ("direction",), "EGRESS", "replace"),
        ("gcp:compute/firewall:Firewall", ("sourceRanges",), ["10.0.0.0/8"], "update"),
        ("gcp:projects/service:Service", ("service",), "compute.googleapis.com", "replace"),
        ("gcp:monitoring/dashboard:Dashboard", ("dashboardJson",), "{}", "update"),
        ("gcp:tags/tagKey:TagKey", ("shortName",), "other", "replace"),
        ("gcp:tags/tagKey:TagKey", ("description",), "other", "update"),
    ],
)
def test_google_types_follow_their_own_force_new_flags(
    resource_type: str, path: tuple[str, ...], value: Any, action: str
) -> None:
    plan = next(p for p in PLANS.values() if any(r["type"] == resource_type for r in p["resources"]))
    old = _entry(plan, resource_type)
    new = copy.deepcopy(old)
    new["inputs"][path[0]] = value
    change = classify(old, new)
    assert change is not None and change.action == action


def test_a_type_without_knowledge_fails_the_review_with_the_fix() -> None:
    old = copy.deepcopy(DEV)
    new = copy.deepcopy(DEV)
    for plan in (old, new):
        plan["resources"].append({"type": "gcp:storage/bucket:Bucket", "name": "b", "inputs": {"name": "a"}})
    new["resources"][-1]["inputs"]["name"] = "b"
    outcome = review_stack("dev", yaml.safe_dump(old), yaml.safe_dump(new), {}, "stacks/Pulumi.dev.yaml")
    assert outcome.status == 2 and outcome.result.unknown_types == ("gcp:storage/bucket:Bucket",)
    text = format_review(outcome.result)
    assert "!! NO REPLACEMENT KNOWLEDGE" in text
    assert "gcp:storage/bucket:Bucket: no replacement knowledge" in text
    assert "python -m tpu_platform.plan.force_new" in text
    assert "unknown gcp:storage/bucket:Bucket::b" in text  # never shown as an update


def test_a_field_the_provider_source_lacks_is_unknown_not_an_update() -> None:
    old = _entry(DEV, "gcp:container/nodePool:NodePool")
    new = copy.deepcopy(old)
    new["inputs"]["bestEffortProvisioning"] = {"enabled": True}  # beta-only: not in the GA source read
    change = classify(old, new)
    assert change is not None and change.unknown and "bestEffortProvisioning" in change.unknown[0].unknown
    result = review("dev", {"resources": [old]}, {"resources": [new]})
    assert not result.trustworthy and "  unknown gcp:container/nodePool:NodePool::" in format_review(result)


def test_kubernetes_rules_come_from_pulumi_kubernetes() -> None:
    deployment = _entry(DEV, "kubernetes:apps/v1:Deployment")
    relabel = copy.deepcopy(deployment)
    relabel["inputs"]["spec"]["selector"]["matchLabels"]["x"] = "y"
    change = classify(deployment, relabel)
    assert change is not None and change.action == "replace" and "diff.go" in change.deciding[0].replaces
    scaled = copy.deepcopy(deployment)
    scaled["inputs"]["spec"]["replicas"] = 3
    change = classify(deployment, scaled)
    assert change is not None and change.action == "update"


def test_a_config_map_is_replaced_unless_its_provider_makes_it_mutable() -> None:
    old = _entry(DEV, "kubernetes:core/v1:ConfigMap", "tpu-hotswap-config")
    new = copy.deepcopy(old)
    new["inputs"]["data"]["config.yaml"] = new["inputs"]["data"]["config.yaml"].replace("0.55", "0.6")
    change = classify(old, new)
    assert change is not None and change.action == "replace"
    mutable = classify(old, new, {"enableConfigMapMutable": True})
    assert mutable is not None and mutable.action == "update"
    frozen = copy.deepcopy(new)
    frozen["inputs"]["immutable"] = True
    still = classify(old, frozen, {"enableConfigMapMutable": True})
    assert still is not None and still.action == "replace"


def test_a_replaced_kubernetes_provider_replaces_its_resources() -> None:
    old, new = copy.deepcopy(DEV), copy.deepcopy(DEV)
    for plan, identifier in ((old, "here"), (new, "elsewhere")):  # DiffConfig: changed, not added
        provider = next(r for r in plan["resources"] if r["type"] == "pulumi:providers:kubernetes")
        provider["inputs"]["clusterIdentifier"] = identifier
    result = review("dev", old, new)
    replaced = {c.label for c in result.by_action("replace")}
    assert f"pulumi:providers:kubernetes::{provider['name']}" in replaced
    owned = [
        r for r in DEV["resources"] if r.get("provider") == f"pulumi:providers:kubernetes::{provider['name']}"
    ]
    # A component keeps no provider in the state (the engine replaces none): its children instead.
    custom = [r for r in owned if not (knowledge.rules(r["type"]) or knowledge.Rules()).component]
    assert custom and all(f"{r['type']}::{r['name']}" in replaced for r in custom)
    charts = [r for r in owned if r["type"] == "kubernetes:helm.sh/v4:Chart"]
    assert charts and not {f"{r['type']}::{r['name']}" for r in charts} & replaced
    for chart in charts:
        rendered = chart_children.children(DEV, chart) or {}
        labels = {"::".join(chart_children.child_label(chart, key)) for key in rendered}
        assert len(labels) > 10 and labels <= replaced, chart["name"]
    assert any("providerChanged" in f.replaces for c in result.by_action("replace") for f in c.fields)


def test_components_are_updated_never_replaced() -> None:
    chart = _entry(DEV, "kubernetes:helm.sh/v4:Chart")
    new = copy.deepcopy(chart)
    new["inputs"]["namespace"] = "elsewhere"
    change = classify(chart, new)
    assert change is not None and change.action == "update" and not change.unknown
    rules = knowledge.rules("tpu-platform:gke:Cluster")
    assert rules is not None and "step_generator.go" in rules.component


def test_the_docker_build_image_never_replaces() -> None:
    old = _entry(DEV, "docker-build:index:Image")
    new = copy.deepcopy(old)
    new["inputs"]["tags"] = ["elsewhere:1"]
    change = classify(old, new)
    assert change is not None and change.action == "update" and not change.unknown


def test_the_schema_reader_follows_helpers_vars_and_merges() -> None:
    source = (
        "package x\n\n"
        "var base = map[string]*schema.Schema{\n"
        '\t"project": {Type: schema.TypeString, Optional: true, ForceNew: true},\n'
        "}\n\n"
        "func allowSchema() *schema.Resource {\n"
        "\treturn &schema.Resource{\n"
        "\t\tSchema: map[string]*schema.Schema{\n"
        '\t\t\t"protocol": {\n\t\t\t\tType:     schema.TypeString,\n'
        "\t\t\t\tRequired: true,\n\t\t\t\tForceNew: true,\n\t\t\t},\n"
        "\t\t},\n\t}\n}\n\n"
        "func ResourceX() *schema.Resource {\n"
        "\treturn &schema.Resource{\n"
        "\t\tIdentity: &schema.ResourceIdentity{SchemaFunc: func() map[string]*schema.Schema {\n"
        '\t\t\treturn map[string]*schema.Schema{"other": {Type: schema.TypeString, ForceNew: true}}\n'
        "\t\t}},\n"
        "\t\tSchema: tpgresource.MergeSchemas(base, map[string]*schema.Schema{\n"
        '\t\t\t"allow": {\n\t\t\t\tType: schema.TypeSet,\n\t\t\t\tOptional: true,\n'
        "\t\t\t\tElem: allowSchema(),\n\t\t\t},\n"
        '\t\t\t"labels": {Type: schema.TypeMap, Optional: true,\n'
        "\t\t\t\tElem: &schema.Schema{Type: schema.TypeString}},\n"
        "\t\t}),\n\t}\n}\n"
    )
    evaluator = Evaluator(Source([source]))
    fields = evaluator.resource("ResourceX")
    assert sorted(fields) == ["allow", "labels", "project"] and not evaluator.unresolved
    assert fields["project"].force_new and fields["allow"].is_block_list and not fields["allow"].force_new
    assert fields["allow"].fields["protocol"].force_new and fields["labels"].type == "TypeMap"
    assert [t.text for t in tokenize("a\nb")] == ["a", ";", "b"]


def test_names_are_the_sdks_own() -> None:
    assert "allows" in plural_forms("allow") and plural_forms("node_affinity")[0] == "node_affinities"
    data = load()
    firewall = data["google"]["resources"]["gcp:compute/firewall:Firewall"]
    assert firewall["terraform"] == "google_compute_firewall" and "direction" in firewall["forceNew"]
    pool = data["gke"]["resources"]["gcp:container/nodePool:NodePool"]["forceNew"]
    assert "nodeConfig.guestAccelerators.type" in pool  # TF guest_accelerator, a list: plural in Pulumi
    assert args_class("gcp:compute/firewall:Firewall", "pulumi_gcp").__name__ == "FirewallArgs"
    empty = resolve({}, args_class("gcp:pubsub/topic:Topic", "pulumi_gcp"))
    assert "name" in empty.sdk_only  # nothing matched: every SDK input is reported


def test_the_data_cites_its_sources() -> None:
    data = load()
    for section in ("gke", "google", "kubernetes", "engine"):
        assert data[section]["files"] and all(len(h) == 64 for h in data[section]["files"].values()), section
    assert data["kubernetes"]["tag"] == "v4.25.0" and "f47bc2d6f199" in data["kubernetes"]["module"]
    assert data["engine"]["module"].endswith("@v3.274.0")
    assert len(data["dockerBuild"]["resources"]["docker-build:index:Image"]["diffSha256"]) == 64


@pytest.mark.skipif(not MIRROR.is_dir(), reason="no mirror of terraform-provider-google")
def test_the_google_sections_rederive_from_the_provider_source() -> None:
    data = load()
    for key, types in (("gke", GKE_TYPES), ("google", GOOGLE_TYPES)):
        fresh = google(MIRROR, data[key]["tag"], types)
        assert fresh["files"] == data[key]["files"], key
        assert fresh["resources"] == data[key]["resources"], key


@pytest.mark.skipif(not K8S_MODULE.is_dir() or not ENGINE_MODULE.is_dir(), reason="Go module cache absent")
def test_the_kubernetes_and_engine_rules_rederive_from_their_source() -> None:
    data = load()
    texts, shas = pulumi_rules.read(K8S_MODULE, pulumi_rules.KUBERNETES_FILES)
    assert shas == data["kubernetes"]["files"]
    derived = pulumi_rules.kubernetes(texts)
    assert json.loads(json.dumps(derived)) == {k: data["kubernetes"][k] for k in derived}
    assert derived["kinds"]["batch/v1:Job"][-1] == "spec.template"
    assert derived["components"] == [
        "kubernetes:helm.sh/v4:Chart",
        "kubernetes:kustomize/v2:Directory",
        "kubernetes:yaml/v2:ConfigFile",
        "kubernetes:yaml/v2:ConfigGroup",
    ]
    engine_texts, engine_shas = pulumi_rules.read(ENGINE_MODULE, (pulumi_rules.STEP_GENERATOR_FILE,))
    assert engine_shas == data["engine"]["files"]
    assert (
        pulumi_rules.engine(engine_texts[pulumi_rules.STEP_GENERATOR_FILE])["component"]
        == data["engine"]["component"]
    )
