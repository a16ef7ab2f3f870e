"""The TPU rules: shape, chips per pod and pods per slice, the cluster's capacity and the queue's
quota (nominal, and what it can ever hold), and the resources the queue covers.

:mod:`tpu_platform.lint.rules` runs them with the other rules.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from .. import catalog
from ..catalog import ACCELERATOR, SliceShape
from ..constants import LABEL_ACCELERATOR, LABEL_TOPOLOGY, QUEUE_LABEL, TPU_RESOURCE
from ..schema.structural import join
from .context import LintContext, QueueTarget
from .findings import Finding, finding
from .jobset import JobSetView, ReplicatedJob, whole_number


def queue_target(js: JobSetView, ctx: LintContext) -> QueueTarget | None:
    """Where the JobSet's queue label leads, if anywhere."""
    queue = js.labels.get(QUEUE_LABEL)
    return ctx.local_queues.get((js.namespace, str(queue))) if queue is not None else None


# --- TPU shape, capacity and quota ---------------------------------------------------------------


def _shape_for(rj: ReplicatedJob, topology: str, ctx: LintContext) -> SliceShape:
    """The catalog shape meant by a topology, telling the 2x4 forms apart by chips per pod."""
    forms = [s for s in catalog.all_shapes() if s.topology == topology]
    in_cluster = [s for s in forms if ctx.cluster_slices.get(s)]
    pool = in_cluster or forms
    chips = rj.tpu_limit
    matching = [s for s in pool if s.chips_per_vm == chips]
    return (matching or pool)[0]


def _cluster_shapes(ctx: LintContext) -> str:
    have = [f"{s.topology} ({s.vms} VMs) x{n}" for s, n in ctx.cluster_slices.items() if n]
    return ", ".join(have) or "none"


def tpu_rules(js: JobSetView, ctx: LintContext, shapes: dict[int, SliceShape]) -> Iterator[Finding]:
    """Per replicatedJob: node selectors, chips, pods per slice; fills ``shapes`` for later rules."""
    target = queue_target(js, ctx)
    for rj in js.replicated_jobs:
        if not rj.wants_tpu:
            continue
        accelerator, accel_path = rj.node_selection(LABEL_ACCELERATOR)
        topology, topo_path = rj.node_selection(LABEL_TOPOLOGY)
        missing = [k for k, v in ((LABEL_ACCELERATOR, accelerator), (LABEL_TOPOLOGY, topology)) if v is None]
        if missing:
            yield finding(
                "tpu-node-selector",
                f"{rj.pod_path}.nodeSelector",
                f"replicatedJob {rj.name!r} uses TPUs but does not select {' and '.join(missing)}: GKE "
                "cannot place the pods on a slice of the intended shape",
                f"add `{LABEL_ACCELERATOR}: {ACCELERATOR}` and `{LABEL_TOPOLOGY}: <topology>` to "
                "nodeSelector",
            )
        if accelerator is not None and accelerator != ACCELERATOR:
            yield finding(
                "tpu-accelerator",
                accel_path,
                f"accelerator {accelerator!r}: this platform's TPU nodes are {ACCELERATOR!r}, so no node "
                "matches",
                f"use `{LABEL_ACCELERATOR}: {ACCELERATOR}`",
            )
        yield from _chip_requests(rj)
        if topology is None:
            continue
        if topology not in catalog.valid_topologies():
            yield finding(
                "tpu-topology",
                topo_path,
                f"TPU v6e has no {topology!r} slice",
                f"use one of {', '.join(catalog.valid_topologies())} that the cluster has "
                f"({_cluster_shapes(ctx)})",
            )
            continue
        shape = _shape_for(rj, topology, ctx)
        shapes[rj.index] = shape
        if not ctx.cluster_slices.get(shape):
            yield finding(
                "tpu-topology",
                topo_path,
                f"the cluster has no {shape.topology} ({shape.vms}-VM) slices: the pods stay Pending",
                f"pick a shape the cluster has: {_cluster_shapes(ctx)}",
            )
        if target is not None and shape not in target.shapes:
            offered = ", ".join(f"{f.name} ({f.shape.topology})" for f in target.flavors) or "none"
            yield finding(
                "queue-flavor-shape",
                topo_path,
                f"ClusterQueue {target.cluster_queue!r} has no flavor for {shape.topology} slices (flavors: "
                f"{offered}): Kueue never admits the JobSet",
                "select a topology the queue's flavors provide, or submit to a queue that has this shape",
            )
        chips = rj.tpu_limit
        if chips is not None and chips >= 0 and chips != shape.chips_per_vm:
            yield finding(
                "tpu-chips",
                f"{rj.pod_path}.containers",
                f"pods ask for {chips} google.com/tpu but a {shape.topology} node has {shape.chips_per_vm}: "
                + ("the pods never fit" if chips > shape.chips_per_vm else "the slice is left partly idle"),
                f"set limits `{TPU_RESOURCE}: {shape.chips_per_vm}` (one pod per VM takes all its chips)",
            )
        yield from _pods_per_slice(rj, shape)


def _chip_requests(rj: ReplicatedJob) -> Iterator[Finding]:
    containers = rj.containers()
    if rj.tpu_limit is None:
        yield finding(
            "tpu-chips",
            f"{rj.pod_path}.containers",
            f"replicatedJob {rj.name!r} selects TPU nodes but no container has a {TPU_RESOURCE} limit: "
            "the pods cannot use the chips (and do not count against TPU quota)",
            f"set resources.limits `{TPU_RESOURCE}: <chips per VM>` on the container that runs the program",
        )
    elif rj.tpu_limit < 0:
        yield finding(
            "tpu-chips",
            f"{rj.pod_path}.containers",
            f"{TPU_RESOURCE} limits must be whole numbers",
            f"write the chip count as an integer, e.g. `{TPU_RESOURCE}: 4`",
        )
    for c in containers:
        request, limit = c.requests.get(TPU_RESOURCE), c.limits.get(TPU_RESOURCE)
        if request is None:
            continue
        if limit is None or whole_number(request) != whole_number(limit):
            yield finding(
                "tpu-chips",
                join(f"{c.path}.resources.requests", TPU_RESOURCE),
                f"{TPU_RESOURCE} request {request} without an equal limit ({limit}): extended resources "
                "cannot be overcommitted, so the API server rejects the pods",
                "set the limit and drop the request, or make them equal",
            )


def _pods_per_slice(rj: ReplicatedJob, shape: SliceShape) -> Iterator[Finding]:
    for key, value in (("parallelism", rj.parallelism), ("completions", rj.completions)):
        if value != shape.vms:
            shown = "unset" if key not in rj.job_spec else value
            yield finding(
                "tpu-pods-per-slice",
                f"{rj.job_path}.{key}",
                f"{key} is {shown} but a {shape.topology} slice has {shape.vms} VMs: one pod per VM is "
                "needed for the slice to start",
                f"set parallelism and completions to {shape.vms}",
            )


def capacity_rules(js: JobSetView, ctx: LintContext, shapes: dict[int, SliceShape]) -> Iterator[Finding]:
    target = queue_target(js, ctx)
    slices: Counter[SliceShape] = Counter()
    chips: Counter[SliceShape] = Counter()
    first: dict[SliceShape, ReplicatedJob] = {}
    for rj in js.replicated_jobs:
        shape = shapes.get(rj.index)
        if shape is None:
            continue
        first.setdefault(shape, rj)
        slices[shape] += rj.replicas
        pods = min(rj.parallelism or 0, rj.completions or rj.parallelism or 0)
        chips[shape] += rj.replicas * pods * max(rj.tpu_limit or 0, 0)
    for shape, needed in slices.items():
        have = ctx.cluster_slices.get(shape, 0)
        path = f"{first[shape].path}.replicas"
        if have and needed > have:
            yield finding(
                "tpu-capacity",
                path,
                f"needs {needed} {shape.topology} slices at once but the cluster has {have}: the JobSet "
                "can never run all its replicas",
                f"use at most {have} replicas of {shape.topology}, or add slices to the stack",
            )
        quota = target.quota_chips(shape) if target is not None else None
        ceiling = target.ceiling_chips(shape) if target is not None else None
        if target is not None and quota is not None and ceiling is not None and chips[shape] > ceiling:
            lent = (
                f" + {ceiling - quota} it may borrow from cohort {target.cohort!r}" if ceiling > quota else ""
            )
            yield finding(
                "queue-never-admitted",
                path,
                f"needs {chips[shape]} chips of {shape.topology} but ClusterQueue {target.cluster_queue!r} "
                f"can ever hold {ceiling} (nominal {quota}{lent}): Kueue never admits it",
                f"use at most {ceiling} chips of {shape.topology} at once, or raise the queue's nominal "
                "quota or borrowingLimit in the stack",
            )
        elif target is not None and quota is not None and chips[shape] > quota:
            borrow = (
                f"it is admitted only if cohort {target.cohort!r} lends the rest"
                if target.cohort
                else "the queue has no cohort to borrow from, so it is never admitted"
            )
            yield finding(
                "queue-quota",
                path,
                f"needs {chips[shape]} chips of {shape.topology} but ClusterQueue "
                f"{target.cluster_queue!r} has a nominal quota of {quota}: {borrow}",
                "lower replicas or raise the queue's nominalQuota",
            )


def covered_resource_rules(js: JobSetView, ctx: LintContext) -> Iterator[Finding]:
    target = queue_target(js, ctx)
    if target is None or target.covered_resources is None:
        return
    wanted: dict[str, str] = {}
    for rj in js.replicated_jobs:
        for c in [*rj.containers(), *rj.containers(init=True)]:
            for kind, resources in (("limits", c.limits), ("requests", c.requests)):
                for name in resources:
                    wanted.setdefault(str(name), join(f"{c.path}.resources.{kind}", str(name)))
    for name, path in wanted.items():
        if name not in target.covered_resources:
            yield finding(
                "queue-resources",
                path,
                f"ClusterQueue {target.cluster_queue!r} does not cover {name!r} (it covers "
                f"{', '.join(sorted(target.covered_resources))}): Kueue never admits a workload that "
                "requests a resource its queue does not cover",
                f"drop the {name} request, or add {name} to the queue's coveredResources",
            )
