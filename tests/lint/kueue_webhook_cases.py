"""JobSets for Kueue's JobSet webhook: each of Kueue v0.19.2's ``TestValidateCreate`` rows
(``pkg/controller/jobs/jobset/jobset_webhook_test.go``, by name) and each check of
``tpu_platform.lint.kueue_webhook``, applied to the linted example. Used by the linter's unit tests
and by the live tier, which sends each to the real webhook."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "jobsets" / "high-jax-trillium.yaml"
REQ = "kueue.x-k8s.io/podset-required-topology"
PREF = "kueue.x-k8s.io/podset-preferred-topology"
UNCON = "kueue.x-k8s.io/podset-unconstrained-topology"
SLICE_REQ = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
GROUP = "kueue.x-k8s.io/podset-group-name"
BLOCK = "cloud.google.com/gce-topology-block"


def base() -> dict[str, Any]:
    js: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    return js


def _label(key: str, value: str) -> Callable[[dict[str, Any]], None]:
    return lambda js: js["metadata"]["labels"].update({key: value})


def _rj(js: dict[str, Any], i: int = 0) -> dict[str, Any]:
    rjs: list[dict[str, Any]] = js["spec"]["replicatedJobs"]
    return rjs[i]


def _pod_notes(notes: dict[str, str]) -> Callable[[dict[str, Any]], None]:
    def edit(js: dict[str, Any]) -> None:
        meta = _rj(js)["template"]["spec"]["template"].setdefault("metadata", {})
        meta.setdefault("annotations", {}).update(notes)

    return edit


def _group(*members: tuple[str, int, int, dict[str, str]]) -> Callable[[dict[str, Any]], None]:
    """replicatedJobs (name, replicas, pods per Job, pod annotations) copied from the first one."""

    def edit(js: dict[str, Any]) -> None:
        import copy

        first = _rj(js)
        rjs = []
        for name, replicas, pods, notes in members:
            rj = copy.deepcopy(first)
            rj.update(name=name, replicas=replicas)
            rj["template"]["spec"].update(parallelism=pods, completions=pods)
            rj["template"]["spec"]["template"].setdefault("metadata", {})["annotations"] = dict(notes)
            rjs.append(rj)
        js["spec"]["replicatedJobs"] = rjs
        js["spec"].pop("successPolicy", None)

    return edit


def _both(*edits: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def edit(js: dict[str, Any]) -> None:
        for e in edits:
            e(js)

    return edit


# (name, edit, rejected by Kueue's webhook, words of our finding)
CASES: list[tuple[str, Callable[[dict[str, Any]], object], bool, str]] = [
    # Kueue v0.19.2 TestValidateCreate, row by row (the rows' JobSets are upstream's test builders;
    # here each row's point is applied to the example).
    ("upstream: simple", lambda js: None, False, ""),
    (
        "upstream: invalid queue-name label",
        _label("kueue.x-k8s.io/queue-name", "queue_name"),
        True,
        "queue name",
    ),
    (
        "upstream: valid prebuilt workload annotation, WorkloadIdentifierAnnotations enabled",
        lambda js: (
            js["metadata"]
            .setdefault("annotations", {})
            .update({"kueue.x-k8s.io/prebuilt-workload-name": "prebuilt-workload"})
        ),
        False,
        "",
    ),
    (
        "upstream: different prebuilt workload label and annotation, label ignored, "
        "WorkloadIdentifierAnnotations enabled",
        _both(
            _label("kueue.x-k8s.io/prebuilt-workload-name", "prebuilt-workload-label"),
            lambda js: (
                js["metadata"]
                .setdefault("annotations", {})
                .update({"kueue.x-k8s.io/prebuilt-workload-name": "prebuilt-workload-annotation"})
            ),
        ),
        False,
        "",
    ),
    (
        "upstream: with prebuilt workload",
        _label("kueue.x-k8s.io/prebuilt-workload-name", "prebuilt-workload"),
        False,
        "",
    ),
    (
        "upstream: valid topology request",
        _group(("launcher", 1, 1, {REQ: "cloud.com/block"}), ("worker", 1, 4, {REQ: "cloud.com/block"})),
        False,
        "",
    ),
    (
        "upstream: invalid topology request",
        _group(
            ("launcher", 1, 1, {REQ: "cloud.com/block"}),
            ("worker", 1, 4, {PREF: "cloud.com/block", REQ: "cloud.com/block"}),
        ),
        True,
        "must not contain more than one topology annotation",
    ),
    (
        "upstream: invalid slice topology request - slice size larger than number of podsets",
        _group(("job1", 2, 1, {REQ: "cloud.com/block", SLICE_REQ: "cloud.com/block", SLICE_SIZE: "20"})),
        True,
        "must not be greater than pod set count 2",
    ),
    (
        "upstream: valid PodSet grouping request",
        _group(
            ("launcher", 1, 1, {GROUP: "groupname", REQ: BLOCK}),
            ("worker", 4, 1, {GROUP: "groupname", REQ: BLOCK}),
        ),
        False,
        "",
    ),
    (
        "upstream: invalid PodSet grouping request - groups of size other than 2",
        _group(
            ("job1", 1, 1, {REQ: BLOCK, GROUP: "1podset"}),
            ("job2", 1, 1, {REQ: BLOCK, GROUP: "3podsets"}),
            ("job3", 2, 1, {REQ: BLOCK, GROUP: "3podsets"}),
            ("job4", 2, 2, {REQ: BLOCK, GROUP: "3podsets"}),
        ),
        True,
        "can only define groups of exactly 2 pod sets, got: 3 pod set(s)",
    ),
    (
        "upstream: invalid PodSet grouping request - no leader in group",
        _group(
            ("job1", 2, 1, {REQ: BLOCK, GROUP: "groupname"}), ("job2", 1, 3, {REQ: BLOCK, GROUP: "groupname"})
        ),
        True,
        "at least one pod set has only 1 replica, got: 2 replica(s) and 3 replica(s)",
    ),
    (
        "upstream: invalid PodSet grouping request - required topology does not match",
        _group(("job1", 1, 1, {REQ: "cloud.com/rack", GROUP: "g"}), ("job2", 2, 1, {REQ: BLOCK, GROUP: "g"})),
        True,
        "topology consistent with",
    ),
    (
        "upstream: invalid PodSet grouping request - preferred topology does not match",
        _group(
            ("job1", 1, 1, {PREF: "cloud.com/rack", GROUP: "g"}), ("job2", 2, 1, {PREF: BLOCK, GROUP: "g"})
        ),
        True,
        "topology consistent with",
    ),
    (
        "upstream: invalid PodSet grouping request - different topology annotations within group",
        _group(
            ("job1", 1, 1, {REQ: "cloud.com/rack", GROUP: "g"}), ("job2", 2, 1, {PREF: BLOCK, GROUP: "g"})
        ),
        True,
        "topology consistent with",
    ),
    # Each further check of the module.
    ("queue name with capitals", _label("kueue.x-k8s.io/queue-name", "Research"), True, "queue name"),
    (
        "prebuilt workload name",
        _label("kueue.x-k8s.io/prebuilt-workload-name", "Bad_Name"),
        True,
        "prebuilt workload",
    ),
    (
        "max exec time not a number",
        _label("kueue.x-k8s.io/max-exec-time-seconds", "ten"),
        True,
        "not an integer",
    ),
    ("max exec time zero", _label("kueue.x-k8s.io/max-exec-time-seconds", "0"), True, "greater than 0"),
    ("max exec time", _label("kueue.x-k8s.io/max-exec-time-seconds", "3600"), False, ""),
    ("topology not a label key", _pod_notes({REQ: "not a key!"}), True, "is not a label key"),
    ("unconstrained not a boolean", _pod_notes({UNCON: "yes"}), True, "must be a boolean value"),
    ("unconstrained", _pod_notes({UNCON: "True"}), False, ""),
    (
        "slice size without slice topology",
        _pod_notes({REQ: BLOCK, SLICE_SIZE: "1"}),
        True,
        "is not specified",
    ),
    ("slice topology without size", _pod_notes({REQ: BLOCK, SLICE_REQ: BLOCK}), True, "must be set when"),
    (
        "slice size zero",
        _pod_notes({REQ: BLOCK, SLICE_REQ: BLOCK, SLICE_SIZE: "0"}),
        True,
        "greater than or equal to 1",
    ),
    (
        "slice size not a number",
        _pod_notes({REQ: BLOCK, SLICE_REQ: BLOCK, SLICE_SIZE: "two"}),
        True,
        "numeric value",
    ),
    ("slice size fits", _pod_notes({REQ: BLOCK, SLICE_REQ: BLOCK, SLICE_SIZE: "4"}), False, ""),
    (
        "group name a number",
        _both(_group(("a", 1, 1, {REQ: BLOCK, GROUP: "7"}), ("b", 2, 1, {REQ: BLOCK, GROUP: "7"}))),
        True,
        "must not be a number",
    ),
    (
        "group without topology",
        _group(("a", 1, 1, {GROUP: "g", UNCON: "true"}), ("b", 2, 1, {GROUP: "g", UNCON: "true"})),
        True,
        "neither",
    ),
]
