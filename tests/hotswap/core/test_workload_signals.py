"""Chip and ICI failures with a live kubelet: workload reports and withdrawn chips.

Sources, as ``tpu_platform.hotswap.core.workload_signals`` cites them: the TPU runtime's
``SLICE_FAILURE_CHIP_DRIVER_ERROR`` (openxla/xla ``xla/pjrt/c/pjrt_c_api_callback_extension.h``),
the kubelet counting only healthy devices as allocatable (kubernetes/kubernetes
``pkg/kubelet/cm/devicemanager/manager.go``, ``GetCapacity``), a termination message capped at
4096 bytes (Kubernetes "Determine the Reason for Pod Failure").
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tpu_platform.hotswap.core import (
    EvictPod,
    ForceDeletePod,
    PatchNode,
    Settings,
    SettingsError,
    Snapshot,
    apply_actions,
    decide,
    settings_from_mapping,
)
from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.model import FAILED, Node, Pod, Termination
from tpu_platform.hotswap.core.workload_signals import (
    MAX_MESSAGE_CHARS,
    MAX_REPORTS,
    Report,
    format_reports,
    parse_reports,
    reports_tpu_error,
)
from tpu_platform.testing.hotswap_builders import make_jobset, make_nodes, make_pool, running_pods

T0 = 100_000.0
CHIP_ERROR = "E1201 session_master.cc] Detected failure SLICE_FAILURE_CHIP_DRIVER_ERROR in session 1f"
S = Settings(max_bad_node_fraction=1.0)
POOL = make_pool("p", "4x4")
OTHER = make_pool("q", "4x4")
NODES = make_nodes(POOL)
OTHER_NODES = make_nodes(OTHER)
JS_A = make_jobset("train", priority=100, namespace="team-a")
JS_B = make_jobset("serve", priority=50, namespace="team-b")


def crashed(pod: Pod, at: float, message: str = CHIP_ERROR, exit_code: int = 1) -> Pod:
    return replace(pod, phase=FAILED, terminations=(Termination("trainer", exit_code, "Error", message, at),))


def snapshot(now: float, pods: tuple[Pod, ...], nodes: tuple[Node, ...] = NODES) -> Snapshot:
    return Snapshot(now, (POOL, OTHER), (*nodes, *OTHER_NODES), (JS_A, JS_B), pods)


def a_pods() -> tuple[Pod, ...]:
    return running_pods(JS_A, [POOL], {"p": NODES})


def tainted(snap: Snapshot) -> bool:
    return all(n.has_taint(k.UNHEALTHY_TAINT_KEY) for n in snap.nodes if n.pool == "p")


def settle(snap: Snapshot, s: Settings = S) -> Snapshot:
    """Apply decisions at the snapshot's time until nothing is left to do."""
    for _ in range(5):
        d = decide(snap, s)
        if not d.actions:
            return snap
        snap = apply_actions(snap, d.actions)
    raise AssertionError("decisions did not settle")


def test_one_report_makes_the_pool_suspect_and_nothing_more() -> None:
    pods = a_pods()
    snap = snapshot(T0 + 1, (crashed(pods[0], T0), *pods[1:]))
    d = decide(snap, S)
    assert not any(isinstance(a, EvictPod | ForceDeletePod) for a in d.actions)
    assert not any(isinstance(a, PatchNode) and a.add_taints for a in d.actions)
    assert any("pool p suspect" in n and "team-a" in n for n in d.notes)
    later = apply_actions(snap, d.actions)
    assert all(k.TPU_ERRORS_ANNOTATION in n.annotations for n in later.nodes if n.pool == "p")
    assert decide(replace(later, now=T0 + 60), S).pool("p").state.value == "Healthy"  # type: ignore[union-attr]


def test_a_report_outlives_its_pod_and_a_second_pod_confirms_at_once() -> None:
    pods = a_pods()
    first = settle(snapshot(T0 + 0.2, (crashed(pods[0], T0), *pods[1:])))
    assert not tainted(first)
    # JobSet deletes the failed Job's pods; the coordinator (worker 0 of the slice) reports too.
    gone = replace(first, now=T0 + 1.2, pods=(crashed(pods[1], T0 + 1.0), *pods[2:]))
    d = decide(gone, S)
    status = d.pool("p")
    assert status is not None and status.declared_now and "TPU error reported by workloads" in status.reason
    evicted = {a.name for a in d.actions if isinstance(a, EvictPod)}
    assert evicted == {p.name for p in pods[2:]}, "the pods still running on the pool are failed fast"
    assert not any(isinstance(a, ForceDeletePod) for a in d.actions), "a live kubelet stops its pods"
    assert d.pool("q").state.value == "Healthy"  # type: ignore[union-attr]


def test_one_tenants_reports_never_take_a_pool_that_runs_another_tenants_work() -> None:
    a = a_pods()
    b = running_pods(JS_B, [POOL], {"p": NODES})[3]
    pods = (crashed(a[0], T0), crashed(a[1], T0 + 1), crashed(a[2], T0 + 2), b)
    for t in (T0 + 3, T0 + 60, T0 + 500):
        d = decide(snapshot(t, pods), S)
        assert not d.pool("p").declared, t  # type: ignore[union-attr]
        assert any("also runs namespace team-b" in n for n in d.notes)


def test_reports_of_two_tenants_confirm_each_other() -> None:
    a = a_pods()
    b = running_pods(JS_B, [POOL], {"p": NODES})[3]
    pods = (crashed(a[0], T0), *a[1:3], crashed(b, T0 + 1))
    d = decide(snapshot(T0 + 2, pods), S)
    assert d.pool("p").declared_now  # type: ignore[union-attr]


def test_withdrawn_chips_confirm_a_single_report_and_alone_are_only_a_suspicion() -> None:
    pods = a_pods()
    broken = (replace(NODES[0], tpu_capacity=4, tpu_allocatable=0), *NODES[1:])
    d = decide(snapshot(T0 + 1, (crashed(pods[1], T0), *pods[2:]), broken), S)
    assert d.pool("p").declared_now  # type: ignore[union-attr]
    # The kubelet marks every device Unhealthy while the device plugin is disconnected
    # (devicemanager markResourceUnhealthy): a plugin restart looks the same, so alone it moves nothing.
    alone = settle(snapshot(T0, pods, broken))
    for t in (T0 + S.unhealthy_after_seconds, T0 + 3600):
        d = decide(replace(alone, now=t), S)
        assert not d.pool("p").declared and d.suspects == ("p",)  # type: ignore[union-attr]
        assert any("alone no proof" in n for n in d.notes)
    restarting = (replace(NODES[0], tpu_capacity=0, tpu_allocatable=0), *NODES[1:])
    assert decide(snapshot(T0 + 600, pods, restarting), S).suspects == ()


@pytest.mark.parametrize(
    ("message", "exit_code"),
    [
        ("Traceback (most recent call last): ValueError", 1),
        (CHIP_ERROR, 0),
        ("x" * MAX_MESSAGE_CHARS + CHIP_ERROR, 1),
        ("", 137),
    ],
    ids=["other-crash", "exit-0", "beyond-4096-chars", "exit-code-only"],
)
def test_what_is_not_a_report(message: str, exit_code: int) -> None:
    pod = crashed(a_pods()[0], T0, message, exit_code)
    assert reports_tpu_error(pod, S.tpu_error_patterns) is None


def test_only_a_pod_holding_chips_with_a_clean_identity_reports() -> None:
    pod = crashed(a_pods()[0], T0)
    assert reports_tpu_error(pod, S.tpu_error_patterns) == T0
    assert reports_tpu_error(replace(pod, uses_accelerator=False), S.tpu_error_patterns) is None
    assert reports_tpu_error(replace(pod, uid="a/b"), S.tpu_error_patterns) is None
    assert reports_tpu_error(pod, ()) is None


def test_reports_expire_with_the_window_and_the_pool_recovers() -> None:
    pods = a_pods()
    declared = settle(snapshot(T0 + S.unhealthy_after_seconds, (crashed(pods[0], T0), crashed(pods[1], T0))))
    assert tainted(declared)
    still = settle(replace(declared, now=T0 + S.workload_signal_window_seconds - 1, pods=()))
    assert tainted(still), "a confirmed pool stays bad while its reports count"
    after = settle(replace(still, now=T0 + S.workload_signal_window_seconds + 1))
    assert all(k.TPU_ERRORS_ANNOTATION not in n.annotations for n in after.nodes)
    back = settle(replace(after, now=after.now + S.healthy_after_seconds))
    assert not tainted(back)


def test_off_means_no_effect() -> None:
    off = S.replace(workload_signals=False)
    pods = a_pods()
    snap = snapshot(T0 + 60, (crashed(pods[0], T0), crashed(pods[1], T0)))
    assert not decide(snap, off).pool("p").declared  # type: ignore[union-attr]


def test_settings_refuse_repetition_of_one() -> None:
    with pytest.raises(SettingsError) as err:
        settings_from_mapping({"workload_signal_repeats": 1})
    assert err.value.field == "workload_signal_repeats"
    with pytest.raises(SettingsError):
        settings_from_mapping({"tpu_error_patterns": ["x" * 300]})


texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=300)


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        texts,
        st.lists(st.sampled_from(["2030-01-01T00:00:00Z", "team-a", "u-1", "/", " ", "x"]), max_size=80).map(
            "".join
        ),
    )
)
def test_a_hostile_stored_value_never_crashes_and_stays_bounded(text: str) -> None:
    reports = parse_reports(text)
    assert len(reports) <= MAX_REPORTS
    assert parse_reports(format_reports(reports)) == sorted(reports)


reports = st.builds(
    Report,
    st.floats(T0 - 700, T0 + 10, allow_nan=False),
    st.sampled_from(["team-a", "team-b"]),
    st.sampled_from([f"u-{i}" for i in range(20)]),
)


@settings(max_examples=150, deadline=None)
@given(
    stored=st.lists(reports, max_size=25),
    crashes=st.lists(st.tuples(st.integers(0, 3), st.floats(T0 - 700, T0 + 10), texts, st.integers(-5, 300))),
    other_tenant=st.booleans(),
    withdrawn=st.booleans(),
)
@example(  # a stored time and its pod's time that differ below a microsecond kept reordering the list
    stored=[Report(99420.78127285051, "team-a", "u-0")],
    crashes=[(0, 99420.78127285051, "", 1)],
    other_tenant=False,
    withdrawn=False,
)
def test_decisions_are_idempotent_and_one_tenant_never_decides_alone_for_another(
    stored: list[Report],
    crashes: list[tuple[int, float, str, int]],
    other_tenant: bool,
    withdrawn: bool,
) -> None:
    pods = list(a_pods())
    for i, at, message, code in crashes:
        pods[i] = crashed(pods[i], at, message + (CHIP_ERROR if code % 2 else ""), code)
    b_pod = running_pods(JS_B, [POOL], {"p": NODES})[3]
    if other_tenant:
        pods[3] = b_pod
    only_a = [r for r in stored if r.namespace == "team-a"]
    nodes = tuple(
        replace(
            n,
            annotations={
                **n.annotations,
                k.TPU_ERRORS_ANNOTATION: format_reports(only_a if other_tenant else stored),
            },
        )
        for n in NODES
    )
    if withdrawn:
        nodes = (replace(nodes[0], tpu_capacity=4, tpu_allocatable=3), *nodes[1:])
    snap = snapshot(T0 + 20, tuple(pods), nodes)
    d = decide(snap, S)
    after = apply_actions(snap, d.actions)
    assert decide(after, S).actions == ()
    status = d.pool("p")
    assert status is not None
    if other_tenant and not withdrawn:
        assert not status.declared, "team-a's reports alone took a pool running team-b's work"
    for n in after.nodes:
        assert len(parse_reports(n.annotations.get(k.TPU_ERRORS_ANNOTATION))) <= MAX_REPORTS


def test_metrics_count_declarations_by_chip_signal_and_suspect_pools() -> None:
    from tpu_platform.hotswap.adapter.metrics import Metrics

    m = Metrics()
    pods = a_pods()
    m.chip_signals(decide(snapshot(T0 + 1, (crashed(pods[0], T0), *pods[1:])), S))
    assert m.value("hotswap_suspect_pools") == 1.0
    broken = (replace(NODES[0], tpu_capacity=4, tpu_allocatable=0), *NODES[1:])
    d = decide(snapshot(T0 + 1, (crashed(pods[1], T0), *pods[2:]), broken), S)
    m.chip_signals(d)
    assert m.value("hotswap_suspect_pools") == 0.0
    assert m.value("hotswap_chip_signal_detections_total", {"signal": "workload_reports"}) == 1.0
