"""The simulated Compute Engine reads at the adapter's cadence
(``tpu_platform.hotswap.adapter.compute_engine``): a usable answer is re-read once ``compute_reread_s``
old, anything else at most every ``compute_retry_s``, and a VM that turns TERMINATED is seen only at the
next due read."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from tpu_platform.hotswap.core import Node
from tpu_platform.sim.compute import ComputeApi
from tpu_platform.sim.model import SimNode
from tpu_platform.sim.params import Timings

NO_ERRORS = Timings(compute_api_error_rate=0.0)


def dead_node(down_at: float) -> SimNode:
    return SimNode("n0", "p", Node(name="n0", pool="p"), vm_running=False, vm_down_at=down_at)


def test_a_running_answer_is_kept_until_the_reread_is_due_then_the_termination_is_seen() -> None:
    t = NO_ERRORS
    api = ComputeApi(t, seed=0)
    node = dead_node(0.0)
    since = 10.0
    # Read past the clock skew after the suspicion (corroboration.read_after_suspicion), so usable.
    read_at = since + 3.0
    first = api.join(node, read_at, since)
    assert first is not None and first.status == "RUNNING" and api.reads == 1
    turned = t.compute_status_lag_s + t.compute_api_latency_s
    now = read_at
    while now + 2.0 < read_at + t.compute_reread_s:
        now += 2.0
        assert api.join(node, now, since) == first, "cached until the re-read is due"
    assert api.reads == 1
    while True:
        now += 2.0
        ans = api.join(node, now, since)
        if ans is not None and ans.status == "TERMINATED":
            break
    assert turned <= now <= turned + t.compute_reread_s + 2.0


def test_a_new_suspicion_makes_the_old_answer_unusable_and_it_is_retried_sooner() -> None:
    api = ComputeApi(NO_ERRORS, seed=0)
    node = dead_node(1e9)
    api.join(node, 10.0, since=9.0)
    assert api.reads == 1
    api.join(node, 12.0, since=11.0)
    assert api.reads == 2, "the cached answer predates the suspicion: retried after compute_retry_s"
    api.forget("n0")
    api.join(node, 12.5, since=12.0)
    assert api.reads == 3, "a node that stopped being suspect starts afresh"


@settings(max_examples=100, deadline=None)
@given(
    steps=st.lists(st.floats(0.1, 6.0, allow_nan=False), min_size=1, max_size=40),
    error_rate=st.sampled_from([0.0, 0.3, 1.0]),
)
def test_fuzz_reads_never_come_faster_than_the_adapter_would_send_them(
    steps: list[float], error_rate: float
) -> None:
    t = Timings(compute_api_error_rate=error_rate)
    api = ComputeApi(t, seed=3)
    node = dead_node(5.0)
    now, sent = 1.0, []
    for step in steps:
        now += step
        before = api.reads
        api.join(node, now, since=0.0)
        if api.reads > before:
            sent.append(now)
    gaps = [b - a for a, b in pairwise(sent)]
    assert all(g >= t.compute_retry_s - 1e-9 for g in gaps)
