"""A review's values read whole: line diffs for multi-line text, list items by their name, secrets masked."""

from __future__ import annotations

import copy
import json
from typing import Any

import yaml

from tpu_platform.plan.changes import changed_paths, review
from tpu_platform.plan.review import format_review
from tpu_platform.plan.stacks import PLANS_DIR
from tpu_platform.plan.value_diff import value_lines

DEV = yaml.safe_load((PLANS_DIR / "dev.yaml").read_text())


def _with(edit: Any) -> dict[str, Any]:
    new = copy.deepcopy(DEV)
    edit(new)
    return new


def _resource(plan: dict[str, Any], resource_type: str, name: str | None = None) -> dict[str, Any]:
    return next(r for r in plan["resources"] if r["type"] == resource_type and name in (None, r["name"]))


def test_a_one_line_config_change_is_a_line_diff_not_a_truncated_prefix() -> None:
    def tighten(plan: dict[str, Any]) -> None:
        data = _resource(plan, "kubernetes:core/v1:ConfigMap", "tpu-hotswap-config")["inputs"]["data"]
        data["config.yaml"] = data["config.yaml"].replace(
            "max_bad_node_fraction: 0.55", "max_bad_node_fraction: 0.6"
        )

    text = format_review(review("dev", DEV, _with(tighten)))
    lines = text.splitlines()
    assert "            data.config.yaml:" in lines
    assert "              -max_bad_node_fraction: 0.55" in lines
    assert "              +max_bad_node_fraction: 0.6" in lines
    assert "..." not in text
    assert sum(line.lstrip().startswith(("-", "+")) for line in lines) == 2  # only the line that changed


def test_long_values_are_shown_whole() -> None:
    long = "x" * 300
    (line,) = value_lines("a", "short", long, "")
    assert line == f"a: short -> {long}"


def test_a_json_document_in_a_string_diffs_by_its_lines() -> None:
    old = json.dumps({"widgets": [{"title": "a"}, {"title": "b"}]})
    new = json.dumps({"widgets": [{"title": "a"}, {"title": "c"}]})
    lines = value_lines("dashboardJson", old, new, "")
    assert lines[0] == "dashboardJson:"
    assert '  -      "title": "b"' in lines and '  +      "title": "c"' in lines


def test_lists_of_mappings_are_matched_by_name() -> None:
    old = {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}]}
    new = {
        "containers": [{"name": "z", "image": "9"}, {"name": "a", "image": "2"}, {"name": "b", "image": "1"}]
    }
    assert list(changed_paths(old, new)) == [
        ("containers[name=a].image", "1", "2"),
        ("containers[name=z]", None, {"name": "z", "image": "9"}),
    ]
    by_index = list(changed_paths({"l": [1, 2]}, {"l": [1, 3]}))
    assert by_index == [("l[1]", 2, 3)]


def test_a_container_added_to_a_deployment_is_one_item() -> None:
    def sidecar(plan: dict[str, Any]) -> None:
        pod = _resource(plan, "kubernetes:apps/v1:Deployment")["inputs"]["spec"]["template"]["spec"]
        pod["containers"].insert(0, {"name": "sidecar", "image": "busybox"})

    text = format_review(review("dev", DEV, _with(sidecar)))
    assert (
        'spec.template.spec.containers[name=sidecar]: (unset) -> {"image": "busybox", "name": "sidecar"}'
        in text
    )
    assert "containers[0]" not in text


def test_secrets_stay_masked() -> None:
    def leak(plan: dict[str, Any]) -> None:
        secret = _resource(plan, "kubernetes:core/v1:Secret")["inputs"]
        secret["stringData"] = {"token": "hunter2\nline2"}

    leaked = _with(leak)
    text = format_review(review("dev", DEV, leaked))
    assert "hunter2" not in text and "stringData: (unset) -> [secret]" in text
    again = copy.deepcopy(leaked)
    _resource(again, "kubernetes:core/v1:Secret")["inputs"]["stringData"]["token"] = "hunter3"
    text = format_review(review("dev", leaked, again))
    assert "hunter" not in text and "stringData.token: [secret] -> [secret]" in text
    assert value_lines("kubeconfig", "[secret]", "[secret]\n", "") == ["kubeconfig: [secret] -> [secret]\n"]
