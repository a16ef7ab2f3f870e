"""Kueue's JobSet webhook, create-time checks, as Kueue v0.19.2 runs them with its default gates.

``JobSetWebhook.validateCreate`` (``pkg/controller/jobs/jobset/jobset_webhook.go``) is
``jobframework.ValidateJobOnCreate`` (``pkg/controller/jobframework/validation.go``: the queue-name
label, the prebuilt workload, the max-exec-time label) and, with ``TopologyAwareScheduling`` (beta,
on by default since v0.14: ``pkg/features/kube_features.go``), per pod set
``ValidateTASPodSetRequest`` and ``ValidateSliceSizeAnnotationUpperBound`` and across them
``ValidatePodSetGroupingTopology`` (``pkg/controller/jobframework/tas_validation.go``). A JobSet's
pod set is one per replicatedJob, counting ``replicas x min(parallelism, completions)`` pods
(``jobset_controller.go``, ``podsCount``). Not checked: the elastic-job and admission-gated-by
annotations (their gates are off by default) and the multi-layer topology constraints annotation.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..constants import QUEUE_LABEL
from ..schema.metadata import dns1123_subdomain, qualified_name
from ..schema.structural import join
from .findings import Finding, finding
from .jobset import JobSetView, ReplicatedJob, whole_number

RULE = "kueue-webhook"
PREBUILT_WORKLOAD = "kueue.x-k8s.io/prebuilt-workload-name"
"""``constants.PrebuiltWorkloadLabel`` and ``PrebuiltWorkloadAnnotation`` (the same key)."""
MAX_EXEC_TIME = "kueue.x-k8s.io/max-exec-time-seconds"
LABEL_VALUE_MAX = 63
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED = "kueue.x-k8s.io/podset-unconstrained-topology"
SLICE_REQUIRED = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
GROUP_NAME = "kueue.x-k8s.io/podset-group-name"
_ATOI = re.compile(r"^[+-]?[0-9]+\Z")
_DIGITS = re.compile(r"^[0-9]+\Z")
"""ASCII digits only, as Go's strconv reads them (``str.isdigit`` also takes superscripts and
other scripts' digits)."""
_GO_BOOL = frozenset({"1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false", "False"})
INT32_MAX = 2**31 - 1
FIX_QUEUE = "use a lowercase RFC 1123 subdomain (letters, digits, '-', '.')"


def kueue_webhook_rules(js: JobSetView) -> Iterator[Finding]:
    """Every create-time check of Kueue's JobSet webhook a manifest alone can decide."""
    yield from _job_on_create(js)
    yield from _topology(js)


def _crd_name(value: object, path: str, what: str) -> Iterator[Finding]:
    problem = dns1123_subdomain(str(value))
    if problem:
        yield finding(RULE, path, f"{what} {str(value)!r}: {problem}", FIX_QUEUE)


def _job_on_create(js: JobSetView) -> Iterator[Finding]:
    labels, annotations = js.labels, js.annotations
    if QUEUE_LABEL in labels:
        yield from _crd_name(labels[QUEUE_LABEL], join("metadata.labels", QUEUE_LABEL), "queue name")
    # ValidatePrebuiltWorkloadName: the annotation when WorkloadIdentifierAnnotations (beta, on) or
    # when it is longer than a label value, else the label.
    annotation = str(annotations.get(PREBUILT_WORKLOAD) or "")
    if annotation:
        yield from _crd_name(
            annotation, join("metadata.annotations", PREBUILT_WORKLOAD), "prebuilt workload name"
        )
    elif PREBUILT_WORKLOAD in labels:
        yield from _crd_name(
            labels[PREBUILT_WORKLOAD], join("metadata.labels", PREBUILT_WORKLOAD), "prebuilt workload name"
        )
    if MAX_EXEC_TIME in labels:
        raw = str(labels[MAX_EXEC_TIME])
        path = join("metadata.labels", MAX_EXEC_TIME)
        fix = "set a whole number of seconds greater than 0"
        if not _ATOI.match(raw) or abs(int(raw)) >= 2**63:
            yield finding(RULE, path, f"max execution time {raw!r} is not an integer", fix)
        elif int(raw) <= 0:
            yield finding(RULE, path, f"max execution time {raw} should be greater than 0", fix)


def pod_set_count(rj: ReplicatedJob) -> int | None:
    """``podsCount``: replicas x min(parallelism (default 1), completions (default parallelism))."""
    parallelism = rj.parallelism
    completions = whole_number(rj.job_spec["completions"]) if "completions" in rj.job_spec else parallelism
    if parallelism is None or completions is None:
        return None
    return rj.replicas * min(parallelism, completions)


def _topology(js: JobSetView) -> Iterator[Finding]:
    groups: dict[str, list[ReplicatedJob]] = {}
    for rj in js.replicated_jobs:
        yield from _pod_set_request(rj)
        # A JobSet's pod sets always carry a topology request (Kueue gives them pod index labels,
        # ``tas.go`` ``Build``), so every pod set that names a group is in it.
        group = _annotations(rj).get(GROUP_NAME)
        if group is not None:
            groups.setdefault(group, []).append(rj)
    yield from _grouping(groups)


def _request(notes: dict[str, str]) -> tuple[str | None, str | None]:
    """(required, preferred) as ``Build`` sets them: required wins over preferred."""
    required = notes.get(REQUIRED)
    return required, (notes.get(PREFERRED) if required is None else None)


def _annotations(rj: ReplicatedJob) -> dict[str, str]:
    raw = rj.pod_meta.get("annotations")
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}


def _pod_set_request(rj: ReplicatedJob) -> Iterator[Finding]:
    """``ValidateTASPodSetRequest`` and ``ValidateSliceSizeAnnotationUpperBound`` of one pod set."""
    notes = _annotations(rj)
    at = f"{rj.pod_meta_path}.annotations"
    fix = "keep one of the Kueue topology annotations on the pod template"
    if sum(key in notes for key in (REQUIRED, PREFERRED, UNCONSTRAINED)) > 1:
        yield finding(
            RULE,
            at,
            "must not contain more than one topology annotation: "
            f"[{REQUIRED!r}, {PREFERRED!r}, {UNCONSTRAINED!r}]",
            fix,
        )
    for key in (REQUIRED, PREFERRED, SLICE_REQUIRED):
        if key in notes and (problem := qualified_name(notes[key])):
            yield finding(
                RULE, join(at, key), f"{notes[key]!r} is not a label key: {problem}", "name a node label key"
            )
    if GROUP_NAME in notes:
        yield from _group_name(notes, join(at, GROUP_NAME))
    if UNCONSTRAINED in notes and notes[UNCONSTRAINED] not in _GO_BOOL:
        yield finding(
            RULE,
            join(at, UNCONSTRAINED),
            f"{notes[UNCONSTRAINED]!r} must be a boolean value",
            "write true or false",
        )
    size = notes.get(SLICE_SIZE)
    if size is not None:
        number = int(size) if _ATOI.match(size) else None
        if number is None or abs(number) > INT32_MAX:
            yield finding(
                RULE, join(at, SLICE_SIZE), f"{size!r} must be a numeric value", "write a whole number"
            )
        elif number < 1:
            yield finding(
                RULE, join(at, SLICE_SIZE), f"{size!r} must be greater than or equal to 1", "write 1 or more"
            )
        elif (count := pod_set_count(rj)) is not None and number > count:
            yield finding(
                RULE,
                join(at, SLICE_SIZE),
                f"{size!r} must not be greater than pod set count {count}",
                f"use at most {count} (replicas x pods per Job)",
            )
    if SLICE_REQUIRED in notes and size is None:
        yield finding(
            RULE,
            join(at, SLICE_SIZE),
            f"must be set when {SLICE_REQUIRED!r} is specified",
            "set the slice size",
        )
    if size is not None and SLICE_REQUIRED not in notes:
        yield finding(
            RULE,
            join(at, SLICE_SIZE),
            f"may not be set when {SLICE_REQUIRED!r} is not specified",
            f"add {SLICE_REQUIRED}",
        )


def _group_name(notes: dict[str, str], path: str) -> Iterator[Finding]:
    value = notes[GROUP_NAME]
    if _DIGITS.match(value) and int(value) < 2**64:  # strconv.ParseUint(value, 10, 64) accepts it
        yield finding(RULE, path, f"{value!r} must not be a number", "name the group with letters")
    for other in (SLICE_SIZE, SLICE_REQUIRED):
        if other in notes:
            yield finding(
                RULE, path, f"may not be set when {other!r} is specified", f"remove {other} or the group"
            )
    if REQUIRED not in notes and PREFERRED not in notes:
        yield finding(
            RULE,
            path,
            f"may not be set when neither {PREFERRED!r} nor {REQUIRED!r} is specified",
            "add a required or preferred topology to both pod sets of the group",
        )


def _grouping(groups: dict[str, list[ReplicatedJob]]) -> Iterator[Finding]:
    """``ValidatePodSetGroupingTopology`` over the pod sets that ask for a topology."""
    for name, members in groups.items():
        paths = [join(f"{rj.pod_meta_path}.annotations", GROUP_NAME) for rj in members]
        if len(members) != 2:
            for path in paths:
                yield finding(
                    RULE, path,
                    f"can only define groups of exactly 2 pod sets, got: {len(members)} pod set(s)",
                    "put exactly two replicatedJobs (a leader and its workers) in the group",
                )  # fmt: skip
            continue
        counts = [pod_set_count(rj) for rj in members]
        if None not in counts and 1 not in counts:
            for path in paths:
                yield finding(
                    RULE, path,
                    "can only define groups where at least one pod set has only 1 replica, got: "
                    f"{counts[0]} replica(s) and {counts[1]} replica(s) in the group",
                    "make one pod set of the group a single pod (the leader)",
                )  # fmt: skip
        first, second = (_request(_annotations(rj)) for rj in members)
        if first == (None, None) or second == (None, None) or first != second:  # topologyRequestsValid
            for rj, other in ((members[0], members[1]), (members[1], members[0])):
                yield finding(
                    RULE, f"{rj.pod_meta_path}.annotations",
                    f"must specify {REQUIRED!r} or {PREFERRED!r} topology consistent with "
                    f"'{other.pod_meta_path}.annotations' in group {name!r}",
                    "give both pod sets of the group the same required or preferred topology",
                )  # fmt: skip
