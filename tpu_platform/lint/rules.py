"""The lint rules: each reads a JobSet and a ``LintContext`` and returns findings.

Every rule answers one of three questions: will Kueue ignore this JobSet, will Kueue (or
the scheduler) never run it, or will preemption and hotswap be unable to help it?
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from ..catalog import SliceShape
from ..constants import (
    LABEL_NODEPOOL,
    PRIORITY_LABEL,
    QUEUE_LABEL,
)
from ..schema.structural import join
from .capacity import capacity_rules, covered_resource_rules, queue_target, tpu_rules
from .context import LintContext
from .findings import Finding, finding
from .jobset import JobSetView, ReplicatedJob, as_dict, as_list, whole_number
from .jobset_webhook import webhook_rules
from .kueue_webhook import kueue_webhook_rules

MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"

KUEUE_PREFIX = "kueue.x-k8s.io/"
EXCLUSIVE_TOPOLOGY = "alpha.jobset.sigs.k8s.io/exclusive-topology"
DISRUPTION_TARGET = "DisruptionTarget"
POD_FAILURE_POLICY_REASON = "PodFailurePolicy"
IGNORE_MAX_RESTARTS = ("RestartJobSetAndIgnoreMaxRestarts", "RestartJobAndIgnoreMaxRestarts")
DEFAULT_BACKOFF_LIMIT = 6

# A container image reference (the distribution/reference grammar, without normalisation).
_IMAGE = re.compile(
    r"^(?:(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*"
    r"(?::[0-9]+)?/)?"
    r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
    r"(?::[\w][\w.-]{0,127})?"
    r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$"
)
_PLACEHOLDER = re.compile(r"<[A-Za-z][A-Za-z0-9 _-]*>")
# What JobSet's validating webhook accepts (pkg/webhooks/jobset_webhook.go, v0.12.0).


def label_path(key: str, where: str = "metadata.labels") -> str:
    return join(where, key)


def _yaml_label(key: str, value: str) -> str:
    return f"{key}: {value!r}" if value in ("true", "false", "yes", "no", "on", "off") else f"{key}: {value}"


def hotswap_opted_in(js: JobSetView, ctx: LintContext) -> bool:
    key, value = ctx.hotswap_label
    return str(js.labels.get(key)) == value


# --- queue ---------------------------------------------------------------------------------------


def queue_rules(js: JobSetView, ctx: LintContext) -> Iterator[Finding]:
    for key in (QUEUE_LABEL, PRIORITY_LABEL):
        if key in js.annotations and key not in js.labels:
            value = str(js.annotations[key])
            if key == QUEUE_LABEL:
                effect = "Kueue reads the queue from labels only, so it does not manage this JobSet at all"
            else:
                effect = "Kueue reads the WorkloadPriorityClass from labels only, so this has no effect"
            yield finding(
                "queue-as-annotation",
                label_path(key, "metadata.annotations"),
                f"{key} is an annotation: {effect}",
                f"move it to metadata.labels: `{_yaml_label(key, value)}`",
                severity="error" if key == QUEUE_LABEL else "warning",
            )
    queue = js.labels.get(QUEUE_LABEL)
    if queue is None:
        if QUEUE_LABEL in js.annotations:
            return
        if ctx.manage_jobs_without_queue_name:
            effect = (
                "Kueue (manageJobsWithoutQueueName) keeps it suspended with no queue: it is never admitted"
            )
        else:
            effect = (
                "Kueue ignores it: it runs outside quota, priority and preemption and can starve queued work"
            )
        available = ctx.queues_in(js.namespace)
        yield finding(
            "queue-label-missing",
            "metadata.labels",
            f"no {QUEUE_LABEL} label: {effect}",
            f"add `{QUEUE_LABEL}: <local queue>` to metadata.labels"
            + (f" (queues in {js.namespace}: {', '.join(available)})" if available else ""),
        )
        return
    if (js.namespace, str(queue)) not in ctx.local_queues:
        elsewhere = ctx.namespaces_with_queue(str(queue))
        available = ctx.queues_in(js.namespace)
        hint = f"; {queue!r} exists in namespace(s) {', '.join(elsewhere)}" if elsewhere else ""
        yield finding(
            "queue-not-found",
            label_path(QUEUE_LABEL),
            f"no LocalQueue {queue!r} in namespace {js.namespace!r}{hint}: Kueue keeps the JobSet suspended "
            "and never admits it",
            f"use one of the namespace's queues ({', '.join(available)})"
            if available
            else f"create the LocalQueue in {js.namespace!r} or submit the JobSet to a namespace that has it",
        )
        return
    target = queue_target(js, ctx)
    managed_by = js.spec.get("managedBy")
    if target is not None and target.multikueue and managed_by not in (None, MULTIKUEUE_CONTROLLER):
        # Kueue's JobSet MultiKueue adapter (v0.19.2 jobset_multikueue_adapter.go,
        # IsJobManagedByKueue) rejects the admission check for any other spec.managedBy.
        yield finding(
            "multikueue-managed-by",
            "spec.managedBy",
            f"spec.managedBy is {managed_by!r}: MultiKueue rejects the workload (it dispatches only "
            f"JobSets managed by {MULTIKUEUE_CONTROLLER}) and the manager has no TPUs to run it itself",
            f"remove spec.managedBy (Kueue sets {MULTIKUEUE_CONTROLLER}) or set it to that value",
        )


def template_label_rules(js: JobSetView, ctx: LintContext) -> Iterator[Finding]:
    for rj in js.replicated_jobs:
        for meta, where in ((rj.job_meta, rj.job_meta_path), (rj.pod_meta, rj.pod_meta_path)):
            for kind in ("labels", "annotations"):
                for key in as_dict(meta.get(kind)):
                    if not str(key).startswith(KUEUE_PREFIX):
                        continue
                    movable = key in (QUEUE_LABEL, PRIORITY_LABEL)
                    yield finding(
                        "kueue-label-on-template",
                        label_path(str(key), f"{where}.{kind}"),
                        f"Kueue does not read {key} from a Job or pod template; it reads only the "
                        "JobSet's own labels, so this is ignored",
                        "move it to the JobSet's metadata.labels" if movable else "remove it",
                    )


# --- priority ------------------------------------------------------------------------------------


def priority_rules(js: JobSetView, ctx: LintContext) -> Iterator[Finding]:
    wpc = js.labels.get(PRIORITY_LABEL)
    pod_classes = {rj.index: rj.pod_spec.get("priorityClassName") for rj in js.replicated_jobs}
    if wpc is None:
        if PRIORITY_LABEL not in js.annotations:
            named = sorted({str(pc) for pc in pod_classes.values() if pc})
            fallback = (
                f"Kueue falls back to the pods' PriorityClass ({', '.join(named)})"
                if named
                else "Kueue falls back to the pods' priority, and they have none: priority 0"
            )
            known = ", ".join(f"{n} ({v})" for n, v in sorted(ctx.workload_priority_classes.items()))
            yield finding(
                "workload-priority-missing",
                "metadata.labels",
                f"no {PRIORITY_LABEL} label: {fallback}; queueing order and Kueue preemption then follow the "
                "pod priority instead of a WorkloadPriorityClass",
                f"add `{PRIORITY_LABEL}: <class>` to metadata.labels"
                + (f" (known: {known})" if known else ""),
            )
    elif str(wpc) not in ctx.workload_priority_classes:
        known = ", ".join(sorted(ctx.workload_priority_classes)) or "none defined"
        yield finding(
            "workload-priority-unknown",
            label_path(PRIORITY_LABEL),
            f"no WorkloadPriorityClass {wpc!r}: Kueue cannot create the Workload, so the JobSet is never "
            "admitted",
            f"use a defined WorkloadPriorityClass ({known})",
        )
    for rj in js.replicated_jobs:
        pc = pod_classes[rj.index]
        path = f"{rj.pod_path}.priorityClassName"
        if not pc:
            yield finding(
                "pod-priority-missing",
                path,
                f"replicatedJob {rj.name!r} pods have no priorityClassName: they run at priority 0 (or the "
                "globalDefault class), so kube-scheduler preemption and hotswap cannot favour them",
                "set priorityClassName to the PriorityClass matching the workload priority",
            )
        elif str(pc) not in ctx.priority_classes:
            known = ", ".join(sorted(ctx.priority_classes)) or "none defined"
            yield finding(
                "pod-priority-unknown",
                path,
                f"no PriorityClass {pc!r}: the API server rejects the pods, so the Jobs never start any",
                f"use a defined PriorityClass ({known})",
            )
        elif str(wpc) in ctx.workload_priority_classes:
            workload, pod = ctx.workload_priority_classes[str(wpc)], ctx.priority_classes[str(pc)]
            if workload != pod:
                yield finding(
                    "priority-mismatch",
                    path,
                    f"workload priority {wpc} = {workload} but pod priority {pc} = {pod}: Kueue orders and "
                    "preempts by one, kube-scheduler and hotswap by the other",
                    "pair each WorkloadPriorityClass with a PriorityClass of the same value",
                )
    yield from _entitlement_findings(js, ctx, wpc, pod_classes)
    distinct = {str(pc) for pc in pod_classes.values() if pc}
    if len(distinct) > 1:
        yield finding(
            "priority-mismatch",
            "spec.replicatedJobs",
            f"replicatedJobs use different pod PriorityClasses ({', '.join(sorted(distinct))}): one JobSet "
            "could be partly preempted",
            "give every replicatedJob the same priorityClassName",
        )


def _entitlement_findings(
    js: JobSetView, ctx: LintContext, wpc: object, pod_classes: dict[int, object]
) -> Iterator[Finding]:
    """What the stack's priority admission policy would refuse, with the API server's own words."""
    if ctx.entitlements is None:
        return
    named = [(label_path(PRIORITY_LABEL), wpc)] + [
        (f"{rj.pod_path}.priorityClassName", pod_classes[rj.index]) for rj in js.replicated_jobs
    ]
    for path, priority in named:
        refusal = ctx.entitlements.refusal(js.namespace, str(priority)) if priority else None
        if refusal:
            yield finding(
                "priority-not-granted",
                path,
                f"the API server refuses the JobSet: {refusal}",
                "use a priority the stack grants this namespace's team, or grant it in "
                "tpu-platform:priorities[].teams",
            )


# --- placement, failure policy and hotswap -------------------------------------------------------


def exclusive_placement_rules(
    js: JobSetView, ctx: LintContext, shapes: dict[int, SliceShape]
) -> Iterator[Finding]:
    for rj in js.replicated_jobs:
        shape = shapes.get(rj.index)
        if shape is None or not shape.multi_host:
            continue
        value = js.annotations.get(
            EXCLUSIVE_TOPOLOGY, as_dict(rj.job_meta.get("annotations")).get(EXCLUSIVE_TOPOLOGY)
        )
        if value == LABEL_NODEPOOL:
            continue
        problem = "is missing" if value is None else f"is {value!r}"
        yield finding(
            "exclusive-placement",
            label_path(EXCLUSIVE_TOPOLOGY, "metadata.annotations"),
            f"{EXCLUSIVE_TOPOLOGY} {problem}: the pods of one {shape.topology} slice Job can spread over "
            "several node pools (or share one with another Job), so the slice never forms, and hotswap "
            "cannot map the JobSet to whole pools",
            f"add the annotation `{EXCLUSIVE_TOPOLOGY}: {LABEL_NODEPOOL}` to the JobSet",
        )
        return


def _disruption_fails_job(rj: ReplicatedJob) -> bool:
    rules = as_list(as_dict(rj.job_spec.get("podFailurePolicy")).get("rules"))
    for raw in rules:
        rule = as_dict(raw)
        conditions = as_list(rule.get("onPodConditions"))
        matches = any(
            as_dict(c).get("type") == DISRUPTION_TARGET and as_dict(c).get("status", "True") == "True"
            for c in conditions
        )
        if matches:
            return rule.get("action") == "FailJob"
    return False


def _first_rule_for_pod_failure_policy(js: JobSetView, rj: ReplicatedJob) -> dict[str, object] | None:
    """The first JobSet failure rule that certainly matches a Job failed by its pod failure policy."""
    for raw in as_list(js.failure_policy.get("rules")):
        rule = as_dict(raw)
        reasons = as_list(rule.get("onJobFailureReasons"))
        targets = as_list(rule.get("targetReplicatedJobs"))
        if rule.get("onJobFailureMessagePatterns"):
            continue
        if (not reasons or POD_FAILURE_POLICY_REASON in reasons) and (not targets or rj.name in targets):
            return rule
    return None


def failure_policy_rules(
    js: JobSetView, ctx: LintContext, shapes: dict[int, SliceShape]
) -> Iterator[Finding]:
    fp = js.failure_policy
    max_restarts = whole_number(fp.get("maxRestarts"))
    if not max_restarts:
        yield finding(
            "max-restarts",
            "spec.failurePolicy.maxRestarts",
            "maxRestarts is "
            + ("0" if max_restarts == 0 else "unset (0)")
            + ": the first failure, a preemption or a node repair included, fails the JobSet for good and "
            "hotswap has nothing to restart",
            "set spec.failurePolicy.maxRestarts (e.g. 10); failurePolicy cannot be changed after creation",
        )
    if fp.get("restartStrategy") == "BlockingRecreate":
        # JobSet v0.12.0 (pkg/controllers/jobset_controller.go): deleteJobs uses foreground deletion
        # and constructJobsFromTemplate creates a Job only when none of its name exists, so under
        # Recreate too the new Jobs wait for the old pods; BlockingRecreate waits for all of them.
        opted_in = hotswap_opted_in(js, ctx)
        yield finding(
            "blocking-recreate",
            "spec.failurePolicy.restartStrategy",
            (
                "BlockingRecreate waits for every old pod to be gone; the hotswap controller clears pods "
                "stuck on a dead node for this JobSet (docs/linter.md: blocking-recreate)"
            )
            if opted_in
            else (
                "BlockingRecreate (and Recreate) wait for every old pod to be gone: pods stuck Terminating "
                "on a dead node hold the restart until the node is repaired, and this JobSet has not "
                "opted in to the hotswap controller that clears them"
            ),
            "" if opted_in else f"add the label `{_yaml_label(*ctx.hotswap_label)}`",
            severity="info" if opted_in else "warning",
        )
    missing_pod_policy = [rj for rj in js.replicated_jobs if not _disruption_fails_job(rj)]
    for rj in missing_pod_policy:
        yield finding(
            "preemption-burns-restarts",
            f"{rj.job_path}.podFailurePolicy",
            f"replicatedJob {rj.name!r} has no podFailurePolicy rule `{DISRUPTION_TARGET} -> FailJob`: a "
            "preempted or evicted pod fails the Job like a crash, and each such restart uses up one of "
            "maxRestarts",
            "add podFailurePolicy.rules: [{action: FailJob, onPodConditions: [{type: DisruptionTarget, "
            "status: 'True'}]}] (needs restartPolicy: Never)",
        )
    for rj in js.replicated_jobs:
        if rj in missing_pod_policy:
            continue
        rule = _first_rule_for_pod_failure_policy(js, rj)
        action = rule.get("action") if rule else None
        if action in IGNORE_MAX_RESTARTS:
            continue
        why = (
            f"the first failurePolicy rule matching it ({rule.get('name')!r}) does {action}"
            if rule
            else "no failurePolicy rule matches it, so JobSet does RestartJobSet, which counts"
        )
        yield finding(
            "preemption-burns-restarts",
            "spec.failurePolicy.rules",
            f"a Job of {rj.name!r} failed by its pod failure policy (reason {POD_FAILURE_POLICY_REASON}): "
            f"{why}",
            "add a first rule {name: ..., action: RestartJobSetAndIgnoreMaxRestarts, onJobFailureReasons: "
            f"[{POD_FAILURE_POLICY_REASON}]}}",
        )
        break
    for rj in js.replicated_jobs:
        if rj.job_spec.get("podFailurePolicy") is not None and rj.pod_spec.get("restartPolicy") != "Never":
            current = rj.pod_spec.get("restartPolicy")
            yield finding(
                "pod-failure-policy-restart-policy",
                f"{rj.pod_path}.restartPolicy",
                f"a Job with podFailurePolicy needs pods with restartPolicy Never, this one is "
                f"{current or 'unset (JobSet makes it OnFailure)'}: the API server rejects the Jobs",
                "set restartPolicy: Never on the pod template",
            )
        shape = shapes.get(rj.index)
        backoff = whole_number(rj.job_spec.get("backoffLimit", DEFAULT_BACKOFF_LIMIT))
        if shape is not None and shape.multi_host and backoff != 0:
            yield finding(
                "backoff-limit",
                f"{rj.job_path}.backoffLimit",
                f"backoffLimit is {rj.job_spec.get('backoffLimit', f'unset ({DEFAULT_BACKOFF_LIMIT})')}: a "
                f"failed worker of a {shape.topology} slice is restarted alone and cannot rejoin the running "
                "program, which hangs instead of restarting",
                "set backoffLimit: 0 so the Job fails and JobSet restarts the whole slice",
            )


def hotswap_rules(js: JobSetView, ctx: LintContext) -> Iterator[Finding]:
    key, value = ctx.hotswap_label
    if hotswap_opted_in(js, ctx):
        return
    current = js.labels.get(key)
    yield finding(
        "hotswap-opt-in",
        label_path(key),
        ("no " if current is None else f"{current!r} for ") + f"{key} label: the hotswap controller does not "
        "recover, reschedule or make room for this JobSet",
        f"add `{_yaml_label(key, value)}` to metadata.labels",
    )


# --- pods ----------------------------------------------------------------------------------------


def pod_rules(js: JobSetView, ctx: LintContext) -> Iterator[Finding]:
    for rj in js.replicated_jobs:
        if (
            rj.pod_spec.get("hostNetwork") is True
            and rj.pod_spec.get("dnsPolicy") != "ClusterFirstWithHostNet"
        ):
            yield finding(
                "host-network-dns",
                f"{rj.pod_path}.dnsPolicy",
                "hostNetwork pods use the node's DNS unless dnsPolicy is ClusterFirstWithHostNet: workers "
                "cannot resolve the JobSet's headless service to find the coordinator",
                "set dnsPolicy: ClusterFirstWithHostNet",
            )
        for c in [*rj.containers(), *rj.containers(init=True)]:
            image = c.spec.get("image")
            if not isinstance(image, str) or not _IMAGE.match(image):
                yield finding(
                    "container-image",
                    f"{c.path}.image",
                    f"container {c.spec.get('name')!r} image {image!r} is not a valid image reference: the "
                    "pods fail with InvalidImageName",
                    "use a full reference, e.g. us-docker.pkg.dev/<project>/<repo>/<image>:<tag>",
                )
            values: list[tuple[str, object]] = [
                (f"{c.path}.{key}[{i}]", v)
                for key in ("command", "args")
                for i, v in enumerate(as_list(c.spec.get(key)))
            ]
            values += [
                (f"{c.path}.env[{i}].value", as_dict(e).get("value"))
                for i, e in enumerate(as_list(c.spec.get("env")))
            ]
            for path, value in values:
                if isinstance(value, str) and _PLACEHOLDER.search(value):
                    yield finding(
                        "placeholder-value",
                        path,
                        f"{value!r} still holds a placeholder",
                        "replace the <...> part with the real value",
                    )


ShapeRule = Callable[[JobSetView, LintContext, dict[int, SliceShape]], Iterator[Finding]]
PlainRule = Callable[[JobSetView, LintContext], Iterator[Finding]]


def kueue_admission_rules(js: JobSetView, ctx: LintContext) -> Iterator[Finding]:
    """Kueue's JobSet webhook (it validates every JobSet, queued or not)."""
    return kueue_webhook_rules(js)


PLAIN_RULES: tuple[PlainRule, ...] = (
    webhook_rules,
    kueue_admission_rules,
    queue_rules,
    template_label_rules,
    priority_rules,
    covered_resource_rules,
    hotswap_rules,
    pod_rules,
)
# These need each replicatedJob's slice shape, which ``tpu_rules`` resolves first.
SHAPE_RULES: tuple[ShapeRule, ...] = (capacity_rules, exclusive_placement_rules, failure_policy_rules)


def run_rules(js: JobSetView, ctx: LintContext) -> list[Finding]:
    """Every rule, in a fixed order."""
    shapes: dict[int, SliceShape] = {}
    found = list(tpu_rules(js, ctx, shapes))
    for rule in SHAPE_RULES:
        found += rule(js, ctx, shapes)
    for plain in PLAIN_RULES:
        found += plain(js, ctx)
    return found
