"""Whole manifests: every document read, hostile input answered with a finding, never a traceback.

Kueue semantics come from kubernetes-sigs/kueue v0.19.2 (apis/kueue/v1beta2/clusterqueue_types.go:
a null namespaceSelector matches no namespace); JobSet's from kubernetes-sigs/jobset v0.12.0
(pkg/controllers/failure_policy.go: a JobSet fails once restarts >= maxRestarts).
"""

from __future__ import annotations

import copy
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tpu_platform.cli import main
from tpu_platform.lint import Finding, LintContext, lint_documents, lint_jobset, load_context
from tpu_platform.lint.findings import RULES
from tpu_platform.lint.linter import INPUT_RULES, lint_files
from tpu_platform.lint.sarif import to_sarif
from tpu_platform.schema import CrdsUnavailable, default_validator

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "jobsets"
CONTEXT = str(EXAMPLES / "seed-context.yaml")
GUIDE = EXAMPLES / "seed-originals" / "kueue-and-priorities.yaml"
HIGH = EXAMPLES / "high-jax-trillium.yaml"


def crds_available() -> bool:
    try:
        default_validator().catalog  # noqa: B018 - raises when the folder is missing
    except CrdsUnavailable:
        return False
    return True


needs_crds = pytest.mark.skipif(not crds_available(), reason="upstream CRDs (../shared/crds) unavailable")


@pytest.fixture(scope="module")
def ctx() -> LintContext:
    return load_context(EXAMPLES / "seed-context.yaml")


def rules(findings: list[Finding]) -> set[str]:
    return {f.rule for f in findings}


def high() -> dict[str, Any]:
    return copy.deepcopy(yaml.safe_load(HIGH.read_text()))


def dump(*docs: Any) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False)


# --- input that is not a manifest ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "rule"),
    [
        (b"", "input-empty"),
        (b"   \n\n", "input-empty"),
        (b"---\n---\n", "input-empty"),
        (b"\x00\x01\x02binary", "input-binary"),
        (b"\xff\xfe\xfd not utf-8", "input-binary"),
        (b"kind: [unclosed\n", "yaml-invalid"),
        (b"just some words\n", "not-a-manifest"),
        (b"- a\n- list\n", "not-a-manifest"),
    ],
)
def test_input_that_is_not_a_manifest_is_one_finding(ctx: LintContext, content: bytes, rule: str) -> None:
    findings = lint_documents(content, ctx, check_schema=False)
    assert [(f.rule, f.severity) for f in findings] == [(rule, "error")]
    assert findings[0].line >= 1 and findings[0].fix


@pytest.mark.parametrize("content", [b"", b"\x00\x00", b"a: [\n", b"plain text"])
def test_the_command_exits_two_on_such_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_bytes(content)
    assert main(["lint", str(path), "--context", CONTEXT, "--no-schema"]) == 2
    assert "1 error(s)" in capsys.readouterr().out


def test_stdin_is_read_as_bytes(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\x00binary")))
    assert main(["lint", "-", "--context", CONTEXT, "--no-schema"]) == 2
    assert "input-binary" in capsys.readouterr().out
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(HIGH.read_bytes())))
    assert main(["lint", "-", "--context", CONTEXT, "--no-schema"]) == 0


# --- values the API server cannot decode, counts -------------------------------------------------


def test_values_that_crashed_the_linter_are_findings(ctx: LintContext) -> None:
    js = high()
    pod = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    text = dump(js).replace("google.com/tpu: 4", "null: 4", 1)
    text = text.replace("replicas: 2", "replicas: 9223372036854775808")
    assert "null: 4" in text and pod
    findings = lint_documents(text + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: oops\n", ctx)
    values = [f for f in findings if f.rule == "yaml-value"]
    assert {f.path for f in values} >= {"spec.replicatedJobs[0].replicas"}
    assert any("not a string" in f.message for f in values)
    config_map = [f for f in findings if f.document == 1]
    assert config_map, "the ConfigMap with metadata: oops is checked, not skipped"


@pytest.mark.parametrize(
    ("edit", "path"),
    [
        (lambda js: js["spec"]["failurePolicy"].update(maxRestarts=-1), "spec.failurePolicy.maxRestarts"),
        (lambda js: js["spec"]["replicatedJobs"][0].update(replicas=-2), "spec.replicatedJobs[0].replicas"),
        (
            lambda js: js["spec"]["replicatedJobs"][0]["template"]["spec"].update(parallelism=2**31),
            "spec.replicatedJobs[0].template.spec.parallelism",
        ),
    ],
)
def test_negative_or_absurd_counts_are_errors(ctx: LintContext, edit: Any, path: str) -> None:
    js = high()
    edit(js)
    findings = [f for f in lint_documents(dump(js), ctx, check_schema=False) if f.rule == "count-invalid"]
    assert [f.path for f in findings] == [path]
    assert findings[0].severity == "error" and findings[0].line > 1


# --- Kueue objects --------------------------------------------------------------------------------


def _cq(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": spec,
    }


def test_cluster_queue_without_namespace_selector_admits_nothing(ctx: LintContext) -> None:
    assert "cluster-queue-no-namespaces" in rules(lint_documents(dump(_cq()), ctx, check_schema=False))
    assert "cluster-queue-no-namespaces" not in rules(
        lint_documents(dump(_cq(namespaceSelector={})), ctx, check_schema=False)
    )


def test_local_queue_and_flavor_references_must_exist(ctx: LintContext) -> None:
    local: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "q", "namespace": "default"},
        "spec": {"clusterQueue": "missing-cq"},
    }
    cq = _cq(
        namespaceSelector={},
        resourceGroups=[
            {"coveredResources": ["google.com/tpu"], "flavors": [{"name": "nope", "resources": []}]}
        ],
    )
    found = rules(lint_documents(dump(local, cq), ctx, check_schema=False))
    assert {"local-queue-target", "cluster-queue-flavor"} <= found
    local["spec"]["clusterQueue"] = "cq"  # defined in the same run
    assert "local-queue-target" not in rules(lint_documents(dump(local, cq), ctx, check_schema=False))
    local["spec"]["clusterQueue"] = "tpu-training-cq"  # known from the context
    assert "local-queue-target" not in rules(lint_documents(dump(local), ctx, check_schema=False))


def test_a_run_sees_its_own_queue_quota(ctx: LintContext) -> None:
    """JobSets and a ClusterQueue with a cohort in one manifest: the cohort's lending counts."""
    cq = _cq(
        namespaceSelector={},
        cohortName="shared",
        resourceGroups=[
            {
                "coveredResources": ["google.com/tpu"],
                "flavors": [
                    {"name": "tpu-v6e-slice", "resources": [{"name": "google.com/tpu", "nominalQuota": 32}]}
                ],
            }
        ],
    )
    lender = copy.deepcopy(cq)
    lender["metadata"]["name"] = "lender"
    local = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "mine", "namespace": "default"},
        "spec": {"clusterQueue": "cq"},
    }
    one, two = high(), high()
    for js, name in ((one, "a"), (two, "b")):
        js["metadata"]["name"] = name
        js["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "mine"
    alone = lint_documents(dump(cq, local, one, two), ctx, check_schema=False)
    assert sum(f.rule == "queue-quota-together" for f in alone) == 2
    with_lender = lint_documents(dump(cq, lender, local, one, two), ctx, check_schema=False)
    assert "queue-quota-together" not in rules(with_lender)


@needs_crds
def test_the_guides_manifest_and_jobsets_get_every_finding_the_guide_needs(ctx: LintContext) -> None:
    files = [(str(GUIDE), GUIDE.read_bytes())] + [
        (str(EXAMPLES / f"{n}.yaml"), (EXAMPLES / f"{n}.yaml").read_bytes())
        for n in ("high-jax-trillium", "low-jax-trillium")
    ]
    results = dict(lint_files(files, ctx))
    guide = results[str(GUIDE)]
    assert sum(f.rule == "api-version" for f in guide) == 3
    assert any(f.rule == "unknown-field" and f.path.endswith("reclaimOutOfCohort") for f in guide)
    assert any(f.rule == "cluster-queue-no-namespaces" for f in guide)
    for name in ("high-jax-trillium", "low-jax-trillium"):
        assert "queue-quota-together" in rules(results[str(EXAMPLES / f"{name}.yaml")])
    assert all(f.line > 0 for fs in results.values() for f in fs)


@needs_crds
def test_a_typo_is_an_unknown_field_with_its_line(ctx: LintContext) -> None:
    text = HIGH.read_text().replace("replicas: 2", "replicaz: 2")
    found = [f for f in lint_documents(text, ctx) if f.rule == "unknown-field"]
    assert [f.path for f in found] == ["spec.replicatedJobs[0].replicaz"]
    assert found[0].line == text[: text.index("replicaz")].count("\n") + 1


# --- output formats -------------------------------------------------------------------------------


def test_json_is_one_array_of_objects_with_location(capsys: pytest.CaptureFixture[str]) -> None:
    original = str(EXAMPLES / "seed-originals" / "low-jax-trillium.yaml")
    assert main(["lint", original, "--context", CONTEXT, "--format", "json", "--no-schema"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert isinstance(rows, list) and rows
    assert {
        "file",
        "rule",
        "severity",
        "path",
        "message",
        "fix",
        "document",
        "name",
        "line",
        "column",
        "kind",
    } == set(rows[0])
    assert all(row["line"] >= 1 for row in rows)


def test_sarif_has_the_required_fields(capsys: pytest.CaptureFixture[str]) -> None:
    original = str(EXAMPLES / "seed-originals" / "low-jax-trillium.yaml")
    assert main(["lint", original, "--context", CONTEXT, "--format", "sarif", "--no-schema"]) == 1
    log = json.loads(capsys.readouterr().out)
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] and [r["id"] for r in driver["rules"]] == list(RULES)
    assert run["results"]
    for result in run["results"]:
        assert result["level"] in ("error", "warning", "note")
        assert result["message"]["text"]
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uri"].endswith("low-jax-trillium.yaml")
        assert location["region"]["startLine"] >= 1 and location["region"]["startColumn"] >= 1


def test_sarif_of_stdin_and_of_no_findings() -> None:
    log = to_sarif([("-", []), ("a.yaml", [])])
    assert log["runs"][0]["results"] == []


# --- CRDs: never a silent fallback ----------------------------------------------------------------


def test_missing_crds_exit_two_and_say_how_to_get_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lint", str(HIGH), "--context", CONTEXT, "--crds", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert "--crds" in err and "TPU_PLATFORM_CRDS" in err and "--no-schema" in err


# --- fuzz: no input makes the linter crash --------------------------------------------------------

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)
_keys = st.one_of(
    st.sampled_from(
        [
            "apiVersion",
            "kind",
            "metadata",
            "spec",
            "name",
            "namespace",
            "labels",
            "replicas",
            "template",
            "replicatedJobs",
            "resources",
            "limits",
            "google.com/tpu",
            "failurePolicy",
            "maxRestarts",
            "resourceGroups",
            "flavors",
            "nominalQuota",
            "clusterQueue",
            "namespaceSelector",
            "value",
        ]
    ),
    st.text(max_size=8),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=5),
    max_leaves=25,
)
_kinds = st.sampled_from(
    [
        ("jobset.x-k8s.io/v1alpha2", "JobSet"),
        ("kueue.x-k8s.io/v1beta2", "ClusterQueue"),
        ("kueue.x-k8s.io/v1beta1", "LocalQueue"),
        ("kueue.x-k8s.io/v1beta2", "ResourceFlavor"),
        ("scheduling.k8s.io/v1", "PriorityClass"),
        ("v1", "ConfigMap"),
    ]
)


@st.composite
def manifests(draw: st.DrawFn) -> dict[str, Any]:
    api_version, kind = draw(_kinds)
    doc: dict[str, Any] = {"apiVersion": api_version, "kind": kind}
    doc["metadata"] = draw(st.one_of(_values, st.fixed_dictionaries({"name": st.text(max_size=10)})))
    doc["spec"] = draw(_values)
    return doc


def _check(findings: list[Finding]) -> None:
    for f in findings:
        assert f.rule in RULES and f.severity in ("error", "warning", "info")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(manifests(), min_size=1, max_size=3))
def test_fuzz_structures(docs: list[dict[str, Any]]) -> None:
    ctx = load_context(EXAMPLES / "seed-context.yaml")
    text = yaml.safe_dump_all(docs, allow_unicode=True)
    _check(lint_documents(text, ctx, check_schema=crds_available()))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(0, 40),
    st.sampled_from(
        [b":", b"-", b"{", b"}", b"[", b"&a", b"*a", b"!!", b"\x00", b"\t", b"\n", b"---", b"\xff"]
    ),
    st.binary(max_size=30),
)
def test_fuzz_yaml_text(cut: int, junk: bytes, noise: bytes) -> None:
    """The JobSet example cut, spliced with YAML punctuation or random bytes."""
    ctx = load_context(EXAMPLES / "seed-context.yaml")
    base = HIGH.read_bytes()
    at = len(base) * cut // 40
    _check(lint_documents(base[:at] + junk + noise + base[at:], ctx, check_schema=crds_available()))


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=200))
def test_fuzz_bytes(content: bytes) -> None:
    ctx = load_context(EXAMPLES / "seed-context.yaml")
    findings = lint_documents(content, ctx, check_schema=False)
    _check(findings)
    assert findings == [] or all(f.rule for f in findings)


def test_input_rules_are_documented_as_exit_two() -> None:
    assert set(RULES) >= INPUT_RULES


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _paths(item, (*prefix, index))
    return out


_SEEDS = [yaml.safe_load(HIGH.read_text()), *yaml.safe_load_all(GUIDE.read_text())]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(len(_SEEDS))), st.data())
def test_fuzz_mutated_examples(which: int, data: st.DataObject) -> None:
    """The shipped manifests with one value anywhere replaced by anything: deep rules see junk."""
    doc = copy.deepcopy(_SEEDS[which])
    path = data.draw(st.sampled_from(_paths(doc)[1:]))
    target = doc
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = data.draw(_values)
    ctx = load_context(EXAMPLES / "seed-context.yaml")
    _check(lint_documents(yaml.safe_dump(doc), ctx, check_schema=crds_available()))


_raw_keys = st.one_of(_keys, st.none(), st.integers(), st.booleans())
_raw = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_raw_keys, inner, max_size=5),
    max_leaves=25,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(len(_SEEDS))), st.data())
def test_fuzz_lint_jobset_with_raw_python_values(which: int, data: st.DataObject) -> None:
    """The Python API takes dicts nobody parsed: non-string keys and huge numbers included."""
    doc = copy.deepcopy(_SEEDS[which])
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_paths(doc)[1:]))
        target = doc
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = data.draw(_raw)
    ctx = load_context(EXAMPLES / "seed-context.yaml")
    _check(lint_jobset(doc, ctx, check_schema=crds_available()))
