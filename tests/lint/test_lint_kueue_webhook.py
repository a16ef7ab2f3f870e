"""Kueue v0.19.2's JobSet webhook, create-time checks, each on the example it breaks. The real
webhook's verdicts on the same cases are compared in ``tests/live/test_kueue_webhook_cases.py``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

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
