"""What the linter needs to know about a cluster, independent of how the stack is modelled.

``LintContext`` is plain data so rules stay pure and tests build one inline. A stack can
produce it (``context_from_stack``), and so can a small YAML/JSON file for the CLI.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from .. import catalog
from ..catalog import SliceShape
from ..constants import HOTSWAP_OPT_IN_LABEL, HOTSWAP_OPT_IN_VALUE
from ..kueue.entitlements import Entitlements
from ..yaml_errors import yaml_error_line

HOTSWAP_LABEL = (HOTSWAP_OPT_IN_LABEL, HOTSWAP_OPT_IN_VALUE)


@dataclass(frozen=True)
class FlavorQuota:
    """One ResourceFlavor of a ClusterQueue: the slice shape it selects and its ``google.com/tpu`` quota."""

    name: str
    shape: SliceShape
    chips: int | None = None
    ceiling_chips: int | None = None
    """The most chips the queue can ever hold in this flavor (nominal plus what it may borrow from
    its cohort); None when unknown."""


@dataclass(frozen=True)
class QueueTarget:
    """Where a LocalQueue sends workloads: its ClusterQueue and what that queue can admit.

    ``covered_resources`` is None when unknown; Kueue never admits a workload that requests
    a resource its ClusterQueue does not cover.
    """

    cluster_queue: str
    flavors: tuple[FlavorQuota, ...] = ()
    covered_resources: frozenset[str] | None = None
    cohort: str | None = None
    multikueue: bool = False  # a fleet manager's queue: MultiKueue dispatches to a worker

    @property
    def shapes(self) -> tuple[SliceShape, ...]:
        return tuple(dict.fromkeys(f.shape for f in self.flavors))

    def quota_chips(self, shape: SliceShape) -> int | None:
        """Nominal chips for ``shape`` across the queue's flavors; None when any is unknown."""
        quotas = [f.chips for f in self.flavors if f.shape == shape]
        if not quotas or any(q is None for q in quotas):
            return None
        return sum(q for q in quotas if q is not None)

    def ceiling_chips(self, shape: SliceShape) -> int | None:
        """The most chips for ``shape`` the queue can ever admit at once; None when any is unknown."""
        ceilings = [f.ceiling_chips for f in self.flavors if f.shape == shape]
        if not ceilings or any(c is None for c in ceilings):
            return None
        return sum(c for c in ceilings if c is not None)


JOBSET_DEFAULT_GATES: Mapping[str, bool] = {"RestartJob": False, "InPlaceRestart": False}
"""JobSet v0.12.0 ``defaultFeatureGates`` (``pkg/features/features.go``) for the gates a JobSet's spec
depends on: both Alpha, off by default. The platform installs JobSet's chart without changing them."""


@dataclass(frozen=True)
class LintContext:
    """Queues, priorities and TPU capacity a JobSet is checked against."""

    local_queues: Mapping[tuple[str, str], QueueTarget] = field(default_factory=dict)
    workload_priority_classes: Mapping[str, int] = field(default_factory=dict)
    priority_classes: Mapping[str, int] = field(default_factory=dict)
    cluster_slices: Mapping[SliceShape, int] = field(default_factory=dict)
    hotswap_label: tuple[str, str] = HOTSWAP_LABEL
    manage_jobs_without_queue_name: bool = False
    default_namespace: str = "default"
    jobset_gates: Mapping[str, bool] = field(default_factory=lambda: dict(JOBSET_DEFAULT_GATES))
    """The installed JobSet's feature gates (its webhook refuses the fields of gates that are off)."""
    entitlements: Entitlements | None = None
    """Which priorities each namespace may use (a stack's grants); None: not known, not checked."""

    def queues_in(self, namespace: str) -> list[str]:
        return sorted(name for ns, name in self.local_queues if ns == namespace)

    def namespaces_with_queue(self, name: str) -> list[str]:
        return sorted(ns for ns, queue in self.local_queues if queue == name)


class ContextError(ValueError):
    """A context file that cannot be read; the message names the file and the bad entries."""


class _FileModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, validate_by_name=True, extra="forbid", frozen=True)


class _Flavor(_FileModel):
    name: str
    topology: str
    multi_host: bool | None = None
    tpu_quota: int | None = Field(None, ge=0, description="nominalQuota of google.com/tpu, in chips")

    @field_validator("topology")
    @classmethod
    def _known(cls, value: str) -> str:
        catalog.lookup(value)
        return value


class _ClusterQueue(_FileModel):
    flavors: list[_Flavor] = Field(default_factory=list)
    covered_resources: list[str] | None = None
    cohort: str | None = None


class _LocalQueue(_FileModel):
    name: str
    namespace: str = "default"
    cluster_queue: str


class _Pool(_FileModel):
    topology: str
    multi_host: bool | None = None
    count: int = Field(1, ge=0)


class _Label(_FileModel):
    key: str
    value: str


class _ContextFile(_FileModel):
    quota_check_strategy: Literal["BlockUndeclared", "IgnoreUndeclared"] = "BlockUndeclared"
    local_queues: list[_LocalQueue] = Field(default_factory=list)
    cluster_queues: dict[str, _ClusterQueue] = Field(default_factory=dict)
    workload_priority_classes: dict[str, int] = Field(default_factory=dict)
    priority_classes: dict[str, int] = Field(default_factory=dict)
    slice_pools: list[_Pool] = Field(default_factory=list)
    hotswap_label: _Label = _Label(key=HOTSWAP_LABEL[0], value=HOTSWAP_LABEL[1])
    manage_jobs_without_queue_name: bool = False
    default_namespace: str = "default"


def _shape(topology: str, multi_host: bool | None) -> SliceShape:
    return catalog.lookup(topology, multi_host)


def context_from_data(data: Mapping[str, Any], source: str = "context") -> LintContext:
    """Build a context from the parsed file format (see docs/linter.md)."""
    try:
        parsed = _ContextFile.model_validate(dict(data))
        missing = sorted({q.cluster_queue for q in parsed.local_queues} - set(parsed.cluster_queues))
        if missing:
            raise ContextError(
                f"{source}: localQueues point at undefined clusterQueues: {', '.join(missing)}"
            )
        targets = {
            name: QueueTarget(
                cluster_queue=name,
                flavors=tuple(
                    FlavorQuota(f.name, _shape(f.topology, f.multi_host), f.tpu_quota) for f in cq.flavors
                ),
                covered_resources=(
                    frozenset(cq.covered_resources)
                    if cq.covered_resources is not None and parsed.quota_check_strategy == "BlockUndeclared"
                    else None
                ),
                cohort=cq.cohort,
            )
            for name, cq in parsed.cluster_queues.items()
        }
        slices: dict[SliceShape, int] = {}
        for pool in parsed.slice_pools:
            shape = _shape(pool.topology, pool.multi_host)
            slices[shape] = slices.get(shape, 0) + pool.count
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '<top>'}: {e['msg']}"
            for e in err.errors(include_url=False)
        )
        raise ContextError(f"{source}: {problems}") from err
    except catalog.UnsupportedSliceError as err:
        raise ContextError(f"{source}: {err}") from err
    return LintContext(
        local_queues={(q.namespace, q.name): targets[q.cluster_queue] for q in parsed.local_queues},
        workload_priority_classes=dict(parsed.workload_priority_classes),
        priority_classes=dict(parsed.priority_classes),
        cluster_slices=slices,
        hotswap_label=(parsed.hotswap_label.key, parsed.hotswap_label.value),
        manage_jobs_without_queue_name=parsed.manage_jobs_without_queue_name,
        default_namespace=parsed.default_namespace,
    )


def load_context(path: Path) -> LintContext:
    """Read a context from YAML or JSON."""
    try:
        text = path.read_text()
    except OSError as err:
        raise ContextError(f"{path}: {err.strerror or err}") from err
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except json.JSONDecodeError as err:
        raise ContextError(f"{path}:{err.lineno}:{err.colno}: not valid JSON: {err.msg}") from err
    except yaml.YAMLError as err:
        raise ContextError(yaml_error_line(err, str(path))) from err
    if not isinstance(data, dict):
        raise ContextError(f"{path}: a context file is a mapping (localQueues, clusterQueues, ...)")
    return context_from_data(data, str(path))


class _FlavorView(Protocol):
    @property
    def topology(self) -> str: ...
    @property
    def multi_host(self) -> bool: ...


class _QueueView(Protocol):
    @property
    def cluster_queue(self) -> str: ...
    @property
    def cohort(self) -> str | None: ...
    @property
    def flavors(self) -> tuple[str, ...]: ...


class _DirectoryView(Protocol):
    """What ``tpu_platform.kueue.queue_directory`` returns, as far as the linter reads it."""

    @property
    def local_queues(self) -> Mapping[tuple[str, str], _QueueView]: ...
    @property
    def priorities(self) -> Mapping[str, int]: ...
    @property
    def flavors(self) -> Mapping[str, _FlavorView]: ...


def context_from_queue_directory(
    directory: _DirectoryView,
    cluster_slices: Mapping[SliceShape, int],
    *,
    manage_jobs_without_queue_name: bool = False,
) -> LintContext:
    """A context from a stack's queue directory; quotas and covered resources stay unknown.

    The platform renders every priority both as a PriorityClass and as a
    WorkloadPriorityClass with the same name and value.
    """
    local_queues = {
        key: QueueTarget(
            cluster_queue=queue.cluster_queue,
            flavors=tuple(
                FlavorQuota(
                    name, _shape(directory.flavors[name].topology, directory.flavors[name].multi_host)
                )
                for name in queue.flavors
                if name in directory.flavors
            ),
            cohort=queue.cohort,
        )
        for key, queue in directory.local_queues.items()
    }
    return LintContext(
        local_queues=local_queues,
        workload_priority_classes=dict(directory.priorities),
        priority_classes=dict(directory.priorities),
        cluster_slices=dict(cluster_slices),
        manage_jobs_without_queue_name=manage_jobs_without_queue_name,
    )
