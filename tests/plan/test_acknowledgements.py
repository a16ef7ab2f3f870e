"""tpu-platform:acknowledgeReplacement held to the change: an unknown pool is an error with its field
path and the pool most likely meant; an acknowledgement the change does not need is a warning."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tpu_platform.cli import main
from tpu_platform.plan.review import ACK_KEY, render_outcome, review_stack
from tpu_platform.plan.stacks import PLANS_DIR, STACKS_DIR

PROD_TEXT = (PLANS_DIR / "prod.yaml").read_text()
PROD = yaml.safe_load(PROD_TEXT)
SOURCE = "stacks/Pulumi.prod.yaml"


def _without(plan: dict[str, Any], name: str) -> str:
    new = copy.deepcopy(plan)
    new["resources"] = [r for r in new["resources"] if r["name"] != name]
    return yaml.safe_dump(new)


def test_an_unknown_name_is_a_stack_file_error_with_the_pool_meant() -> None:
    outcome = review_stack("prod", PROD_TEXT, PROD_TEXT, {ACK_KEY: ["prod-4x4-0", "prod-8x8-9"]}, SOURCE)
    assert outcome.status == 2
    (error,) = outcome.errors
    assert error.startswith(
        f"{SOURCE}: tpu-platform:acknowledgeReplacement[1]: unknown TPU slice node pool 'prod-8x8-9'"
    )
    assert "(did you mean 'prod-8x8-" in error
    assert f"!! {error}" in render_outcome(outcome)


def test_an_acknowledgement_the_change_does_not_need_is_a_warning_naming_it() -> None:
    outcome = review_stack("prod", PROD_TEXT, PROD_TEXT, {ACK_KEY: ["prod-4x4-0"]}, SOURCE)
    assert outcome.status == 0 and outcome.errors == ()
    (warning,) = outcome.warnings
    assert warning.startswith(
        f"{SOURCE}: tpu-platform:acknowledgeReplacement[0]: 'prod-4x4-0' is acknowledged"
    )
    assert "neither replaces nor deletes it" in warning
    assert f"warning: {warning}" in render_outcome(outcome)


def test_a_pool_deleted_on_purpose_is_known_from_the_plan_before() -> None:
    deleted = _without(PROD, "tpu-prod-8x8-3")
    outcome = review_stack("prod", PROD_TEXT, deleted, {ACK_KEY: ["prod-8x8-3"]}, SOURCE)
    assert outcome.errors == () and outcome.warnings == () and outcome.status == 0
    unacknowledged = review_stack("prod", PROD_TEXT, deleted, {}, SOURCE)
    assert unacknowledged.status == 1


def test_the_review_command_reports_both(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, head, stacks = tmp_path / "base", tmp_path / "head", tmp_path / "stacks"
    for folder in (base, head, stacks):
        folder.mkdir()
    (base / "prod.yaml").write_text(PROD_TEXT)
    (head / "prod.yaml").write_text(_without(PROD, "tpu-prod-8x8-3"))
    text = (STACKS_DIR / "Pulumi.prod.yaml").read_text()
    (stacks / "Pulumi.prod.yaml").write_text(text + f"  {ACK_KEY}: [prod-8x8-3, prod-4x4-0, prod-8x8-33]\n")
    status = main(["review", str(base), str(head), "--stacks-dir", str(stacks)])
    out = capsys.readouterr().out
    assert status == 2
    assert "tpu-platform:acknowledgeReplacement[2]: unknown TPU slice node pool 'prod-8x8-33'" in out
    assert "tpu-platform:acknowledgeReplacement[1]: 'prod-4x4-0' is acknowledged" in out
    assert "DELETE node pool prod-8x8-3 (tpu-prod-8x8-3) (acknowledged in" in out
