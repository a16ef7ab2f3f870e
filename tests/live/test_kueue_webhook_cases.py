"""Kueue v0.19.2's JobSet webhook, for real: each case of ``tests/lint/kueue_webhook_cases.py`` (every
row of upstream's ``TestValidateCreate`` by name, and each further check of
``tpu_platform.lint.kueue_webhook``) is sent as a server-side dry-run create to the dev stack's
cluster, where the real Kueue (its chart's default gates) judges it; the linter's verdict on the same
JobSet, the expected verdict and the real one must agree on every row."""

from __future__ import annotations

import copy
import re
import time
from typing import Any

from tests.lint.kueue_webhook_cases import CASES, base
from tests.live.cluster import LiveCluster
from tests.live.cluster.figures import Report
from tests.live.cluster.kube import ApiError
from tpu_platform.lint import lint_jobset
from tpu_platform.lint.stack import context_from_stack
from tpu_platform.plan import load_stack_config, parse_stack_config, stack_file

TEAM = "research"
KUEUE_DENIED = re.compile(r'admission webhook "vjobset\.kb\.io" denied the request')


def _placed(js: dict[str, Any], index: int) -> dict[str, Any]:
    obj = copy.deepcopy(js)
    obj["metadata"].update(name=f"kueue-case-{index}", namespace=TEAM)
    obj["metadata"]["labels"].setdefault("kueue.x-k8s.io/queue-name", "research-queue")
    return obj


def _real(live: LiveCluster, obj: dict[str, Any]) -> str | None:
    """The server's refusal of a dry-run create, or None when it would create it."""
    path = live.admin.path(obj["apiVersion"], obj["kind"], TEAM)
    for attempt in range(5):
        try:
            live.admin.request("POST", path, obj, query={"dryRun": "All", "fieldValidation": "Strict"})
        except ApiError as err:
            if "failed calling webhook" in err.message and attempt < 4:
                time.sleep(2)
                continue
            return err.message
        return None
    raise AssertionError("unreachable")


def test_linter_and_real_kueue_webhook_agree_on_every_case(dev: LiveCluster, report: Report) -> None:
    ctx = context_from_stack(parse_stack_config(load_stack_config(stack_file("dev"))))
    rows = []
    for index, (name, edit, expected, _words) in enumerate(CASES):
        js = base()
        edit(js)
        obj = _placed(js, index)
        refusal = _real(dev, obj)
        ours = [f.message for f in lint_jobset(obj, ctx, check_schema=False) if f.rule == "kueue-webhook"]
        rows.append((name, expected, refusal, ours))
    by_kueue = [r for r in rows if r[2] is not None and KUEUE_DENIED.search(r[2])]
    other = [r for r in rows if r[2] is not None and not KUEUE_DENIED.search(r[2])]
    assert not other, f"refused by something other than Kueue's JobSet webhook: {other}"
    real_vs_expected = [r[0] for r in rows if (r[2] is not None) != r[1]]
    ours_vs_real = [r[0] for r in rows if bool(r[3]) != (r[2] is not None)]
    upstream = [r for r in rows if r[0].startswith("upstream: ")]
    agree_upstream = sum(1 for r in upstream if bool(r[3]) == (r[2] is not None))
    report.append(
        f"Kueue JobSet webhook: {len(rows) - len(ours_vs_real)} of {len(rows)} cases agree with the real "
        f"webhook ({agree_upstream} of {len(upstream)} of upstream's TestValidateCreate rows); "
        f"real refusals {len(by_kueue)}"
    )
    assert real_vs_expected == [], f"the real webhook disagrees with the expected verdict: {real_vs_expected}"
    assert ours_vs_real == [], f"the linter disagrees with the real webhook: {ours_vs_real}"
