"""Chip/ICI failure signals as the adapter reads them: container terminations and TPU allocatable.

Fields as Kubernetes v1 defines them (kubernetes client 37.0.2 ``V1ContainerStateTerminated``:
``exitCode``, ``reason``, ``message``, ``finishedAt``; ``V1NodeStatus``: ``capacity``,
``allocatable``). A termination message is written by the workload, so every value is bounded.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.hotswap.hotswap_fakes import node_obj, pod_obj
from tpu_platform.hotswap.adapter.convert import node_from_api, pod_from_api
from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.workload_signals import MAX_MESSAGE_CHARS, MAX_TERMINATIONS

CHIP = "Detected failure SLICE_FAILURE_CHIP_DRIVER_ERROR in session"


def failed_pod(statuses: list[Any]) -> dict[str, Any]:
    obj = pod_obj("w-0", "train", job="train-slice-0", node="p-n0", priority=100, phase="Failed")
    obj["spec"]["containers"] = [{"name": "trainer", "resources": {"limits": {k.TPU_RESOURCE: "4"}}}]
    obj["status"]["containerStatuses"] = statuses
    return obj


def terminated(code: Any, message: Any = CHIP, *, last: bool = False) -> dict[str, Any]:
    state = {
        "terminated": {
            "exitCode": code,
            "reason": "Error",
            "message": message,
            "finishedAt": "2030-01-01T00:00:05Z",
        }
    }
    return {"name": "trainer", "lastState" if last else "state": state}


def test_a_failed_container_becomes_a_termination_and_a_clean_exit_does_not() -> None:
    pod = pod_from_api(failed_pod([terminated(1), {**terminated(0), "name": "sidecar"}]))
    assert len(pod.terminations) == 1
    t = pod.terminations[0]
    assert (t.container, t.exit_code, t.reason, t.message) == ("trainer", 1, "Error", CHIP)
    assert t.finished is not None and pod.uses_accelerator


def test_a_restarted_container_reports_through_last_state() -> None:
    pod = pod_from_api(failed_pod([terminated(134, last=True)]))
    assert [t.exit_code for t in pod.terminations] == [134]


def test_tpu_capacity_and_allocatable_are_read_bounded() -> None:
    obj = node_obj("p-n0", "p")
    obj["status"]["allocatable"] = {k.TPU_RESOURCE: "2"}
    rec = node_from_api(obj)
    assert rec is not None and (rec.node.tpu_capacity, rec.node.tpu_allocatable) == (4, 2)
    obj["status"]["allocatable"] = {k.TPU_RESOURCE: "1e9"}
    rec = node_from_api(obj)
    assert rec is not None and rec.node.tpu_allocatable is None


junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=50),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(
    statuses=st.lists(
        st.one_of(
            junk,
            st.builds(
                terminated, st.one_of(st.integers(), st.text(max_size=12), junk), st.one_of(st.text(), junk)
            ),
        ),
        max_size=20,
    ),
    huge=st.booleans(),
)
def test_hostile_statuses_never_raise_and_stay_bounded(statuses: list[Any], huge: bool) -> None:
    if huge:
        statuses.append(terminated(1, "x" * 100_000 + CHIP))
    pod = pod_from_api(failed_pod(statuses))
    assert len(pod.terminations) <= MAX_TERMINATIONS
    for t in pod.terminations:
        assert t.exit_code != 0 and -(2**31) <= t.exit_code < 2**31
        assert len(t.message) <= MAX_MESSAGE_CHARS and isinstance(t.reason, str)
