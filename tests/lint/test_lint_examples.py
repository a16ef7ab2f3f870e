"""The shipped JobSets: the corrected ones are clean against the seed cluster, the guide's
originals fail for the reasons the linter names."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tpu_platform.catalog import SliceShape
from tpu_platform.lint import Finding, LintContext, context_from_queue_directory, lint_documents, load_context
from tpu_platform.plan import list_stacks, load_stack_config, parse_stack_config
from tpu_platform.plan.stacks import stack_file
from tpu_platform.schema import CrdsUnavailable, default_validator
from tpu_platform.slices import capacity_by_shape, expand_slices

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "jobsets"
NAMES = ["low-jax-trillium", "high-jax-trillium"]


@pytest.fixture(scope="module")
def seed_ctx() -> LintContext:
    return load_context(EXAMPLES / "seed-context.yaml")


def by_severity(findings: list[Finding]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {"error": set(), "warning": set(), "info": set()}
    for f in findings:
        out[f.severity].add(f.rule)
    return out


def crds_available() -> bool:
    try:
        default_validator().catalog  # noqa: B018 - raises when the folder is missing
    except CrdsUnavailable:
        return False
    return True


@pytest.mark.parametrize("name", NAMES)
def test_corrected_jobsets_are_clean(seed_ctx: LintContext, name: str) -> None:
    findings = lint_documents(
        (EXAMPLES / f"{name}.yaml").read_text(), seed_ctx, check_schema=crds_available()
    )
    seen = by_severity(findings)
    assert seen["error"] == set() and seen["warning"] == set(), findings
    # BlockingRecreate is kept on purpose: the hotswap controller clears stuck pods for it.
    assert seen["info"] == {"blocking-recreate"}
    assert {f.name for f in findings} == {name}


@pytest.mark.parametrize("name", NAMES)
def test_seed_originals_fail_for_the_documented_reasons(seed_ctx: LintContext, name: str) -> None:
    findings = lint_documents(
        (EXAMPLES / "seed-originals" / f"{name}.yaml").read_text(), seed_ctx, check_schema=crds_available()
    )
    seen = by_severity(findings)
    assert seen["error"] == {"queue-as-annotation", "container-image"}, findings
    assert seen["warning"] == {
        "kueue-label-on-template",
        "workload-priority-missing",
        "preemption-burns-restarts",
        "blocking-recreate",
        "hotswap-opt-in",
        "placeholder-value",
    }, findings
    template_labels = sorted(
        f.path.rsplit("[", 1)[-1] for f in findings if f.rule == "kueue-label-on-template"
    )
    assert template_labels == ['"kueue.x-k8s.io/managed-by"]', '"kueue.x-k8s.io/priority-class"]']
    assert all(f.fix for f in findings if f.severity != "info")


def test_the_seed_originals_differ_from_the_corrections_only_where_the_linter_points() -> None:
    for name in NAMES:
        original = yaml.safe_load((EXAMPLES / "seed-originals" / f"{name}.yaml").read_text())
        fixed = yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())
        assert original["apiVersion"] == fixed["apiVersion"] == "jobset.x-k8s.io/v1alpha2"
        assert original["metadata"]["name"] == fixed["metadata"]["name"] == name
        o_job = original["spec"]["replicatedJobs"][0]
        f_job = fixed["spec"]["replicatedJobs"][0]
        assert (o_job["replicas"], o_job["template"]["spec"]["parallelism"]) == (
            f_job["replicas"],
            f_job["template"]["spec"]["parallelism"],
        )
        o_pod = o_job["template"]["spec"]["template"]["spec"]
        f_pod = f_job["template"]["spec"]["template"]["spec"]
        assert o_pod["nodeSelector"] == f_pod["nodeSelector"]
        assert o_pod["priorityClassName"] == f_pod["priorityClassName"]


def test_the_guides_kueue_objects_get_a_finding_for_each_mistake(seed_ctx: LintContext) -> None:
    if not crds_available():
        pytest.skip("Kueue CRDs unavailable")
    findings = lint_documents(
        (EXAMPLES / "seed-originals" / "kueue-and-priorities.yaml").read_text(), seed_ctx
    )
    got = {(f.rule, f.kind, f.path) for f in findings}
    for kind in ("ResourceFlavor", "ClusterQueue", "LocalQueue"):
        assert ("api-version", kind, "apiVersion") in got
    assert ("unknown-field", "ClusterQueue", "spec.preemption.reclaimOutOfCohort") in got
    assert ("cluster-queue-no-namespaces", "ClusterQueue", "spec") in got
    reclaim = next(f for f in findings if f.rule == "unknown-field")
    assert "reclaimWithinCohort" in reclaim.fix and reclaim.line == 41
    deprecated = next(f for f in findings if f.rule == "api-version")
    assert "use kueue.x-k8s.io/v1beta2" in deprecated.message
    # The PriorityClasses are right: nothing about documents 0 and 1.
    assert {f.document for f in findings} == {2, 3, 4}


def test_multi_document_streams_keep_document_numbers(seed_ctx: LintContext) -> None:
    text = "\n---\n".join(
        [
            (EXAMPLES / "low-jax-trillium.yaml").read_text(),
            (EXAMPLES / "seed-originals" / "high-jax-trillium.yaml").read_text(),
        ]
    )
    findings = lint_documents(text, seed_ctx)
    assert {f.document for f in findings if f.severity == "error"} == {1}
    assert {f.name for f in findings if f.document == 0} == {"low-jax-trillium"}


def test_invalid_yaml_is_one_finding(seed_ctx: LintContext) -> None:
    findings = lint_documents("kind: JobSet\nmetadata: [unclosed\n", seed_ctx)
    assert [(f.rule, f.severity) for f in findings] == [("yaml-invalid", "error")]
    assert findings[0].line == 3


def test_schema_errors_become_findings(seed_ctx: LintContext) -> None:
    if not crds_available():
        pytest.skip("JobSet CRD unavailable")
    text = (EXAMPLES / "high-jax-trillium.yaml").read_text().replace("backoffLimit:", "backofLimit:")
    findings = [f for f in lint_documents(text, seed_ctx) if f.rule == "unknown-field"]
    assert [(f.severity, f.path, f.line) for f in findings] == [
        (
            "error",
            "spec.replicatedJobs[0].template.spec.backofLimit",
            text[: text.index("backofLimit")].count("\n") + 1,
        )
    ]


def test_without_crds_the_schema_check_fails_and_says_how_to_get_them(
    seed_ctx: LintContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TPU_PLATFORM_CRDS", str(tmp_path / "absent"))
    findings = [
        f
        for f in lint_documents((EXAMPLES / "low-jax-trillium.yaml").read_text(), seed_ctx)
        if f.rule == "crds-unavailable"
    ]
    assert [f.severity for f in findings] == ["error"]
    assert "schema not checked" in findings[0].message and "absent" in findings[0].message
    assert "--crds" in findings[0].fix and "tpu_platform.schema.fetch" in findings[0].fix


def test_seed_context_matches_the_seed_stack(seed_ctx: LintContext) -> None:
    if "seed" not in list_stacks():
        pytest.skip("no seed stack")
    from tpu_platform.kueue import queue_directory

    cfg = parse_stack_config(load_stack_config(stack_file("seed")))
    slices: dict[SliceShape, int] = {c.shape: c.slices for c in capacity_by_shape(expand_slices(cfg))}
    from_stack = context_from_queue_directory(
        queue_directory(cfg), slices, manage_jobs_without_queue_name=cfg.kueue.manage_jobs_without_queue_name
    )
    assert dict(from_stack.cluster_slices) == dict(seed_ctx.cluster_slices)
    assert dict(from_stack.priority_classes) == dict(seed_ctx.priority_classes)
    assert dict(from_stack.workload_priority_classes) == dict(seed_ctx.workload_priority_classes)
    assert from_stack.manage_jobs_without_queue_name == seed_ctx.manage_jobs_without_queue_name
    assert cfg.kueue.quota_check_strategy == "IgnoreUndeclared"
    assert set(from_stack.local_queues) == set(seed_ctx.local_queues)
    for key, target in seed_ctx.local_queues.items():
        assert from_stack.local_queues[key].cluster_queue == target.cluster_queue
        assert from_stack.local_queues[key].shapes == target.shapes
    # The corrected JobSets are clean against the stack itself, too.
    for name in NAMES:
        findings = lint_documents((EXAMPLES / f"{name}.yaml").read_text(), from_stack, check_schema=False)
        assert by_severity(findings)["error"] | by_severity(findings)["warning"] == set(), findings
