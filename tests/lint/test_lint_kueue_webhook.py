"""Kueue v0.19.2's JobSet webhook, create-time checks, each on the example it breaks. The real
webhook's verdicts on the same cases are compared in ``tests/live/test_kueue_webhook_cases.py``."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.lint.kueue_webhook_cases import CASES, base
from tests.lint.test_lint_jobset_webhook import EXAMPLES
from tpu_platform.lint import LintContext, lint_jobset, load_context


@pytest.fixture(scope="module")
def ctx() -> LintContext:
    return load_context(EXAMPLES / "seed-context.yaml")


def kueue(js: dict[str, Any], ctx: LintContext) -> list[str]:
    return [f.message for f in lint_jobset(js, ctx, check_schema=False) if f.rule == "kueue-webhook"]


def test_the_example_passes(ctx: LintContext) -> None:
    assert kueue(base(), ctx) == []


@pytest.mark.parametrize(("name", "edit", "rejected", "words"), CASES, ids=[c[0] for c in CASES])
def test_each_check(
    name: str, edit: Callable[[dict[str, Any]], object], rejected: bool, words: str, ctx: LintContext
) -> None:
    js = base()
    edit(js)
    found = kueue(js, ctx)
    if rejected:
        assert any(words in m for m in found), found
    else:
        assert found == [], found


KEYS = [
    "kueue.x-k8s.io/queue-name",
    "kueue.x-k8s.io/prebuilt-workload-name",
    "kueue.x-k8s.io/max-exec-time-seconds",
]
POD_KEYS = [
    "kueue.x-k8s.io/podset-required-topology",
    "kueue.x-k8s.io/podset-preferred-topology",
    "kueue.x-k8s.io/podset-unconstrained-topology",
    "kueue.x-k8s.io/podset-slice-required-topology",
    "kueue.x-k8s.io/podset-slice-size",
    "kueue.x-k8s.io/podset-group-name",
]
TEXT = st.one_of(
    st.text(max_size=80),
    st.from_regex(r"[+-]?[0-9]{1,25}", fullmatch=True),
    st.sampled_from(["²", "١٢", "7\n", "0x10", "1_000", " 3"]),  # digits Python reads and Go does not
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    labels=st.dictionaries(st.sampled_from(KEYS), TEXT, max_size=3),
    pods=st.lists(st.dictionaries(st.sampled_from(POD_KEYS), TEXT, max_size=6), min_size=1, max_size=4),
    replicas=st.integers(min_value=0, max_value=5),
)
def test_hostile_kueue_labels_and_annotations_never_crash_and_name_where(
    labels: dict[str, str], pods: list[dict[str, str]], replicas: int, ctx: LintContext
) -> None:
    """Any values a tenant writes into Kueue's keys: findings, never an exception, each at a path."""
    js = base()
    js["metadata"]["labels"].update(labels)
    template = js["spec"]["replicatedJobs"][0]
    js["spec"]["replicatedJobs"] = []
    for i, notes in enumerate(pods):
        rj = copy.deepcopy(template)
        rj.update(name=f"rj{i}", replicas=replicas)
        rj["template"]["spec"]["template"].setdefault("metadata", {})["annotations"] = notes
        js["spec"]["replicatedJobs"].append(rj)
    for f in lint_jobset(js, ctx, check_schema=False):
        if f.rule == "kueue-webhook":
            assert f.path.startswith(("metadata.", "spec.replicatedJobs[")) and f.severity == "error"


@pytest.mark.parametrize("text", ["²", "١٢", "7\n8", "0x10", "1_000", "+3", ""])
def test_only_ascii_digits_are_whole_numbers(text: str) -> None:
    """Go's strconv and the API server read ASCII digits only; '²' passes str.isdigit and crashed int()."""
    from tpu_platform.lint.jobset import whole_number

    assert whole_number(text) is None
    assert whole_number(" 42 ") == 42
