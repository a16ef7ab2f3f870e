"""Findings and the catalogue of rule ids (stable: scripts, tests and docs refer to them)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

Severity = Literal["error", "warning", "info"]
SEVERITY_ORDER: dict[Severity, int] = {"error": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class Rule:
    """A rule id, its usual severity and a one-line summary of what it catches."""

    id: str
    severity: Severity
    summary: str


@dataclass(frozen=True)
class Finding:
    """One thing wrong (or worth knowing) about one manifest."""

    rule: str
    severity: Severity
    path: str
    message: str
    fix: str = ""
    document: int = 0
    name: str = ""
    line: int = 0
    column: int = 0
    kind: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


_RULES = (
    Rule("input-empty", "error", "the input has no document to lint"),
    Rule("input-binary", "error", "the input is binary or not UTF-8 text"),
    Rule("yaml-invalid", "error", "the file is not valid YAML"),
    Rule(
        "not-a-manifest",
        "error",
        "a document is not a Kubernetes object (a mapping with apiVersion and kind)",
    ),
    Rule(
        "yaml-value", "error", "a value JSON and the API server cannot carry (non-string key, int64 overflow)"
    ),
    Rule("crds-unavailable", "error", "the CRD schemas to check against cannot be found"),
    Rule("jobset-schema", "error", "the JobSet does not match the JobSet CRD"),
    Rule("object-schema", "error", "a Kueue object or built-in kind does not match its schema"),
    Rule("api-version", "error", "a removed or deprecated API version; the message names the replacement"),
    Rule("unknown-field", "error", "a field no version of the kind has; the message says what to use"),
    Rule("count-invalid", "error", "a negative or out-of-range count or quantity"),
    Rule(
        "cluster-queue-no-namespaces", "error", "a ClusterQueue without namespaceSelector admits no namespace"
    ),
    Rule("local-queue-target", "error", "a LocalQueue names a ClusterQueue that does not exist"),
    Rule("cluster-queue-flavor", "error", "a ClusterQueue names a ResourceFlavor that does not exist"),
    Rule("queue-quota-together", "warning", "JobSets of one run need more than their queue can ever lend"),
    Rule("kind-not-linted", "info", "a kind the linter has no rules for; only its schema is checked"),
    Rule("jobset-webhook", "error", "JobSet's admission webhook rejects the JobSet"),
    Rule("kueue-webhook", "error", "Kueue's JobSet webhook rejects the JobSet"),
    Rule(
        "queue-label-missing", "error", "no kueue.x-k8s.io/queue-name label: Kueue does not manage the JobSet"
    ),
    Rule("queue-as-annotation", "error", "a Kueue key is an annotation; Kueue reads labels only"),
    Rule("queue-not-found", "error", "the LocalQueue does not exist in the JobSet's namespace"),
    Rule("multikueue-managed-by", "error", "a JobSet for a fleet's queue is managed by another controller"),
    Rule("kueue-label-on-template", "warning", "Kueue labels on a Job or pod template are ignored"),
    Rule("queue-resources", "error", "a requested resource is not covered by the ClusterQueue"),
    Rule("queue-flavor-shape", "error", "no flavor of the queue provides the selected slice shape"),
    Rule(
        "queue-never-admitted",
        "error",
        "the JobSet needs more chips than the queue can ever hold (nominal plus what it may borrow)",
    ),
    Rule("queue-quota", "warning", "the JobSet needs more chips than the queue's nominal quota"),
    Rule("workload-priority-missing", "warning", "no kueue.x-k8s.io/priority-class label on the JobSet"),
    Rule("workload-priority-unknown", "error", "the WorkloadPriorityClass does not exist"),
    Rule("pod-priority-missing", "warning", "pods have no priorityClassName"),
    Rule("pod-priority-unknown", "error", "the pods' PriorityClass does not exist"),
    Rule("priority-not-granted", "error", "the stack does not grant this priority to the namespace's team"),
    Rule("priority-mismatch", "warning", "workload priority and pod priority disagree"),
    Rule("tpu-node-selector", "error", "TPU pods without both TPU node selectors"),
    Rule("tpu-accelerator", "error", "the accelerator is not tpu-v6e-slice"),
    Rule("tpu-topology", "error", "the topology is not a v6e slice shape the cluster has"),
    Rule("tpu-chips", "error", "google.com/tpu per pod differs from the chips per VM of the slice"),
    Rule("tpu-pods-per-slice", "error", "parallelism/completions differ from the VMs of the slice"),
    Rule("tpu-capacity", "error", "more replicas than the cluster has slices of that shape"),
    Rule("exclusive-placement", "error", "a multi-host slice job without one-Job-per-node-pool placement"),
    Rule("max-restarts", "warning", "no failurePolicy.maxRestarts: the first failure ends the JobSet"),
    Rule("preemption-burns-restarts", "warning", "preemptions count against maxRestarts"),
    Rule("pod-failure-policy-restart-policy", "error", "podFailurePolicy needs restartPolicy: Never"),
    Rule("blocking-recreate", "info", "BlockingRecreate waits for pods stuck Terminating on a dead node"),
    Rule("backoff-limit", "warning", "a multi-host slice job retries single pods instead of failing"),
    Rule("hotswap-opt-in", "warning", "the JobSet does not opt in to the hotswap controller"),
    Rule("host-network-dns", "warning", "hostNetwork without dnsPolicy: ClusterFirstWithHostNet"),
    Rule("container-image", "error", "a container image is not a valid image reference"),
    Rule("placeholder-value", "warning", "a command, argument or env value still holds a <PLACEHOLDER>"),
)

RULES: dict[str, Rule] = {rule.id: rule for rule in _RULES}


def finding(rule: str, path: str, message: str, fix: str = "", severity: Severity | None = None) -> Finding:
    """A finding of ``rule`` at its registered severity unless told otherwise."""
    return Finding(rule, severity or RULES[rule].severity, path, message, fix)
