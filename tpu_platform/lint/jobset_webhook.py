"""JobSet's validating webhook, create-time checks a schema cannot express, as JobSet v0.12.0 runs them.

Each check is ``ValidateCreate`` and its helpers in ``pkg/webhooks/jobset_webhook.go`` at v0.12.0
(names below are its functions), with the feature gates the installed JobSet runs with
(:data:`JOBSET_DEFAULT_GATES`, ``pkg/features/features.go``: the platform installs JobSet's chart
without changing them). Generated names follow ``pkg/util/placement/placement.go`` (``GenJobName``,
``GenPodName``) and ``pkg/controllers`` (``CoordinatorEndpoint``, ``GetSubdomain``,
``GeneratePVCName``). Not checked here, since they read the cluster: an existing PVC's spec and the
retention policy it needs (``validateVolumeClaimPolicies``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..schema.metadata import dns1035_label, dns1123_subdomain, label_value
from .context import JOBSET_DEFAULT_GATES, LintContext
from .findings import Finding, finding
from .jobset import JobSetView, ReplicatedJob, as_dict, as_list, whole_number

POD_FAILURE_POLICY_REASON = "PodFailurePolicy"
JOB_FAILURE_REASONS = (
    "BackoffLimitExceeded",
    "DeadlineExceeded",
    "FailedIndexes",
    "MaxFailedIndexesExceeded",
    POD_FAILURE_POLICY_REASON,
)
"""``validOnJobFailureReasons``."""
RESTART_JOB_ACTIONS = ("RestartJob", "RestartJobAndIgnoreMaxRestarts")
MAX_REPLICAS_WITH_RESTART_JOB = 1024
"""``maxReplicasPerReplicatedJob``."""
MAX_INT32 = 2**31 - 1
MAX_MANAGED_BY = 63
"""``maxManagedByLength``."""
MAX_PVC_NAME = 63
"""``maxVolumeClaimLength``."""
RULE = "jobset-webhook"
_RULE_NAME = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
"""``ruleNameFmt``."""


def _dns1035(name: str) -> str | None:
    if len(name) > 63:
        return f"{name!r} is longer than 63 characters"
    if dns1035_label(name):
        return f"{name!r} is not a DNS-1035 label (lowercase letters, digits, '-', starting with a letter)"
    return None


def _dns1123_subdomain(name: str) -> str | None:
    if len(name) > 253:
        return f"{name!r} is longer than 253 characters"
    if dns1123_subdomain(name):
        return f"{name!r} is not a DNS-1123 subdomain (lowercase letters, digits, '-' and '.')"
    return None


def _domain_prefixed_path(value: str) -> str | None:
    """apimachinery ``IsDomainPrefixedPath``: ``<DNS-1123 subdomain>/<path>``, both non-empty."""
    host, sep, path = value.partition("/")
    if not sep or not host or not path:
        return f"{value!r} is not a domain-prefixed path such as 'kueue.x-k8s.io/multikueue'"
    if _dns1123_subdomain(host) is not None:
        return f"{value!r}: its domain {host!r} is not a DNS-1123 subdomain"
    if not re.match(r"^[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$", path):
        return f"{value!r}: its path holds characters a URL path may not"
    return None


def _gate(ctx: LintContext, name: str) -> bool:
    return bool(ctx.jobset_gates.get(name, JOBSET_DEFAULT_GATES.get(name, False)))


def webhook_rules(js: JobSetView, ctx: LintContext) -> Iterator[Finding]:
    """Every create-time check of JobSet's webhook that a manifest alone can decide."""
    yield from _names(js)
    yield from _spec_fields(js, ctx)
    yield from _failure_policy(js, ctx)
    yield from _coordinator(js)
    yield from _volume_claim_policies(js)


def _names(js: JobSetView) -> Iterator[Finding]:
    fix_names = "shorten the JobSet or replicatedJob name (generated names must be DNS-1035 labels)"
    earlier: set[str] = set()
    for rj in js.replicated_jobs:
        earlier.add(rj.name)
        job_name = f"{js.name}-{rj.name}-{max(rj.replicas - 1, 0)}"
        if problem := _dns1035(job_name):
            yield finding(RULE, f"{rj.path}.name", f"Job name {problem}", fix_names)
        if rj.completions and rj.job_spec.get("completionMode", "Indexed") == "Indexed":
            # The webhook adds a 5-character suffix like the one the Job controller appends.
            pod_name = f"{job_name}-{rj.completions - 1}-abcde"
            if problem := _dns1035(pod_name):
                yield finding(RULE, f"{rj.path}.name", f"pod name {problem}", fix_names)
        group = str(rj.raw.get("groupName", "default"))
        if problem := _dns1035(group):
            yield finding(RULE, f"{rj.path}.groupName", f"groupName {problem}", "use a DNS-1035 label")
        parallelism = whole_number(rj.job_spec.get("parallelism", 1)) or 0
        if parallelism * rj.replicas > MAX_INT32:
            yield finding(
                RULE,
                f"{rj.path}.replicas",
                f"replicas x parallelism = {parallelism * rj.replicas} exceeds {MAX_INT32}",
                "lower replicas or parallelism",
            )
        for i, dep in enumerate(as_list(rj.raw.get("dependsOn"))):
            name = as_dict(dep).get("name")
            # rJobNames in ValidateCreate holds this replicatedJob too when its dependsOn is checked.
            if rj.index > 0 and name not in earlier:
                yield finding(
                    RULE,
                    f"{rj.path}.dependsOn[{i}].name",
                    f"replicatedJob {rj.name!r} cannot depend on {name!r}: only an earlier replicatedJob",
                    f"name one of {', '.join(sorted(earlier - {rj.name})) or '(none: remove dependsOn)'}",
                )
    first = js.replicated_jobs[0] if js.replicated_jobs else None
    if first is not None and first.raw.get("dependsOn") is not None:
        yield finding(
            RULE,
            f"{first.path}.dependsOn",
            "dependsOn cannot be set on the first replicatedJob",
            "move the dependency to a later replicatedJob",
        )


def _spec_fields(js: JobSetView, ctx: LintContext) -> Iterator[Finding]:
    names = {rj.name for rj in js.replicated_jobs}
    for i, target in enumerate(as_list(as_dict(js.spec.get("successPolicy")).get("targetReplicatedJobs"))):
        if target not in names:
            yield finding(
                RULE,
                f"spec.successPolicy.targetReplicatedJobs[{i}]",
                f"no replicatedJob {target!r}",
                f"use one of {', '.join(sorted(names))}",
            )
    subdomain = as_dict(js.spec.get("network")).get("subdomain")
    if isinstance(subdomain, str) and subdomain:
        problem = _dns1123_subdomain(subdomain) or _dns1035(subdomain)
        if problem:
            yield finding(
                RULE,
                "spec.network.subdomain",
                f"subdomain {problem}: it names the JobSet's headless Service, so it must be a DNS-1035 "
                "label of at most 63 characters",
                "use a short lowercase name such as the JobSet's",
            )
    managed_by = js.spec.get("managedBy")
    if isinstance(managed_by, str):
        problem = _domain_prefixed_path(managed_by)
        if problem is None and len(managed_by) > MAX_MANAGED_BY:
            problem = f"{managed_by!r} is longer than {MAX_MANAGED_BY} characters"
        if problem:
            yield finding(
                RULE, "spec.managedBy", f"managedBy {problem}", "use kueue.x-k8s.io/multikueue or remove it"
            )
    strategy = js.failure_policy.get("restartStrategy")
    if strategy == "InPlaceRestart":
        if not _gate(ctx, "InPlaceRestart"):
            yield finding(
                RULE,
                "spec.failurePolicy.restartStrategy",
                "InPlaceRestart needs JobSet's InPlaceRestart feature gate, off in the installed JobSet",
                "use restartStrategy: Recreate (the default) or BlockingRecreate",
            )
        else:
            yield from _in_place_restart(js)


def _in_place_restart(js: JobSetView) -> Iterator[Finding]:
    for rj in js.replicated_jobs:
        spec = rj.job_spec
        if spec.get("backoffLimit") != MAX_INT32:
            yield finding(
                RULE, f"{rj.job_path}.backoffLimit", f"must be {MAX_INT32} with in-place restart", "set it"
            )
        if spec.get("podReplacementPolicy") != "Failed":
            yield finding(
                RULE,
                f"{rj.job_path}.podReplacementPolicy",
                "must be Failed with in-place restart",
                "set podReplacementPolicy: Failed",
            )
        completions, parallelism = spec.get("completions"), spec.get("parallelism")
        if completions is None or parallelism is None or completions != parallelism:
            yield finding(
                RULE,
                f"{rj.job_path}.completions",
                "completions and parallelism must be set and equal with in-place restart",
                "set both to the number of pods per Job",
            )


def _failure_policy(js: JobSetView, ctx: LintContext) -> Iterator[Finding]:
    policy = js.failure_policy
    rules = [as_dict(r) for r in as_list(policy.get("rules"))]
    restart_job = [i for i, r in enumerate(rules) if r.get("action") in RESTART_JOB_ACTIONS]
    if restart_job:
        path = f"spec.failurePolicy.rules[{restart_job[0]}].action"
        if not _gate(ctx, "RestartJob"):
            yield finding(
                RULE,
                path,
                f"{rules[restart_job[0]].get('action')} needs JobSet's RestartJob feature gate, off in the "
                "installed JobSet (v0.12.0 default)",
                "use RestartJobSet or RestartJobSetAndIgnoreMaxRestarts",
            )
            return  # the webhook stops here too
        if any(rj.replicas > MAX_REPLICAS_WITH_RESTART_JOB for rj in js.replicated_jobs):
            yield finding(
                RULE,
                path,
                f"RestartJob actions allow at most {MAX_REPLICAS_WITH_RESTART_JOB} replicas a replicatedJob",
                "lower replicas or use RestartJobSet",
            )
    names = {rj.name for rj in js.replicated_jobs}
    seen: set[str] = set()
    for index, rule in enumerate(rules):
        path = f"spec.failurePolicy.rules[{index}]"
        name = rule.get("name")
        if isinstance(name, str) and name:
            if len(name) > 128 or not _RULE_NAME.match(name):
                yield finding(
                    RULE,
                    f"{path}.name",
                    f"failure policy rule name {name!r} is invalid: it must start with a letter and contain "
                    "only letters, digits, '_', ',' and ':' (at most 128)",
                    f"rename it, e.g. {re.sub(r'[^A-Za-z0-9_]', '', name.title()) or 'Rule'!r}",
                )
            elif name in seen:
                yield finding(RULE, f"{path}.name", f"rule name {name!r} is used twice", "rename it")
            seen.add(name)
        for reason in as_list(rule.get("onJobFailureReasons")):
            if reason not in JOB_FAILURE_REASONS:
                yield finding(
                    RULE,
                    f"{path}.onJobFailureReasons",
                    f"{reason!r} is not a Job failure reason",
                    f"use one of {', '.join(JOB_FAILURE_REASONS)}",
                )
        for target in as_list(rule.get("targetReplicatedJobs")):
            if target not in names:
                yield finding(
                    RULE,
                    f"{path}.targetReplicatedJobs",
                    f"no replicatedJob {target!r}",
                    f"use one of {', '.join(sorted(names))}",
                )


def _coordinator(js: JobSetView) -> Iterator[Finding]:
    coordinator = js.spec.get("coordinator")
    if not isinstance(coordinator, dict):
        return
    target = coordinator.get("replicatedJob")
    job_index = whole_number(coordinator.get("jobIndex", 0))
    pod_index = whole_number(coordinator.get("podIndex", 0))
    rj = next((r for r in js.replicated_jobs if r.name == target), None)
    problem = _coordinator_problem(rj, target, job_index, pod_index)
    if problem:
        yield finding(RULE, "spec.coordinator", problem, "point it at an existing pod of an Indexed Job")
    subdomain = as_dict(js.spec.get("network")).get("subdomain") or js.name
    endpoint = f"{js.name}-{target}-{job_index}-{pod_index}.{subdomain}"
    if label_value(endpoint):
        yield finding(
            RULE,
            "spec.coordinator",
            f"the coordinator label value {endpoint!r} is not a valid label value (at most 63 characters)",
            "shorten the JobSet, replicatedJob or subdomain name",
        )


def _coordinator_problem(
    rj: ReplicatedJob | None, target: Any, job: int | None, pod: int | None
) -> str | None:
    if rj is None:
        return f"coordinator replicatedJob {target!r} does not exist"
    if job is None or not 0 <= job < rj.replicas:
        return f"coordinator jobIndex {job} is invalid for replicatedJob {rj.name!r} ({rj.replicas} replicas)"
    if rj.job_spec.get("completionMode", "Indexed") != "Indexed" or rj.completions is None:
        return "the coordinator's Job must be Indexed with completions set"
    if pod is None or not 0 <= pod < rj.completions:
        return f"coordinator podIndex {pod} is invalid ({rj.completions} completions)"
    return None


def _volume_claim_policies(js: JobSetView) -> Iterator[Finding]:
    seen: set[str] = set()
    for p, raw in enumerate(as_list(js.spec.get("volumeClaimPolicies"))):
        for t, template in enumerate(as_list(as_dict(raw).get("templates"))):
            path = f"spec.volumeClaimPolicies[{p}].templates[{t}].metadata.name"
            name = str(as_dict(as_dict(template).get("metadata")).get("name") or "")
            if name in seen:
                yield finding(
                    RULE, path, f"template name {name!r} is used twice", "give each template its own"
                )
            seen.add(name)
            if problem := _dns1123_subdomain(name):
                yield finding(RULE, path, f"template name {problem}", "use a lowercase DNS-1123 name")
            pvc = f"{name}-{js.name}"
            if len(pvc) > MAX_PVC_NAME:
                yield finding(
                    RULE,
                    path,
                    f"the PVC name {pvc!r} is longer than {MAX_PVC_NAME}",
                    "shorten the template name",
                )
            yield from _claim_mounts(js, name, path)


def _claim_mounts(js: JobSetView, claim: str, path: str) -> Iterator[Finding]:
    """``validateReplicatedJobsVolumeClaims``: no pod volume of that name, a volumeMount of it somewhere."""
    mounted = False
    for rj in js.replicated_jobs:
        for v, volume in enumerate(as_list(rj.pod_spec.get("volumes"))):
            if as_dict(volume).get("name") == claim:
                yield finding(
                    RULE,
                    f"{rj.pod_path}.volumes[{v}].name",
                    f"volume {claim!r} conflicts with the volumeClaimPolicies template of that name",
                    "remove the volume: JobSet adds it from the template",
                )
        for c in [*rj.containers(init=True), *rj.containers()]:
            if any(as_dict(m).get("name") == claim for m in as_list(c.spec.get("volumeMounts"))):
                mounted = True
    if not mounted:
        yield finding(
            RULE, path, f"no container mounts {claim!r}", f"add a volumeMount named {claim!r} to a container"
        )
