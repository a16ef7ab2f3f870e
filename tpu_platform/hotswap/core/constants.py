"""Label, annotation and taint keys, and the taint record: the controller's contract with the cluster.

Everything the controller writes lives under the ``tpu-platform.dev/`` prefix so that its state can be
rebuilt from the cluster alone (a restarted or newly elected controller reads it back).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class Taint:
    """A node taint, as the controller reads and writes it (here so constants can name taints)."""

    key: str
    effect: str = "NoSchedule"
    value: str = ""
    time_added: float | None = None
    """Only NoExecute taints carry it in Kubernetes."""


DOMAIN: Final = "tpu-platform.dev"

# --- opt-in contract (on the JobSet object) --------------------------------------------------------
OPT_IN_LABEL: Final = f"{DOMAIN}/hotswap"
"""JobSet label; value :data:`OPT_IN_VALUE` makes the JobSet managed."""
OPT_IN_VALUE: Final = "enabled"
EXCLUSIVE_TOPOLOGY_ANNOTATION: Final = "alpha.jobset.sigs.k8s.io/exclusive-topology"
"""JobSet annotation; must equal :data:`NODEPOOL_LABEL` (one JobSet replica per node pool = slice)."""
PREEMPTIBLE_ANNOTATION: Final = f"{DOMAIN}/preemptible"
"""JobSet annotation; ``"false"`` keeps a managed JobSet from ever being chosen as a victim."""
LAST_CHECKPOINT_ANNOTATION: Final = f"{DOMAIN}/last-checkpoint-time"
"""JobSet annotation (RFC 3339 or epoch seconds) the workload may update after each checkpoint."""
CHECKPOINT_INTERVAL_ANNOTATION: Final = f"{DOMAIN}/checkpoint-interval-seconds"
"""JobSet annotation: the checkpoint cadence, used to estimate lost work without a checkpoint time."""

NODE_LEASE_NAMESPACE: Final = "kube-node-lease"
"""Where each kubelet renews a Lease named after its node (read only with ``lease_stale_seconds`` on)."""

# --- pool state, written identically on every node of a pool ---------------------------------------
UNHEALTHY_TAINT_KEY: Final = f"{DOMAIN}/unhealthy-pool"
UNHEALTHY_TAINT_VALUE: Final = "true"
UNHEALTHY_TAINT_EFFECT: Final = "NoSchedule"
UNHEALTHY_SINCE_ANNOTATION: Final = f"{DOMAIN}/unhealthy-since"
"""When the pool was declared unhealthy; present exactly while the pool is declared unhealthy."""
UNHEALTHY_REASON_ANNOTATION: Final = f"{DOMAIN}/unhealthy-reason"
SUSPECT_SINCE_ANNOTATION: Final = f"{DOMAIN}/suspect-since"
"""First sight of a problem that carries no timestamp of its own (a label, a missing node)."""
CLEAN_SINCE_ANNOTATION: Final = f"{DOMAIN}/clean-since"
"""First sight of an unhealthy pool looking clean again; the recovery clock starts here."""
UNHEALTHY_HISTORY_ANNOTATION: Final = f"{DOMAIN}/unhealthy-history"
"""Comma-separated times the pool was declared unhealthy (within the flap window): the flap counter."""

TPU_ERRORS_ANNOTATION: Final = f"{DOMAIN}/tpu-errors"
"""Workload reports of TPU errors on the pool within the signal window, ``<time>/<namespace>/<pod uid>``
space-separated: kept so a report outlives its pod (JobSet deletes a failed Job's pods at once)."""

TENANT_DECLARED_ANNOTATION: Final = f"{DOMAIN}/tenant-declared"
"""Tenants whose reports alone took the pool out of service, ``<time>/<tenant>`` space-separated
(``team:<name>`` or ``ns:<name>``), kept for ``workload_signal_team_window_seconds``: the per-team rate
limit and the preemption restriction read it (core/tenancy.py)."""

NODE_STATE_ANNOTATIONS: Final = (
    UNHEALTHY_SINCE_ANNOTATION,
    UNHEALTHY_REASON_ANNOTATION,
    SUSPECT_SINCE_ANNOTATION,
    CLEAN_SINCE_ANNOTATION,
    UNHEALTHY_HISTORY_ANNOTATION,
    TPU_ERRORS_ANNOTATION,
    TENANT_DECLARED_ANNOTATION,
)

# --- preemption record, written on the victim JobSet ----------------------------------------------
PREEMPTED_FOR_ANNOTATION: Final = f"{DOMAIN}/preempted-for"
"""``namespace/name`` of the JobSet the victim's slices were freed for."""
PREEMPTED_AT_ANNOTATION: Final = f"{DOMAIN}/preempted-at"
PREEMPTED_POOLS_ANNOTATION: Final = f"{DOMAIN}/preempted-pools"
"""Comma-separated node pools freed for the beneficiary (its reservation while they drain)."""
PREEMPTION_REASON_ANNOTATION: Final = f"{DOMAIN}/preemption-reason"
PREEMPTION_COUNT_ANNOTATION: Final = f"{DOMAIN}/preemption-count"

# --- maintenance checkpoint protocol, on a managed JobSet (core/maintenance.py) --------------------
CHECKPOINT_REQUESTED_AT_ANNOTATION: Final = f"{DOMAIN}/checkpoint-requested-at"
"""Written by the controller: it asks the workload for a checkpoint now (RFC 3339)."""
CHECKPOINT_DEADLINE_ANNOTATION: Final = f"{DOMAIN}/checkpoint-deadline"
"""Written by the controller: when the work is moved anyway, answered or not (RFC 3339)."""
CHECKPOINT_REQUEST_REASON_ANNOTATION: Final = f"{DOMAIN}/checkpoint-request-reason"
CHECKPOINT_REQUEST_POOLS_ANNOTATION: Final = f"{DOMAIN}/checkpoint-request-pools"
"""Comma-separated node pools whose scheduled maintenance prompted the request."""
CHECKPOINT_COMPLETED_AT_ANNOTATION: Final = f"{DOMAIN}/checkpoint-completed-at"
"""Written by the workload once the requested checkpoint is durable (RFC 3339 or epoch seconds): the
only annotation of the protocol a tenant may write."""
CHECKPOINT_REQUEST_ANNOTATIONS: Final = (
    CHECKPOINT_REQUESTED_AT_ANNOTATION,
    CHECKPOINT_DEADLINE_ANNOTATION,
    CHECKPOINT_REQUEST_REASON_ANNOTATION,
    CHECKPOINT_REQUEST_POOLS_ANNOTATION,
)
"""The controller's side of the protocol (admission keeps it the controller's)."""

# --- what GKE and Kubernetes put on nodes -----------------------------------------------------------
NODEPOOL_LABEL: Final = "cloud.google.com/gke-nodepool"
TPU_ACCELERATOR_LABEL: Final = "cloud.google.com/gke-tpu-accelerator"
TPU_TOPOLOGY_LABEL: Final = "cloud.google.com/gke-tpu-topology"
TPU_RESOURCE: Final = "google.com/tpu"
GKE_TPU_TAINT: Final = Taint(key=TPU_RESOURCE, effect="NoSchedule", value="present")
"""The taint GKE puts on every TPU node (only pods that tolerate it, i.e. TPU workloads, land there)."""
NOT_READY_TAINT: Final = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT: Final = "node.kubernetes.io/unreachable"
IMPENDING_TERMINATION_TAINT: Final = "cloud.google.com/impending-node-termination"
MAINTENANCE_WINDOW_TAINT: Final = "cloud.google.com/maintenance-window-started"
ACTIVE_MAINTENANCE_LABEL: Final = "cloud.google.com/active-node-maintenance"
ACTIVE_MAINTENANCE_VALUE: Final = "ONGOING"
SCHEDULED_MAINTENANCE_LABEL: Final = "cloud.google.com/scheduled-maintenance-time"

# --- JobSet labels on pods -------------------------------------------------------------------------
JOBSET_NAME_LABEL: Final = "jobset.sigs.k8s.io/jobset-name"
JOBSET_UID_LABEL: Final = "jobset.sigs.k8s.io/jobset-uid"
"""Set by the JobSet controller on its Jobs' pods (JobSet v0.12.0 ``api/jobset/v1alpha2/jobset_types.go``
``JobSetUIDKey``; ``pkg/controllers/jobset_controller.go`` ``labelAndAnnotateObject``)."""
JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"
LEGACY_JOB_NAME_LABEL: Final = "job-name"

# ``reportingController`` of the controller's Events (events.k8s.io/v1), read back by ``tpu-platform status``.
REPORTING_CONTROLLER: Final = f"{DOMAIN}/hotswap"
