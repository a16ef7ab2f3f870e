"""Pure decision core of the hotswap controller (no I/O, no Kubernetes imports).

Build an immutable :class:`Snapshot` of the cluster (``model``; times are float epoch seconds), call
:func:`decide` (``reconcile``), apply the returned :class:`Decision`'s ``actions`` (``actions``:
:class:`PatchNode`, :class:`AnnotateJobSet`, :class:`EvictPod`, :class:`ForceDeletePod`,
:class:`ResetVm`, :class:`EmitEvent`, in :func:`action_sort_key` order). Deterministic and
idempotent: ``decide(apply_actions(s, d.actions), memory=d.memory)`` has no actions, where the
optional :class:`PoolMemory` carries a pool's state across the recreation of all its nodes.

A :class:`Decision` also holds each pool's :class:`PoolStatus`, the :class:`Preemption` records,
``held`` (the mass-outage guard), ``notes``, ``rejected`` (a :class:`Rejection` per object or value
refused) and ``suspects`` (pools with unconfirmed workload TPU-error reports). Thresholds are
:class:`Settings` (loaded by :func:`settings_from_mapping` and friends, errors as
:class:`SettingsError`).

One module per idea: ``model``, ``constants``, ``times``, ``screening``, ``index``, ``ownership``,
``pool_health``, ``workload_signals``, ``tenancy``, ``vm_evidence``, ``failfast``, ``maintenance``,
``preemption``, ``actions``, ``reconcile``, ``settings``, ``apply``. What each decides and why:
docs/hotswap-core.md.
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
from tpu_platform.hotswap.core.constants import Taint
from tpu_platform.hotswap.core.model import (
    Condition,
    Instance,
    JobSet,
    Node,
    NodePool,
    Pod,
    Rejection,
    Snapshot,
    Termination,
    is_managed,
    is_preemptible,
    topology_chips,
)
from tpu_platform.hotswap.core.pool_health import (
    PoolMemory,
    PoolRecord,
    PoolState,
    PoolStatus,
    Problem,
    node_dead_since,
    node_key,
)
from tpu_platform.hotswap.core.preemption import Candidate, Preemption, select_victims, work_lost_seconds
from tpu_platform.hotswap.core.reconcile import Decision, decide, reconcile
from tpu_platform.hotswap.core.settings import (
    Settings,
    SettingsError,
    settings_from_json,
    settings_from_mapping,
    settings_from_yaml,
    settings_schema,
)
from tpu_platform.hotswap.core.times import format_time, parse_time
from tpu_platform.hotswap.core.vm_evidence import GONE, NOT_RUNNING, confirmed_down, suspect_since, suspects

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
