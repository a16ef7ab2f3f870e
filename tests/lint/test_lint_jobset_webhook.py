"""JobSet v0.12.0's create-time webhook checks, each on the example it breaks, with the feature gates
the installed JobSet runs (both off) and with them on. The real webhook's verdicts on upstream's own
table are compared in ``tests/live/test_jobset_webhook_table.py``."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from tpu_platform.lint import Finding, LintContext, lint_jobset, load_context

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "jobsets"
GATES_ON = {"RestartJob": True, "InPlaceRestart": True}


@pytest.fixture(scope="module")
def ctx() -> LintContext:
    return load_context(EXAMPLES / "seed-context.yaml")


def base() -> dict[str, Any]:
    return yaml.safe_load((EXAMPLES / "high-jax-trillium.yaml").read_text())


def webhook(js: dict[str, Any], ctx: LintContext) -> list[Finding]:
    return [f for f in lint_jobset(js, ctx, check_schema=False) if f.rule == "jobset-webhook"]


def rj(js: dict[str, Any], i: int = 0) -> dict[str, Any]:
    return js["spec"]["replicatedJobs"][i]


def second(js: dict[str, Any], name: str = "second", **extra: Any) -> dict[str, Any]:
    other = copy.deepcopy(rj(js))
    other.update(name=name, **extra)
    js["spec"]["replicatedJobs"].append(other)
    return other


def restart_job(js: dict[str, Any]) -> None:
    js["spec"].setdefault("failurePolicy", {})["rules"] = [{"name": "r", "action": "RestartJob"}]


def in_place(js: dict[str, Any]) -> None:
    js["spec"].setdefault("failurePolicy", {})["restartStrategy"] = "InPlaceRestart"


def coordinator(**fields: Any) -> Callable[[dict[str, Any]], None]:
    def edit(js: dict[str, Any]) -> None:
        js["spec"]["coordinator"] = {"replicatedJob": rj(js)["name"], **fields}

    return edit


def claim(name: str, mount: bool = True) -> Callable[[dict[str, Any]], None]:
    def edit(js: dict[str, Any]) -> None:
        js["spec"]["volumeClaimPolicies"] = [{"templates": [{"metadata": {"name": name}, "spec": {}}]}]
        if mount:
            container = rj(js)["template"]["spec"]["template"]["spec"]["containers"][0]
            container.setdefault("volumeMounts", []).append({"name": name, "mountPath": "/data"})

    return edit


CASES: list[tuple[str, Callable[[dict[str, Any]], object], str]] = [
    (
        "success policy target",
        lambda js: js["spec"].update(successPolicy={"targetReplicatedJobs": ["x"]}),
        "no replicatedJob 'x'",
    ),
    ("subdomain", lambda js: js["spec"].update(network={"subdomain": "Bad_Name"}), "subdomain"),
    ("subdomain too long", lambda js: js["spec"].update(network={"subdomain": "a" * 64}), "subdomain"),
    ("managedBy path", lambda js: js["spec"].update(managedBy="not-a-path"), "domain-prefixed path"),
    ("managedBy long", lambda js: js["spec"].update(managedBy="example.com/" + "a" * 60), "longer than 63"),
    ("RestartJob gate off", restart_job, "RestartJob feature gate"),
    ("InPlaceRestart gate off", in_place, "InPlaceRestart feature gate"),
    (
        "dependsOn later",
        lambda js: (
            rj(js).update(dependsOn=None),
            second(js, dependsOn=[{"name": "third", "status": "Ready"}]),
        ),
        "cannot depend on 'third'",
    ),
    (
        "coordinator missing",
        lambda js: js["spec"].update(coordinator={"replicatedJob": "nope"}),
        "does not exist",
    ),
    ("coordinator job index", coordinator(jobIndex=5), "jobIndex 5 is invalid"),
    ("coordinator pod index", coordinator(podIndex=99), "podIndex 99 is invalid"),
    ("claim not mounted", claim("data", mount=False), "no container mounts 'data'"),
    ("claim name", claim("Data"), "DNS-1123 subdomain"),
    ("claim too long", claim("d" * 60), "PVC name"),
    (
        "replicas x parallelism",
        lambda js: (rj(js).update(replicas=2**20), rj(js)["template"]["spec"].update(parallelism=2**12)),
        "exceeds 2147483647",
    ),
]


def test_the_example_passes_the_webhook(ctx: LintContext) -> None:
    assert webhook(base(), ctx) == []


@pytest.mark.parametrize(("case", "edit", "words"), CASES, ids=[c[0] for c in CASES])
def test_each_check_fires_on_its_mistake(
    ctx: LintContext, case: str, edit: Callable[[dict[str, Any]], object], words: str
) -> None:
    js = base()
    edit(js)
    found = webhook(js, ctx)
    assert any(words in f.message for f in found), (case, [f.message for f in found])
    assert all(f.severity == "error" for f in found)


def test_gated_fields_pass_with_the_gates_on_and_meet_their_own_rules(ctx: LintContext) -> None:
    gated = replace(ctx, jobset_gates=GATES_ON)
    js = base()
    restart_job(js)
    assert webhook(js, gated) == []
    rj(js)["replicas"] = 1025
    assert [f.message for f in webhook(js, gated)] == [
        "RestartJob actions allow at most 1024 replicas a replicatedJob"
    ]
    js = base()
    in_place(js)
    messages = " ".join(f.message for f in webhook(js, gated))
    assert "backoffLimit" not in messages  # the field path names it; the message says what it must be
    assert "must be 2147483647 with in-place restart" in messages
    assert "must be Failed with in-place restart" in messages
    spec = rj(js)["template"]["spec"]
    spec.update(backoffLimit=2**31 - 1, podReplacementPolicy="Failed", completions=4, parallelism=4)
    assert webhook(js, gated) == []


def test_a_mounted_valid_claim_and_an_earlier_dependency_pass(ctx: LintContext) -> None:
    js = base()
    claim("data")(js)
    rj(js)["dependsOn"] = None
    second(js, dependsOn=[{"name": rj(js)["name"], "status": "Ready"}])
    assert webhook(js, ctx) == []
