"""Each lint rule fires on the mistake it is about, and only then.

Every case starts from the corrected high-priority example (clean against the seed context),
breaks one thing, and states the exact set of rule ids that must appear.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from tpu_platform import catalog
from tpu_platform.lint import RULES, Finding, FlavorQuota, LintContext, QueueTarget, lint_jobset, load_context

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "jobsets"
QUEUE = "kueue.x-k8s.io/queue-name"
PRIORITY = "kueue.x-k8s.io/priority-class"
HOTSWAP = "tpu-platform.dev/hotswap"
EXCLUSIVE = "alpha.jobset.sigs.k8s.io/exclusive-topology"
SHAPE_4X4 = catalog.lookup("4x4")


@pytest.fixture(scope="module")
def seed_ctx() -> LintContext:
    return load_context(EXAMPLES / "seed-context.yaml")


def base() -> dict[str, Any]:
    return yaml.safe_load((EXAMPLES / "high-jax-trillium.yaml").read_text())


def pod(js: dict[str, Any]) -> dict[str, Any]:
    return js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]


def job(js: dict[str, Any]) -> dict[str, Any]:
    return js["spec"]["replicatedJobs"][0]["template"]["spec"]


def tpu(js: dict[str, Any]) -> dict[str, Any]:
    return pod(js)["containers"][0]["resources"]


def problems(findings: list[Finding]) -> set[str]:
    return {f.rule for f in findings if f.severity != "info"}


def lint(js: dict[str, Any], ctx: LintContext) -> list[Finding]:
    # The schema check has its own tests; these exercise the rules alone.
    return lint_jobset(js, ctx, check_schema=False)


Edit = Callable[[dict[str, Any]], object]

CASES: list[tuple[str, Edit, set[str]]] = [
    (
        "failure rule name with dashes",
        lambda js: js["spec"]["failurePolicy"]["rules"][0].update({"name": "preemption-is-free"}),
        {"jobset-webhook"},
    ),
    (
        "unknown job failure reason",
        lambda js: js["spec"]["failurePolicy"]["rules"][0].update({"onJobFailureReasons": ["Preempted"]}),
        # The rule no longer matches PodFailurePolicy, so preemptions count again.
        {"jobset-webhook", "preemption-burns-restarts"},
    ),
    (
        "failure rule targets a missing replicatedJob",
        lambda js: js["spec"]["failurePolicy"]["rules"][0].update({"targetReplicatedJobs": ["workers"]}),
        {"jobset-webhook", "preemption-burns-restarts"},
    ),
    (
        "generated pod names too long",
        lambda js: js["metadata"].update({"name": "maxtext-llama2-7b-pretraining-on-trillium-high-prio"}),
        {"jobset-webhook"},
    ),
    ("queue label missing", lambda js: js["metadata"]["labels"].pop(QUEUE), {"queue-label-missing"}),
    (
        "queue as annotation",
        lambda js: js["metadata"]["annotations"].update({QUEUE: js["metadata"]["labels"].pop(QUEUE)}),
        {"queue-as-annotation"},
    ),
    (
        "priority class as annotation",
        lambda js: js["metadata"]["annotations"].update({PRIORITY: js["metadata"]["labels"].pop(PRIORITY)}),
        {"queue-as-annotation"},
    ),
    ("unknown queue", lambda js: js["metadata"]["labels"].update({QUEUE: "team-queue"}), {"queue-not-found"}),
    (
        "queue in another namespace",
        lambda js: js["metadata"].update({"namespace": "research"}),
        {"queue-not-found"},
    ),
    (
        "kueue labels on the pod template",
        lambda js: job(js)["template"].update({"metadata": {"labels": {PRIORITY: "high-priority-job"}}}),
        {"kueue-label-on-template"},
    ),
    (
        "queue label on the job template",
        lambda js: js["spec"]["replicatedJobs"][0]["template"].update(
            {"metadata": {"labels": {QUEUE: "default-queue"}}}
        ),
        {"kueue-label-on-template"},
    ),
    (
        "no workload priority",
        lambda js: js["metadata"]["labels"].pop(PRIORITY),
        {"workload-priority-missing"},
    ),
    (
        "unknown workload priority",
        lambda js: js["metadata"]["labels"].update({PRIORITY: "urgent"}),
        {"workload-priority-unknown"},
    ),
    ("no pod priority", lambda js: pod(js).pop("priorityClassName"), {"pod-priority-missing"}),
    (
        "unknown pod priority",
        lambda js: pod(js).update({"priorityClassName": "urgent"}),
        {"pod-priority-unknown"},
    ),
    (
        "pod priority disagrees with workload priority",
        lambda js: pod(js).update({"priorityClassName": "low-priority-job"}),
        {"priority-mismatch"},
    ),
    (
        "no topology selector",
        lambda js: pod(js)["nodeSelector"].pop(catalog.LABEL_TOPOLOGY),
        {"tpu-node-selector"},
    ),
    (
        "TPU chips but no selectors",
        lambda js: pod(js).pop("nodeSelector"),
        {"tpu-node-selector"},
    ),
    (
        "another accelerator",
        lambda js: pod(js)["nodeSelector"].update({catalog.LABEL_ACCELERATOR: "tpu-v5p-slice"}),
        {"tpu-accelerator"},
    ),
    (
        "not a v6e topology",
        lambda js: pod(js)["nodeSelector"].update({catalog.LABEL_TOPOLOGY: "3x3"}),
        {"tpu-topology"},
    ),
    (
        "a shape neither the cluster nor the queue has",
        lambda js: pod(js)["nodeSelector"].update({catalog.LABEL_TOPOLOGY: "2x2"}),
        {"tpu-topology", "queue-flavor-shape", "tpu-pods-per-slice"},
    ),
    # 2 slices x 4 pods x 8 chips is also more than the queue's 32.
    (
        "too many chips per pod",
        lambda js: tpu(js)["limits"].update({"google.com/tpu": 8}),
        {"tpu-chips", "queue-quota"},
    ),
    ("too few chips per pod", lambda js: tpu(js)["limits"].update({"google.com/tpu": 2}), {"tpu-chips"}),
    ("no chips at all", lambda js: tpu(js).pop("limits"), {"tpu-chips"}),
    (
        "request differs from limit",
        lambda js: tpu(js).update({"requests": {"google.com/tpu": 2}}),
        {"tpu-chips"},
    ),
    ("parallelism below the VMs", lambda js: job(js).update({"parallelism": 2}), {"tpu-pods-per-slice"}),
    ("completions unset", lambda js: job(js).pop("completions"), {"tpu-pods-per-slice"}),
    (
        "more slices than the cluster has",
        lambda js: js["spec"]["replicatedJobs"][0].update({"replicas": 3}),
        {"tpu-capacity", "queue-quota"},
    ),
    ("no exclusive placement", lambda js: js["metadata"].pop("annotations"), {"exclusive-placement"}),
    (
        "exclusive placement per host",
        lambda js: js["metadata"]["annotations"].update({EXCLUSIVE: "kubernetes.io/hostname"}),
        {"exclusive-placement"},
    ),
    ("no maxRestarts", lambda js: js["spec"]["failurePolicy"].pop("maxRestarts"), {"max-restarts"}),
    (
        "no failurePolicy rule",
        lambda js: js["spec"]["failurePolicy"].pop("rules"),
        {"preemption-burns-restarts"},
    ),
    (
        "a catch-all rule first",
        lambda js: js["spec"]["failurePolicy"]["rules"].insert(0, {"name": "GiveUp", "action": "FailJobSet"}),
        {"preemption-burns-restarts"},
    ),
    (
        "no podFailurePolicy",
        lambda js: (job(js).pop("podFailurePolicy"), pod(js).pop("restartPolicy")),
        {"preemption-burns-restarts"},
    ),
    (
        "podFailurePolicy without restartPolicy Never",
        lambda js: pod(js).pop("restartPolicy"),
        {"pod-failure-policy-restart-policy"},
    ),
    ("default backoffLimit", lambda js: job(js).pop("backoffLimit"), {"backoff-limit"}),
    # Without the opt-in nobody clears stuck pods, so BlockingRecreate becomes a warning too.
    (
        "no hotswap opt-in",
        lambda js: js["metadata"]["labels"].pop(HOTSWAP),
        {"hotswap-opt-in", "blocking-recreate"},
    ),
    (
        "hotswap label with another value",
        lambda js: js["metadata"]["labels"].update({HOTSWAP: "true"}),
        {"hotswap-opt-in", "blocking-recreate"},
    ),
    ("hostNetwork without its DNS policy", lambda js: pod(js).pop("dnsPolicy"), {"host-network-dns"}),
    (
        "image placeholder",
        lambda js: pod(js)["containers"][0].update({"image": "<IMAGE LOCATION>"}),
        {"container-image"},
    ),
    (
        "placeholder in an argument",
        lambda js: pod(js)["containers"][0]["command"].append("run_name=<UNIQUE RUN NAME>"),
        {"placeholder-value"},
    ),
    (
        "placeholder in the environment",
        lambda js: pod(js)["containers"][0].update(
            {"env": [{"name": "BUCKET", "value": "gs://<OUTPUT BUCKET>"}]}
        ),
        {"placeholder-value"},
    ),
]


def test_the_starting_point_is_clean(seed_ctx: LintContext) -> None:
    findings = lint(base(), seed_ctx)
    assert problems(findings) == set(), findings


@pytest.mark.parametrize(("title", "edit", "expected"), CASES, ids=[c[0] for c in CASES])
def test_rule_fires_on_its_mistake(seed_ctx: LintContext, title: str, edit: Edit, expected: set[str]) -> None:
    js = base()
    edit(js)
    findings = lint(js, seed_ctx)
    assert problems(findings) == expected, "\n".join(
        f"{f.severity} {f.rule} {f.path}: {f.message}" for f in findings
    )
    for f in findings:
        assert f.path, f"{f.rule} has no path"
        assert f.severity != "info" or f.rule == "blocking-recreate"


def test_every_rule_has_a_case() -> None:
    covered = set().union(*(expected for _, _, expected in CASES))
    # Fired by the document and schema tests, and by context variations below.
    elsewhere = {
        "queue-resources",
        "queue-never-admitted",  # tests/lint/test_lint_stack.py: needs a stack's quota plan
        "priority-not-granted",  # tests/kueue/test_entitlements.py: needs a stack's grants
        "kueue-webhook",  # tests/lint/test_lint_kueue_webhook.py
        "multikueue-managed-by",  # tests/fleet/test_fleet.py: a fleet stack's queues
        # tests/lint/test_lint_manifests.py: whole manifests, Kueue objects, input problems, counts.
        "input-empty",
        "input-binary",
        "yaml-invalid",
        "not-a-manifest",
        "yaml-value",
        "crds-unavailable",
        "jobset-schema",
        "object-schema",
        "api-version",
        "unknown-field",
        "count-invalid",
        "cluster-queue-no-namespaces",
        "local-queue-target",
        "cluster-queue-flavor",
        "queue-quota-together",
        "kind-not-linted",
    }
    assert set(RULES) - elsewhere == covered


def test_webhook_name_checks_follow_jobsets_formats(seed_ctx: LintContext) -> None:
    js = base()
    # <jobset>-<replicatedJob>-<job index> for Jobs; pods add -<pod index> and a 5-character suffix.
    js["metadata"]["name"] = "a" * 47  # Job "aaa…-slice-1" is 55 characters, pods 63
    assert problems(lint(js, seed_ctx)) == set()
    js["metadata"]["name"] = "a" * 48
    findings = [f for f in lint(js, seed_ctx) if f.rule == "jobset-webhook"]
    assert [f.message.split(" ")[0] for f in findings] == ["pod"]
    js["metadata"]["name"] = "1-starts-with-a-digit"
    assert {f.message.split(" ")[0] for f in lint(js, seed_ctx) if f.rule == "jobset-webhook"} == {
        "Job",
        "pod",
    }


def test_paths_point_at_the_field(seed_ctx: LintContext) -> None:
    js = base()
    pod(js)["nodeSelector"].update({catalog.LABEL_TOPOLOGY: "3x3"})
    js["metadata"]["annotations"][QUEUE] = js["metadata"]["labels"].pop(QUEUE)
    paths = {f.rule: f.path for f in lint(js, seed_ctx)}
    assert paths["tpu-topology"] == (
        'spec.replicatedJobs[0].template.spec.template.spec.nodeSelector["cloud.google.com/gke-tpu-topology"]'
    )
    assert paths["queue-as-annotation"] == 'metadata.annotations["kueue.x-k8s.io/queue-name"]'


def test_queue_annotation_is_an_error_priority_annotation_a_warning(seed_ctx: LintContext) -> None:
    js = base()
    labels, annotations = js["metadata"]["labels"], js["metadata"]["annotations"]
    annotations[QUEUE], annotations[PRIORITY] = labels.pop(QUEUE), labels.pop(PRIORITY)
    severities = {f.path: f.severity for f in lint(js, seed_ctx) if f.rule == "queue-as-annotation"}
    assert severities == {
        'metadata.annotations["kueue.x-k8s.io/queue-name"]': "error",
        'metadata.annotations["kueue.x-k8s.io/priority-class"]': "warning",
    }


def test_missing_queue_with_manage_jobs_without_queue_name(seed_ctx: LintContext) -> None:
    js = base()
    js["metadata"]["labels"].pop(QUEUE)
    managed = [
        f
        for f in lint(js, replace(seed_ctx, manage_jobs_without_queue_name=True))
        if f.rule == "queue-label-missing"
    ]
    ignored = [f for f in lint(js, seed_ctx) if f.rule == "queue-label-missing"]
    assert "never admitted" in managed[0].message
    assert "Kueue ignores it" in ignored[0].message


def test_namespace_defaults_to_the_contexts(seed_ctx: LintContext) -> None:
    js = base()
    del js["metadata"]["namespace"]
    assert problems(lint(js, seed_ctx)) == set()
    assert problems(lint(js, replace(seed_ctx, default_namespace="research"))) == {"queue-not-found"}


def test_quota_beyond_the_queue_is_a_warning(seed_ctx: LintContext) -> None:
    target = seed_ctx.local_queues[("default", "default-queue")]
    small = replace(target, flavors=(replace(target.flavors[0], chips=16),))
    ctx = replace(seed_ctx, local_queues={("default", "default-queue"): small})
    findings = [f for f in lint(base(), ctx) if f.rule == "queue-quota"]
    assert [(f.severity, f.path) for f in findings] == [("warning", "spec.replicatedJobs[0].replicas")]
    assert "32 chips" in findings[0].message and "no cohort" in findings[0].message
    lending = replace(ctx, local_queues={("default", "default-queue"): replace(small, cohort="org")})
    assert "cohort 'org'" in next(f for f in lint(base(), lending) if f.rule == "queue-quota").message


def test_uncovered_resources_block_admission_when_kueue_blocks_undeclared(seed_ctx: LintContext) -> None:
    js = base()
    tpu(js)["requests"] = {"cpu": "8", "memory": "32Gi"}
    # The seed stack runs Kueue with IgnoreUndeclared: cpu and memory are not quota-checked.
    assert problems(lint(js, seed_ctx)) == set()
    target = seed_ctx.local_queues[("default", "default-queue")]
    blocking = replace(target, covered_resources=frozenset({"google.com/tpu"}))
    ctx = replace(seed_ctx, local_queues={("default", "default-queue"): blocking})
    findings = [f for f in lint(js, ctx) if f.rule == "queue-resources"]
    assert sorted(f.path for f in findings) == [
        "spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources.requests.cpu",
        "spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources.requests.memory",
    ]
    assert all(f.severity == "error" for f in findings)


def test_node_affinity_counts_as_selection(seed_ctx: LintContext) -> None:
    js = base()
    selector = pod(js).pop("nodeSelector")
    pod(js)["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": k, "operator": "In", "values": [v]} for k, v in selector.items()
                        ]
                    }
                ]
            }
        }
    }
    assert problems(lint(js, seed_ctx)) == set()


def test_hotswap_label_is_configurable(seed_ctx: LintContext) -> None:
    ctx = replace(seed_ctx, hotswap_label=("example.com/recover", "yes"))
    findings = [f for f in lint(base(), ctx) if f.rule == "hotswap-opt-in"]
    assert [f.path for f in findings] == ['metadata.labels["example.com/recover"]']


def test_non_tpu_replicated_jobs_are_left_alone(seed_ctx: LintContext) -> None:
    js = base()
    coordinator = copy.deepcopy(js["spec"]["replicatedJobs"][0])
    coordinator["name"] = "coordinator"
    coordinator["replicas"] = 1
    spec = coordinator["template"]["spec"]
    spec.update({"parallelism": 1, "completions": 1})
    spec["template"]["spec"].pop("nodeSelector")
    spec["template"]["spec"]["containers"][0].pop("resources")
    js["spec"]["replicatedJobs"].append(coordinator)
    assert problems(lint(js, seed_ctx)) == set()


def _context_for(shape: catalog.SliceShape) -> LintContext:
    return LintContext(
        local_queues={("ml", "q"): QueueTarget("cq", (FlavorQuota("f", shape, shape.chips),))},
        workload_priority_classes={"p": 10},
        priority_classes={"p": 10},
        cluster_slices={shape: 1},
    )


def _jobset_for(shape: catalog.SliceShape) -> dict[str, Any]:
    js = base()
    js["metadata"]["namespace"] = "ml"
    js["metadata"]["labels"].update({QUEUE: "q", PRIORITY: "p"})
    js["spec"]["replicatedJobs"][0]["replicas"] = 1
    job(js).update({"parallelism": shape.vms, "completions": shape.vms})
    pod(js)["priorityClassName"] = "p"
    pod(js)["nodeSelector"][catalog.LABEL_TOPOLOGY] = shape.topology
    tpu(js)["limits"]["google.com/tpu"] = shape.chips_per_vm
    return js


@pytest.mark.parametrize("shape", catalog.all_shapes(), ids=lambda s: s.key)
def test_a_jobset_sized_for_any_v6e_shape_is_clean(shape: catalog.SliceShape) -> None:
    findings = lint(_jobset_for(shape), _context_for(shape))
    assert problems(findings) == set(), findings


def test_the_two_2x4_forms_are_told_apart_by_chips_per_pod() -> None:
    multi, single = catalog.lookup("2x4", multi_host=True), catalog.lookup("2x4", multi_host=False)
    # Sized for two 4-chip VMs, submitted to a cluster that only has the one-VM 8-chip form.
    findings = lint(_jobset_for(multi), _context_for(single))
    assert problems(findings) == {"tpu-chips", "tpu-pods-per-slice"}
    assert any("has 8" in f.message for f in findings if f.rule == "tpu-chips")


def test_malformed_manifests_do_not_crash_the_rules(seed_ctx: LintContext) -> None:
    js = base()
    js["spec"]["replicatedJobs"][0]["template"] = "not a mapping"
    js["metadata"]["labels"] = ["also", "wrong"]
    findings = lint(js, seed_ctx)
    assert "queue-label-missing" in problems(findings)
