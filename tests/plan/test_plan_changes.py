"""Change classification: which plan changes replace a resource, and the loud TPU section.

Replacement fields come from the providers at the pinned versions (tpu_platform/plan/data/force_new.json):
the Google provider's ForceNew flags (hashicorp/terraform-provider-google v7.44.0,
google/services/container/), pulumi-kubernetes' table (provider/pkg/provider/diff.go).
"""

from __future__ import annotations

import copy
import re
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tpu_platform.cli import main
from tpu_platform.plan.changes import classify, replacement_paths, review
from tpu_platform.plan.force_new import camel_path, force_new_fields, helper_fields, load
from tpu_platform.plan.review import check_plan, format_review
from tpu_platform.plan.stacks import PLANS_DIR, STACKS_DIR

REPO_ROOT = Path(__file__).resolve().parents[2]

PROD = yaml.safe_load((PLANS_DIR / "prod.yaml").read_text())


def _entry(plan: dict[str, Any], name: str) -> dict[str, Any]:
    return copy.deepcopy(next(r for r in plan["resources"] if r["name"] == name))


def _pool() -> dict[str, Any]:
    return _entry(PROD, "tpu-prod-4x4-0")


def test_pins_match_the_installed_providers() -> None:
    pins = load()["pins"]
    requirements = (REPO_ROOT / "requirements.txt").read_text()
    for package, pinned in pins.items():
        assert version(package) == pinned, f"{package} changed: re-derive force_new.json for it"
        assert re.search(rf"^{package}=={re.escape(pinned)} ", requirements, re.M), package


def test_force_new_fields_follow_the_field_not_its_parent() -> None:
    source = (
        "var schemaFoo = map[string]*schema.Schema{\n"
        '\t"placement": {\n'
        "\t\tType: schema.TypeList,\n"
        "\t\tForceNew: true,\n"
        "\t\tElem: &schema.Resource{\n"
        "\t\t\tSchema: map[string]*schema.Schema{\n"
        '\t\t\t\t"topology": {\n'
        "\t\t\t\t\tType: schema.TypeString,\n"
        "\t\t\t\t},\n"
        '\t\t\t\t"policy_name": {\n'
        "\t\t\t\t\tForceNew: true,\n"
        "\t\t\t\t},\n"
        "\t\t\t},\n"
        "\t\t},\n"
        "\t},\n"
        '\t"node_config": schemaNodeConfig(),\n'
        '\t"node_count": {\n'
        "\t\tType: schema.TypeInt,\n"
        "\t},\n"
        "}\n"
    )
    helpers = {"schemaNodeConfig": {"", "spot"}}
    assert force_new_fields(source, helpers) == {
        "placement",
        "placement.policy_name",
        "node_config",
        "node_config.spot",
    }
    helper = (
        "func schemaNodeConfig() *schema.Schema {\n\treturn &schema.Schema{\n\t\tForceNew: true,\n\t}\n}\n"
    )
    assert helper_fields(helper, "schemaNodeConfig") == {""}
    assert camel_path("node_config.reservation_affinity") == "nodeConfig.reservationAffinity"


def test_the_committed_derivation_has_the_fields_that_matter() -> None:
    pool = replacement_paths("gcp:container/nodePool:NodePool", tpu_slice=True)
    for path in ("nodeConfig.reservationAffinity.values", "nodeConfig.spot", "name", "location"):
        assert path in pool and "ForceNew" in pool[path], path
    assert "nodeLocations" in pool and "ForceNew" not in pool["nodeLocations"]
    assert "nodeLocations" not in replacement_paths("gcp:container/nodePool:NodePool", tpu_slice=False)
    assert "nodeCount" not in pool
    assert "metadata.namespace" in replacement_paths("kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue")
    assert "spec.template" in replacement_paths("kubernetes:batch/v1:Job")


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (
            ("nodeConfig", "reservationAffinity", "values"),
            ["other-reservation"],
            "reservationAffinity.values",
        ),
        (("nodeLocations",), ["us-east5-a"], "nodeLocations"),
        (("placementPolicy", "tpuTopology"), "8x8", "placementPolicy.tpuTopology"),
        (("nodeConfig", "spot"), True, "nodeConfig.spot"),
    ],
)
def test_reservation_zone_and_topology_replace_a_slice(path: tuple[str, ...], value: Any, field: str) -> None:
    old, new = _pool(), _pool()
    target = new["inputs"]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    change = classify(old, new)
    assert change is not None and change.action == "replace" and change.tpu_slice
    assert any(field in f.path and f.replaces for f in change.deciding)


def test_in_place_changes_are_updates() -> None:
    old, new = _pool(), _pool()
    new["inputs"]["nodeConfig"]["labels"]["extra"] = "yes"
    new["inputs"]["management"]["autoUpgrade"] = False
    change = classify(old, new)
    assert change is not None and change.action == "update"
    assert {f.path for f in change.deciding} == {"nodeConfig.labels.extra", "management.autoUpgrade"}
    assert classify(old, copy.deepcopy(old)) is None


def test_system_pool_zone_change_is_an_update() -> None:
    old = _entry(PROD, "tpu-cluster-system")
    new = copy.deepcopy(old)
    new["inputs"]["nodeLocations"] = ["us-east5-a"]
    change = classify(old, new)
    assert change is not None and change.action == "update" and not change.tpu_slice


def test_new_parent_and_kubernetes_identity_replace() -> None:
    old, new = _pool(), _pool()
    new["parent"] = "tpu-platform:gke:Other::x"
    change = classify(old, new)
    assert change is not None and change.action == "replace"
    queue = next(r for r in PROD["resources"] if r["type"].endswith(":LocalQueue"))
    moved = copy.deepcopy(queue)
    moved["inputs"]["metadata"]["namespace"] = "elsewhere"
    queue_change = classify(queue, moved)
    assert queue_change is not None and queue_change.action == "replace"
    relabelled = copy.deepcopy(queue)
    relabelled["inputs"]["metadata"].setdefault("labels", {})["x"] = "y"
    relabel_change = classify(queue, relabelled)
    assert relabel_change is not None and relabel_change.action == "update"


def test_deleted_slice_is_loud_and_acknowledgement_names_it() -> None:
    new = copy.deepcopy(PROD)
    new["resources"] = [r for r in new["resources"] if r["name"] != "tpu-prod-8x8-3"]
    result = review("prod", PROD, new)
    assert [(c.action, c.pool_name) for c in result.tpu_losses] == [("delete", "prod-8x8-3")]
    text = format_review(result)
    assert text.splitlines()[1].startswith("!! TPU SLICES REPLACED OR DELETED")
    assert "DELETE node pool prod-8x8-3" in text
    assert review("prod", PROD, new, ["prod-8x8-3"]).unacknowledged_losses == []
    assert review("prod", PROD, new, ["prod-8x8-2"]).unacknowledged_losses != []


def test_check_plan_reads_the_acknowledgement_from_the_stack() -> None:
    text = (PLANS_DIR / "prod.yaml").read_text()
    changed = text.replace("- tpu-v6e-prod-8x8\n", "- tpu-v6e-prod-8x8-new\n")
    assert changed != text
    report, loses = check_plan("prod", text, changed, {})
    assert loses and "REPLACE node pool prod-8x8-0" in report
    ack = {"tpu-platform:acknowledgeReplacement": [f"prod-8x8-{i}" for i in range(4)]}
    assert check_plan("prod", text, changed, ack)[1] is False


def test_plan_check_exits_non_zero_and_prints_the_replaced_pool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Done when: a zone change of a pool in a stack makes `plan --check` fail naming the field."""
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    source = (STACKS_DIR / "Pulumi.dev.yaml").read_text()
    moved = source.replace(
        "      count: 2\n      capacity:\n        type: spot\n",
        "      count: 2\n      zone: us-east5-a\n      capacity:\n        type: spot\n",
    )
    assert moved != source
    (stacks / "Pulumi.dev.yaml").write_text(moved)
    status = main(["plan", "dev", "--check", "--stacks-dir", str(stacks), "--plans-dir", str(PLANS_DIR)])
    out = capsys.readouterr().out
    assert status == 1
    assert "!! TPU SLICES REPLACED OR DELETED" in out
    assert "REPLACE node pool dev-4x4-0" in out and "nodeLocations" in out


_json = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=6)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=15,
)


@settings(max_examples=200, deadline=None)
@given(_json, _json, st.sampled_from(["gcp:container/nodePool:NodePool", "kubernetes:batch/v1:Job", "x:y:Z"]))
def test_classify_any_inputs(old_inputs: Any, new_inputs: Any, type_: str) -> None:
    """Hostile plan entries never crash the review; equal entries are unchanged."""
    old = {"type": type_, "name": "r", "inputs": old_inputs}
    new = {"type": type_, "name": "r", "inputs": new_inputs}
    change = classify(old, new)
    if old_inputs == new_inputs or (not old_inputs and not new_inputs):
        assert change is None
    elif change is not None:
        assert change.action in ("update", "replace") and change.fields
    assert classify(old, copy.deepcopy(old)) is None
    format_review(review("s", {"resources": [old]}, {"resources": [new]}))


def test_a_block_added_with_a_force_new_field_replaces() -> None:
    old, new = _pool(), _pool()
    new["inputs"]["networkConfig"] = {"podRange": "pods-b"}  # networkConfig is not ForceNew, podRange is
    change = classify(old, new)
    assert change is not None and change.action == "replace"
    relaxed = _pool()
    relaxed["inputs"]["networkConfig"] = {"enablePrivateNodes": True}
    change = classify(old, relaxed)
    assert change is not None and change.action == "update"
    no_placement = _pool()
    del no_placement["inputs"]["placementPolicy"]  # the block itself is ForceNew
    change = classify(old, no_placement)
    assert change is not None and change.action == "replace"
