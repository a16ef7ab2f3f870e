"""The metric names the rules and the dashboard read, each from its exporter's source.

- Kueue v0.19.2, ``pkg/metrics/metrics.go`` (Subsystem ``kueue``, ``pkg/constants``): gauges
  ``kueue_pending_workloads{cluster_queue,status}`` (status ``active``/``inadmissible``),
  ``kueue_cluster_queue_resource_usage`` and ``kueue_cluster_queue_nominal_quota``
  ``{cohort,cluster_queue,flavor,resource}`` (exported with ``enableClusterQueueResources``),
  the histogram ``kueue_admission_wait_time_seconds{cluster_queue,priority_class}`` (``priority_class``
  is the Workload's ``spec.priorityClassRef.name``, ``pkg/workload/patching/patching.go``) and the
  counter ``kueue_preempted_workloads_total{preempting_cluster_queue,reason}``. Every one also carries
  ``replica_role`` (leader, follower or standalone), so queries take ``max`` across replicas.
- JobSet v0.12.0, ``pkg/metrics/metrics.go``: ``jobset_failed_total`` and ``jobset_completed_total``
  ``{jobset_name,namespace}`` (the ``namespace`` label collides with the target's; Prometheus keeps the
  target's and renames the metric's to ``exported_namespace``).
- The hotswap controller, ``tpu_platform/hotswap/adapter/metrics.py`` (prometheus_client appends
  ``_total`` to counters).
"""

from __future__ import annotations

from typing import Final

from ..constants import TPU_RESOURCE

TPU: Final = TPU_RESOURCE

KUEUE_PENDING: Final = "kueue_pending_workloads"
KUEUE_USAGE: Final = "kueue_cluster_queue_resource_usage"
KUEUE_NOMINAL: Final = "kueue_cluster_queue_nominal_quota"
KUEUE_BORROWING_LIMIT: Final = "kueue_cluster_queue_borrowing_limit"
KUEUE_ADMISSION_WAIT: Final = "kueue_admission_wait_time_seconds"
KUEUE_PREEMPTED: Final = "kueue_preempted_workloads_total"

JOBSET_FAILED: Final = "jobset_failed_total"
JOBSET_COMPLETED: Final = "jobset_completed_total"

HOTSWAP_IS_LEADER: Final = "hotswap_is_leader"
HOTSWAP_UNHEALTHY_POOLS: Final = "hotswap_unhealthy_pools"
HOTSWAP_DETECTIONS: Final = "hotswap_unhealthy_pool_detections_total"
HOTSWAP_RECOVERIES: Final = "hotswap_pool_recoveries_total"
HOTSWAP_RECOVERY_SECONDS: Final = "hotswap_pool_recovery_seconds"
HOTSWAP_PREEMPTIONS: Final = "hotswap_preemptions_total"
HOTSWAP_PREEMPTED_SLICES: Final = "hotswap_preempted_slices_total"
HOTSWAP_RECONCILES: Final = "hotswap_reconciles_total"
HOTSWAP_API_REQUESTS: Final = "hotswap_api_requests_total"
HOTSWAP_HOLD: Final = "hotswap_mass_outage_hold"

API_FAILURE_CODES: Final = "0|401|403|429|5.."
"""Failures of the controller's API requests: no reply, auth, throttling, server errors (404 and the
409/422 conflicts are the normal outcome of racing the cluster)."""
