"""Arbitrary tenant-written strings and values, through conversion and ``decide``: never an exception.

Every JobSet and pod of a small cluster (one pool failing, a high-priority JobSet waiting, so every
rule runs) gets hypothesis-drawn annotations, labels, node selectors, replica counts, priorities
and owner references, including the keys the controller reads with hostile values.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from tests.hotswap.hotswap_fakes import jobset_obj, node_obj, pod_obj
from tpu_platform.hotswap.adapter.convert import (
    jobset_from_api,
    node_from_api,
    pod_from_api,
    pools_from_nodes,
    with_pods,
)
from tpu_platform.hotswap.adapter.rejections import report_rejections
from tpu_platform.hotswap.core import Settings, Snapshot, apply_actions, decide
from tpu_platform.hotswap.core import constants as k

NOW = 1_000_000.0
HIGH, LOW = 2_000_000, 1_000_000

JOBSET_KEYS = [
    k.PREEMPTIBLE_ANNOTATION,
    k.LAST_CHECKPOINT_ANNOTATION,
    k.CHECKPOINT_INTERVAL_ANNOTATION,
    k.PREEMPTED_FOR_ANNOTATION,
    k.PREEMPTED_AT_ANNOTATION,
    k.PREEMPTED_POOLS_ANNOTATION,
    k.PREEMPTION_COUNT_ANNOTATION,
    k.EXCLUSIVE_TOPOLOGY_ANNOTATION,
    k.OPT_IN_LABEL,
]
POD_LABELS = [k.JOBSET_NAME_LABEL, k.JOBSET_UID_LABEL, k.JOB_NAME_LABEL, k.LEGACY_JOB_NAME_LABEL]

hostile_text = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        [
            "NaN",
            "nan",
            "inf",
            "-inf",
            "1e309",
            "-1",
            "0",
            "false",
            "FALSE",
            "true",
            "9" * 400,
            "4" * 400 + "x4",
            "0x0",
            "4x4",
            "2100-01-01T00:00:00Z",
            "1970-01-01T00:00:00Z",
            "9999-12-31T23:59:59+14:00",
            "default/high",
            "default/low",
            "a,b,c,a",
            "",
            " ",
            "\x00",
        ]
    ),
)
json_value = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    hostile_text,
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@st.composite
def string_map(draw: st.DrawFn, keys: list[str]) -> dict[str, str]:
    known = draw(st.dictionaries(st.sampled_from(keys), hostile_text, max_size=len(keys)))
    extra = draw(st.dictionaries(st.text(max_size=20), hostile_text, max_size=3))
    return {**extra, **known}


@st.composite
def hostile_jobset(draw: st.DrawFn, name: str) -> dict[str, Any]:
    obj = jobset_obj(name)
    meta = obj["metadata"]
    if draw(st.booleans()):
        meta["annotations"].update(draw(string_map(JOBSET_KEYS)))
    if draw(st.booleans()):
        meta["labels"].update(draw(string_map(JOBSET_KEYS)))
    rj = obj["spec"]["replicatedJobs"][0]
    if draw(st.booleans()):
        rj["replicas"] = draw(json_value)
    pod_spec = rj["template"]["spec"]["template"]["spec"]
    if draw(st.booleans()):
        pod_spec["nodeSelector"][k.TPU_TOPOLOGY_LABEL] = draw(json_value)
    if draw(st.booleans()):
        pod_spec["nodeSelector"][k.TPU_ACCELERATOR_LABEL] = draw(json_value)
    if draw(st.booleans()):
        pod_spec["priority"] = draw(json_value)
    if draw(st.booleans()):
        obj["spec"]["failurePolicy"]["maxRestarts"] = draw(json_value)
    if draw(st.booleans()):
        obj["spec"]["replicatedJobs"].append(
            copy.deepcopy(rj) | {"name": "extra", "replicas": draw(json_value)}
        )
    if draw(st.booleans()):
        obj["spec"][draw(st.sampled_from(["failurePolicy", "replicatedJobs", "suspend"]))] = draw(json_value)
    return obj


@st.composite
def hostile_pod(draw: st.DrawFn, obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    if draw(st.booleans()):
        meta["labels"].update(draw(string_map(POD_LABELS)))
    if draw(st.booleans()):
        meta["ownerReferences"] = draw(
            st.one_of(
                json_value,
                st.lists(
                    st.fixed_dictionaries(
                        {"kind": st.sampled_from(["Job", "ReplicaSet", ""]), "name": json_value},
                        optional={
                            "controller": json_value,
                            "apiVersion": st.sampled_from(["batch/v1", "v1"]),
                        },
                    ),
                    max_size=2,
                ),
            )
        )
    if draw(st.booleans()):
        obj["spec"]["priority"] = draw(json_value)
    if draw(st.booleans()):
        obj["spec"]["nodeName"] = draw(json_value)
    return obj


@st.composite
def hostile_clusters(
    draw: st.DrawFn,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    nodes = [
        node_obj(f"{pool}-{i}", pool, ready="Unknown" if (pool, i) == ("a", 1) else "True", since=NOW - 9000)
        for pool in ("a", "b", "c")
        for i in range(4)
    ]
    jobsets = [draw(hostile_jobset(name)) for name in ("low", "mid", "high")]
    pods = []
    for name, pool, prio in (("low", "b", LOW), ("mid", "c", LOW + 1)):
        for i in range(4):
            raw = pod_obj(
                f"{name}-{i}",
                name,
                job=f"{name}-slice-0",
                node=f"{pool}-{i}",
                priority=prio,
                started=NOW - 3000,
            )
            pods.append(draw(hostile_pod(raw)))
    for i in range(4):
        raw = pod_obj(
            f"high-{i}",
            "high",
            job="high-slice-0",
            node=None,
            priority=HIGH,
            phase="Pending",
            unschedulable_since=NOW - 60,
        )
        pods.append(draw(hostile_pod(raw)))
    return nodes, jobsets, pods


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_clusters())
def test_arbitrary_tenant_values_never_raise_through_conversion_and_decide(
    case: tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    raw_nodes, raw_jobsets, raw_pods = case
    records = [r for r in (node_from_api(n) for n in raw_nodes) if r is not None]
    pods = tuple(pod_from_api(p) for p in raw_pods)
    jobsets = tuple(with_pods(jobset_from_api(js), pods) for js in raw_jobsets)
    snap = Snapshot(NOW, pools_from_nodes(records), tuple(r.node for r in records), jobsets, pods)
    for s in (Settings(), Settings(opt_out_namespaces=("default",))):
        d = report_rejections(decide(snap, s), CollectorRegistry())
        pool = d.pool("a")
        assert pool is not None and pool.declared_now, "the dead pool is declared whatever tenants write"
        after = apply_actions(snap, d.actions)
        decide(after, s, memory=d.memory)


any_number = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=True, allow_infinity=True),
)


@settings(max_examples=500, deadline=None)
@given(
    slices=any_number,
    priority=any_number,
    restarts=any_number,
    created=any_number,
    interval=any_number,
    topology=hostile_text,
    flag=st.one_of(st.none(), hostile_text),
)
def test_the_screens_fast_path_never_passes_what_the_precise_check_refuses(
    slices: Any, priority: Any, restarts: Any, created: Any, interval: Any, topology: str, flag: str | None
) -> None:
    """The cheap check run on every object each reconcile is at least as strict as the one that
    names the field."""
    from dataclasses import replace

    from tpu_platform.hotswap.core.model import JobSet, Pod
    from tpu_platform.hotswap.core.screening import (
        InputError,
        _check_jobset,
        _jobset_ok,
        _pod_ok,
        _pod_problem,
        pod_rejection,
    )

    annotations = {} if flag is None else {k.PREEMPTIBLE_ANNOTATION: flag}
    js = JobSet("ns", "j", "uid", priority=0, topology="4x4", annotations=annotations)
    js = replace(js, slices=slices, priority=priority, restarts=restarts, created=created, topology=topology)
    js = replace(js, checkpoint_interval=interval)
    try:
        _check_jobset(js)
        precise_ok = True
    except (InputError, TypeError):
        precise_ok = False
    if _jobset_ok(js):
        assert precise_ok
    pod = Pod("ns", "p", "uid", priority=priority, created=created, started=interval)
    if _pod_ok(pod):
        assert _pod_problem(pod) is None
    assert (_pod_problem(pod) is None) == (pod_rejection(pod) is None)
