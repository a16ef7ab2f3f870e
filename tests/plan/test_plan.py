"""The offline plan: deterministic, complete, and committed up to date for every stack."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from tpu_platform.cli import main
from tpu_platform.commands.plan import render_plan
from tpu_platform.plan import list_stacks
from tpu_platform.plan.stacks import PLANS_DIR

STACKS = list_stacks()


def test_example_stacks_exist() -> None:
    assert {"dev", "prod"} <= set(STACKS)


@pytest.mark.parametrize("stack", STACKS)
def test_committed_plan_is_fresh(stack: str) -> None:
    committed = PLANS_DIR / f"{stack}.yaml"
    assert committed.exists(), f"plans/{stack}.yaml missing: run `tpu-platform plan {stack}`"
    rendered, _ = render_plan(stack)
    assert committed.read_text() == rendered, (
        f"plans/{stack}.yaml is stale: run `tpu-platform plan {stack}` and commit it"
    )


def test_plan_is_deterministic() -> None:
    first, _ = render_plan("dev")
    second, _ = render_plan("dev")
    assert first == second


def test_plan_lists_every_resource_sorted(stack: dict[str, Any], render_stack: Callable[..., Any]) -> None:
    from tpu_platform.plan import plan_document

    rendering = render_stack(stack)
    doc = plan_document("test", rendering, {})
    keys = [(r["type"], r["name"]) for r in doc["resources"]]
    assert keys == sorted(keys)
    assert doc["resourceCount"] == len(rendering.resources)
    pool = next(r for r in doc["resources"] if r["name"] == "tpu-train-0")
    assert pool["parent"] == "tpu-platform:gke:TpuSlicePool::tpu-train"
    assert isinstance(pool["inputs"]["nodeCount"], int)


def test_check_mode_reports_stale_plan(tmp_path: Any, capsys: Any) -> None:
    stale = tmp_path / "dev.yaml"
    stale.write_text("old\n")
    assert main(["plan", "dev", "--check", "--plans-dir", str(tmp_path)]) == 1
    out = capsys.readouterr()
    assert "stale plans: dev" in out.err
    assert "== stack dev" in out.out
    assert re.search(r"^\d+ create, 0 update, 0 replace, 0 delete, 0 unchanged$", out.out, re.M)


def test_plan_command_writes_and_summarizes(tmp_path: Any, capsys: Any) -> None:
    assert main(["plan", "dev", "--plans-dir", str(tmp_path)]) == 0
    doc = yaml.safe_load((tmp_path / "dev.yaml").read_text())
    assert doc["stack"] == "dev"
    assert doc["summary"]["chips"] == sum(row["chips"] for row in doc["summary"]["byShape"])
    assert "TPU v6e slices" in capsys.readouterr().out


def test_invalid_stack_exits_2(tmp_path: Any, capsys: Any) -> None:
    (tmp_path / "Pulumi.broken.yaml").write_text(
        "config:\n  gcp:project: my-project\n  gcp:region: us-east5\n  gcp:zone: us-east5-b\n"
        "  tpu-platform:cluster: {name: c}\n  tpu-platform:slicePools: [{name: x, topology: 5x5}]\n"
    )
    code = main(["plan", "broken", "--stacks-dir", str(tmp_path), "--plans-dir", str(tmp_path)])
    assert code == 2
    err = capsys.readouterr().err
    assert "tpu-platform:slicePools[0].topology" in err
    assert not (tmp_path / "broken.yaml").exists()
