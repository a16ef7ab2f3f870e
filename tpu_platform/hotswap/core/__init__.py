"""Pure decision core of the hotswap controller (no I/O, no Kubernetes imports).

Public API
----------
Build an immutable :class:`Snapshot` of the cluster, call :func:`decide`, apply the returned actions.

Snapshot (``tpu_platform.hotswap.core.model``; times are float epoch seconds)
    ``Snapshot(now, pools, nodes, jobsets=(), pods=())``
    ``NodePool(name, topology, expected_nodes, accelerator="tpu-v6e-slice")`` - one pool = one slice
    ``Node(name, pool, conditions=(), taints=(), labels={}, annotations={}, unschedulable=False,
    created=0.0, uid="", resource_version="")``
    ``Condition(type, status, last_transition, reason="")`` / ``Taint(key, effect="NoSchedule",
    value="", time_added=None)``
    ``JobSet(namespace, name, uid, priority, topology, slices=1, accelerator="tpu-v6e-slice",
    labels={}, annotations={}, restart_strategy="Recreate", max_restarts=0, restarts=0,
    disruption_ignores_max_restarts=False, suspended=False, finished=False, created=0.0,
    running_since=None, last_checkpoint=None, checkpoint_interval=None, rejection=None)``
    ``Pod(namespace, name, uid, jobset=None, jobset_uid="", job="", node=None, phase="Pending",
    priority=0, deletion_timestamp=None, nominated_node=None, unschedulable_since=None, gated=False,
    uses_accelerator=True, created=0.0, started=None, rejection=None, terminations=())`` with
    ``Termination(container, exit_code, reason="", message="", finished=None)``; nodes also carry
    ``tpu_capacity`` / ``tpu_allocatable`` (chip/ICI signals, :mod:`.workload_signals`)

Decision
    ``decide(snapshot, settings=None) -> Decision`` with ``actions`` (ordered), ``pools``
    (:class:`PoolStatus` per pool: ``name, state`` (Healthy/Suspect/Unhealthy/Recovering),
    ``problems, bad_since, unhealthy_since, clean_since, recovers_at, flapping, declared_now,
    recovered_now, history``), ``preemptions`` (:class:`Preemption`: ``beneficiary, priority, victims,
    pools, slices_needed, work_lost, cleared_pools``), ``held`` (mass-outage guard), ``notes`` and
    ``rejected`` (:class:`Rejection` per JobSet or pod left alone because a value was refused, and with
    ``value_only`` per time refused on a node, pod or JobSet otherwise handled as usual) and
    ``suspects`` (pools with unconfirmed workload TPU-error reports).
    ``reconcile(snapshot, settings=None) -> tuple[Action, ...]`` is the short form.
    Deterministic, and idempotent: ``decide(apply_actions(s, decide(s).actions))`` has no actions.
    ``decide(snapshot, settings, memory=previous.memory)``: the optional, immutable :class:`PoolMemory`
    (``Decision.memory``, one :class:`PoolRecord` per pool: declared, unhealthy_since, reason,
    clean_since, history, nodes) stands in for node state when all of a pool's nodes were recreated.
    Idempotent with it too: ``decide(apply_actions(s, d.actions), memory=d.memory)`` has no actions.

Actions (``tpu_platform.hotswap.core.actions``)
    ``PatchNode(node, pool, add_taints, remove_taints, set_annotations, remove_annotations, reason)``,
    ``AnnotateJobSet(namespace, name, uid, annotations, reason)``,
    ``EvictPod(namespace, name, uid, cause, node, pool, jobset, reason)`` (policy/v1 Eviction),
    ``ForceDeletePod(namespace, name, uid, node, jobset, reason)`` (grace period 0),
    ``EmitEvent(kind, namespace, name, uid, type, reason, message, action)``.

Settings
    :class:`Settings` (frozen; every threshold), :func:`settings_from_mapping`,
    :func:`settings_from_yaml`, :func:`settings_from_json`, :func:`settings_schema`;
    errors raise :class:`SettingsError` naming the field.

Helpers
    :func:`apply_actions` (reference semantics of actions on a snapshot), :func:`is_managed`,
    :func:`is_preemptible`,
    :func:`select_victims`, :func:`work_lost_seconds`.
"""

from tpu_platform.hotswap.core import constants
from tpu_platform.hotswap.core.actions import (
    Action,
    AnnotateJobSet,
    EmitEvent,
    EvictionCause,
    EvictPod,
    ForceDeletePod,
    PatchNode,
    ResetVm,
    action_sort_key,
)
from tpu_platform.hotswap.core.apply import apply_actions
from tpu_platform.hotswap.core.corroboration import GONE, NOT_RUNNING, confirmed_down, suspect_since, suspects
from tpu_platform.hotswap.core.health import (
    PoolMemory,
    PoolRecord,
    PoolState,
    PoolStatus,
    Problem,
    node_dead_since,
    node_key,
)
from tpu_platform.hotswap.core.inputs import Rejection
from tpu_platform.hotswap.core.model import (
    Condition,
    Instance,
    JobSet,
    Node,
    NodePool,
    Pod,
    Snapshot,
    Taint,
    Termination,
    is_managed,
    is_preemptible,
    topology_chips,
)
from tpu_platform.hotswap.core.preemption import Preemption
from tpu_platform.hotswap.core.reconcile import Decision, decide, reconcile
from tpu_platform.hotswap.core.settings import (
    Settings,
    SettingsError,
    settings_from_json,
    settings_from_mapping,
    settings_from_yaml,
    settings_schema,
)
from tpu_platform.hotswap.core.timeutil import format_time, parse_time
from tpu_platform.hotswap.core.victims import Candidate, select_victims, work_lost_seconds

__all__ = [
    "GONE",
    "NOT_RUNNING",
    "Action",
    "AnnotateJobSet",
    "Candidate",
    "Condition",
    "Decision",
    "EmitEvent",
    "EvictPod",
    "EvictionCause",
    "ForceDeletePod",
    "Instance",
    "JobSet",
    "Node",
    "NodePool",
    "PatchNode",
    "Pod",
    "PoolMemory",
    "PoolRecord",
    "PoolState",
    "PoolStatus",
    "Preemption",
    "Problem",
    "Rejection",
    "ResetVm",
    "Settings",
    "SettingsError",
    "Snapshot",
    "Taint",
    "Termination",
    "action_sort_key",
    "apply_actions",
    "confirmed_down",
    "constants",
    "decide",
    "format_time",
    "is_managed",
    "is_preemptible",
    "node_dead_since",
    "node_key",
    "parse_time",
    "reconcile",
    "select_victims",
    "settings_from_json",
    "settings_from_mapping",
    "settings_from_yaml",
    "settings_schema",
    "suspect_since",
    "suspects",
    "topology_chips",
    "work_lost_seconds",
]
