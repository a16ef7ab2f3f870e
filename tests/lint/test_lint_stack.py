"""The linter's context built from a stack: queues, nominal quotas, priorities, slices."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from tpu_platform import catalog
from tpu_platform.lint import Finding, LintContext, lint_jobset
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
    found = {f.rule: f for f in lint_jobset(bigger, seed_context())}
    assert "tpu-capacity" in found and "queue-quota" not in found
    never = found["queue-never-admitted"]
    assert never.severity == "error"
    assert (
        "needs 48 chips of 4x4 but ClusterQueue 'tpu-training-cq' can ever hold 32 (nominal 32)"
        in never.message
    )


def _dev_research(replicas: int) -> dict[str, Finding]:
    ctx = context_from_stack(parse_stack_config(load_stack_config(stack_file("dev"))))
    namespace, queue = next(k for k, t in ctx.local_queues.items() if t.cluster_queue == "research-cq")
    manifest = yaml.safe_load((EXAMPLES / "high-jax-trillium.yaml").read_text())
    manifest["metadata"]["namespace"] = namespace
    manifest["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = queue
    manifest["spec"]["replicatedJobs"][0]["replicas"] = replicas
    return {f.rule: f for f in lint_jobset(manifest, ctx)}


def test_within_what_the_cohort_can_lend_is_a_warning_beyond_it_an_error() -> None:
    """dev: research has 16 chips nominal and may borrow 16 (borrowingLimitSlices: 1) from cohort dev."""
    lends = _dev_research(2)
    assert lends["queue-quota"].severity == "warning" and "queue-never-admitted" not in lends
    never = _dev_research(3)["queue-never-admitted"]
    assert "can ever hold 32 (nominal 16 + 16 it may borrow from cohort 'dev')" in never.message
