"""The linter's context built from a stack: queues, nominal quotas, priorities, slices."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from tpu_platform import catalog
from tpu_platform.lint import LintContext, lint_jobset
from tpu_platform.lint.stack import TPU_ONLY, context_from_stack
from tpu_platform.plan import load_stack_config, parse_stack_config, stack_file

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "jobsets"


def seed_context(**kueue: object) -> LintContext:
    config = load_stack_config(stack_file("seed"))
    config["tpu-platform:kueue"] = {**config["tpu-platform:kueue"], **kueue}
    return context_from_stack(parse_stack_config(config))


def test_seed_queue_has_its_nominal_quota() -> None:
    ctx = seed_context()
    target = ctx.local_queues[("default", "default-queue")]
    shape = catalog.lookup("4x4")
    assert target.cluster_queue == "tpu-training-cq"
    assert target.quota_chips(shape) == 32
    assert ctx.cluster_slices[shape] == 2
    assert ctx.workload_priority_classes == {"low-priority-job": 1_000_000, "high-priority-job": 2_000_000}
    assert target.covered_resources is None


def test_block_undeclared_knows_covered_resources() -> None:
    ctx = seed_context(quotaCheckStrategy="BlockUndeclared")
    assert ctx.local_queues[("default", "default-queue")].covered_resources == TPU_ONLY


def test_more_replicas_than_the_quota_is_reported() -> None:
    manifest = yaml.safe_load((EXAMPLES / "high-jax-trillium.yaml").read_text())
    assert not [f for f in lint_jobset(manifest, seed_context()) if f.rule == "queue-quota"]
    bigger = copy.deepcopy(manifest)
    bigger["spec"]["replicatedJobs"][0]["replicas"] = 3
    rules = {f.rule for f in lint_jobset(bigger, seed_context())}
    assert "queue-quota" in rules and "tpu-capacity" in rules
