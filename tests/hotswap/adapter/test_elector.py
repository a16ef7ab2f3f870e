"""Leader election and the write budget (``tpu_platform.hotswap.adapter.elector``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from tests.hotswap.double_world import (
    FAST,
    LEASE,
    controller,
    fail_pool,
    kube,
    seed_cluster,
    wait_for,
)
from tests.hotswap.double_world import elector as double_elector
from tests.hotswap.hotswap_fakes import FakeApi
from tests.kubeapi import ApiDouble, Fault
from tests.kubeapi.objects import lease_obj
from tpu_platform.hotswap.adapter.client import ApiError
from tpu_platform.hotswap.adapter.controller import Controller
from tpu_platform.hotswap.adapter.elector import LeaderElector

# --- against the fake API -------------------------------------------------------------------------
# Lease-based leader election (client-go semantics) against the fake API.
NS, NAME = "tpu-hotswap", "tpu-hotswap"


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def elector(api: FakeApi, clock: Clock, identity: str, changes: list[bool] | None = None) -> LeaderElector:
    return LeaderElector(
        api,
        namespace=NS,
        name=NAME,
        identity=identity,
        clock=clock,
        wall_clock=lambda: 1_700_000_000.25 + clock.t,
        on_change=None if changes is None else changes.append,
    )


def test_first_candidate_creates_the_lease_and_leads() -> None:
    api, clock = FakeApi(), Clock()
    changes: list[bool] = []
    a = elector(api, clock, "a", changes)
    assert a.try_acquire_or_renew()
    assert a.is_leader() and changes == [True]
    lease = api.leases[(NS, NAME)]
    assert lease["apiVersion"] == "coordination.k8s.io/v1" and lease["kind"] == "Lease"
    spec = lease["spec"]
    assert spec["holderIdentity"] == "a" and spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    assert spec["renewTime"] == spec["acquireTime"] == "2023-11-14T22:15:00.250000Z"


def test_a_second_candidate_waits_while_the_lease_is_renewed() -> None:
    api, clock = FakeApi(), Clock()
    a, b = elector(api, clock, "a"), elector(api, clock, "b")
    assert a.try_acquire_or_renew()
    for _ in range(20):
        clock.t += 2
        assert a.try_acquire_or_renew()
        assert not b.try_acquire_or_renew()
    assert not b.is_leader()
    assert not any(c[0] == "replace_lease" and c[3]["spec"]["holderIdentity"] == "b" for c in api.calls)


def test_takeover_after_expiry_counts_a_transition() -> None:
    api, clock = FakeApi(), Clock()
    a, b = elector(api, clock, "a"), elector(api, clock, "b")
    a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()  # b observes the record now
    clock.t += 14.9
    assert not b.try_acquire_or_renew()
    clock.t += 0.2
    assert b.try_acquire_or_renew()
    assert api.leases[(NS, NAME)]["spec"]["holderIdentity"] == "b"
    assert api.leases[(NS, NAME)]["spec"]["leaseTransitions"] == 1
    assert not a.is_leader(), "a stopped leading at its renew deadline, before b could take over"


def test_leader_stops_acting_when_renewals_fail_past_the_deadline() -> None:
    api, clock = FakeApi(), Clock()
    a = elector(api, clock, "a")
    a.try_acquire_or_renew()
    api.fail["get_lease"] = [ApiError(503, "Unavailable")] * 10
    api.fail["replace_lease"] = [ApiError(503, "Unavailable")] * 10
    clock.t += 9.0
    assert a.try_acquire_or_renew(), "still within the renew deadline"
    clock.t += 1.5
    assert not a.try_acquire_or_renew()
    assert not a.is_leader()


def test_losing_an_update_race_is_not_leadership() -> None:
    api, clock = FakeApi(), Clock()
    b = elector(api, clock, "b")
    a = elector(api, clock, "a")
    a.try_acquire_or_renew()
    clock.t += 20
    b.try_acquire_or_renew()  # observes a's record
    clock.t += 20
    api.fail["replace_lease"] = [ApiError(409, "Conflict")]
    assert not b.try_acquire_or_renew()
    assert not b.is_leader()


def test_release_hands_over_without_waiting_for_expiry() -> None:
    api, clock = FakeApi(), Clock()
    a, b = elector(api, clock, "a"), elector(api, clock, "b")
    a.try_acquire_or_renew()
    b.try_acquire_or_renew()
    a.release()
    assert not a.is_leader()
    spec = api.leases[(NS, NAME)]["spec"]
    assert spec["holderIdentity"] == "" and spec["leaseDurationSeconds"] == 1
    assert b.try_acquire_or_renew(), "an empty holder can be taken at once"


def test_timings_must_be_ordered() -> None:
    with pytest.raises(ValueError, match="retry_period < renew_deadline < lease_duration"):
        LeaderElector(FakeApi(), namespace=NS, name=NAME, identity="a", renew_deadline=20.0)


def slow_reads(api: FakeApi, clock: Clock, seconds: float) -> None:
    """Every lease read takes ``seconds`` (a slow API server), by the elector's clock."""
    read = api.get_lease

    def get_lease(namespace: str, name: str, *, timeout: float | None = None) -> object:
        clock.t += seconds
        return read(namespace, name, timeout=timeout)

    api.get_lease = get_lease  # type: ignore[method-assign,assignment]


def test_a_renewal_that_just_succeeded_reopens_the_write_budget_at_once() -> None:
    """Timed from the update, not from the slow read before it: the budget opens as the renewal
    lands, and still closes renew deadline - retry period after the update was sent."""
    api, clock = FakeApi(), Clock()
    a = elector(api, clock, "a")
    assert a.try_acquire_or_renew() and a.may_write()
    clock.t += 8.5  # renewals failed meanwhile: the budget (10 - 2 s) is spent, still leading
    assert a.is_leader() and not a.may_write()
    slow_reads(api, clock, 2.0)
    api.fail["replace_lease"] = [ApiError(503, "Unavailable")]  # the optimistic update: read, retry
    sent = clock.t + 2.0
    assert a.try_acquire_or_renew()
    assert a.may_write(), "open right after the renewal, though its read took 2 s"
    clock.t = sent + 7.9
    assert a.may_write()
    clock.t = sent + 8.0
    assert not a.may_write(), "closed renew deadline - retry period after the update was sent"


def test_a_candidate_that_just_acquired_may_write_at_once() -> None:
    api, clock = FakeApi(), Clock()
    a, b = elector(api, clock, "a"), elector(api, clock, "b")
    a.try_acquire_or_renew()
    b.try_acquire_or_renew()
    clock.t += 15.1
    slow_reads(api, clock, b.request_timeout)
    assert b.try_acquire_or_renew(), "a expired: b takes over"
    assert b.may_write(), "b writes in its first reconcile, though its read took the whole timeout"
    clock.t += 7.9
    assert b.may_write(), "the whole budget counts from the update"


def lease_calls(api: FakeApi, since: int) -> list[str]:
    return [c[0] for c in api.calls[since:] if c[0] in ("get_lease", "replace_lease", "create_lease")]


def test_the_leader_renews_with_one_update_and_reads_only_when_it_fails() -> None:
    """client-go's fast path (``tryAcquireOrRenew``, client-go v0.34.1
    ``tools/leaderelection/leaderelection.go``): the leader updates the record it last wrote; a
    failed update falls back to reading the record, in the same attempt."""
    api, clock = FakeApi(), Clock()
    a, b = elector(api, clock, "a"), elector(api, clock, "b")
    assert a.try_acquire_or_renew()
    first = len(api.calls)
    clock.t += 2
    assert a.try_acquire_or_renew()
    assert lease_calls(api, first) == ["replace_lease"]
    api.fail["replace_lease"] = [ApiError(503, "Unavailable")]
    first = len(api.calls)
    clock.t += 2
    assert a.try_acquire_or_renew(), "the read-and-write after the failed update renewed"
    assert lease_calls(api, first) == ["replace_lease", "get_lease", "replace_lease"]
    assert api.leases[(NS, NAME)]["spec"]["holderIdentity"] == "a"
    assert not b.try_acquire_or_renew()


def test_an_optimistic_renewal_over_a_changed_record_conflicts_and_sees_the_new_holder() -> None:
    api, clock = FakeApi(), Clock()
    a = elector(api, clock, "a")
    assert a.try_acquire_or_renew()
    lease = api.leases[(NS, NAME)]
    api.rv += 1
    api.leases[(NS, NAME)] = {
        **lease,
        "metadata": {**lease["metadata"], "resourceVersion": str(api.rv)},
        "spec": {**lease["spec"], "holderIdentity": "b"},
    }
    clock.t += 2
    assert not a.try_acquire_or_renew(), "the stale update conflicts; the read shows b"
    assert a.lost.is_set() and not a.may_write()
    assert api.leases[(NS, NAME)]["spec"]["holderIdentity"] == "b"


def test_the_write_budget_with_the_default_timings() -> None:
    """15/10/2 s: a write may start until 8 s after the renewal was sent, with its client giving
    up 2 s before the earliest takeover (renewal + 15 s): 13 s at first, 5.1 s at 7.9 s."""
    api, clock = FakeApi(), Clock()
    a = elector(api, clock, "a")
    assert a.try_acquire_or_renew()
    sent = clock.t
    assert a.write_budget() == pytest.approx(13.0)
    clock.t = sent + 7.9
    assert a.write_budget() == pytest.approx(5.1) and a.may_write()
    clock.t = sent + 8.0
    assert a.write_budget() is None and not a.may_write()
    assert a.is_leader(), "still leading: only writes stop when the budget is spent"


def test_no_write_starts_with_less_than_the_minimum_left() -> None:
    """With writes allowed until the renew deadline (no write margin) and a 1 s expiry margin,
    the lease budget closes first: 5 - 1 - 3.6 = 0.4 s is under the 0.5 s minimum."""
    api, clock = FakeApi(), Clock()
    a = LeaderElector(
        api,
        namespace=NS,
        name=NAME,
        identity="a",
        lease_duration=5.0,
        renew_deadline=4.5,
        retry_period=0.5,
        write_margin=0.0,
        expiry_margin=1.0,
        clock=clock,
    )
    assert a.try_acquire_or_renew()
    sent = clock.t
    clock.t = sent + 3.4
    assert a.write_budget() == pytest.approx(0.6)
    clock.t = sent + 3.6
    assert a.write_budget() is None and not a.may_write()
    assert a.is_leader()


def test_a_lost_lease_leaves_no_budget() -> None:
    api, clock = FakeApi(), Clock()
    a = elector(api, clock, "a")
    assert a.try_acquire_or_renew()
    api.fail["replace_lease"] = [ApiError(503, "Unavailable")] * 10
    api.fail["get_lease"] = [ApiError(503, "Unavailable")] * 10
    clock.t += 10.0
    assert not a.try_acquire_or_renew()
    assert a.lost.is_set() and a.write_budget() is None


def test_margins_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="expiry_margin"):
        LeaderElector(FakeApi(), namespace=NS, name=NAME, identity="a", expiry_margin=-1.0)
    with pytest.raises(ValueError, match="min_write_seconds"):
        LeaderElector(FakeApi(), namespace=NS, name=NAME, identity="a", min_write_seconds=0.0)


# --- through the real client, against the API double ----------------------------------------------
@pytest.fixture
def double() -> Iterator[ApiDouble]:
    with ApiDouble(bookmark_interval=0.5, guard_lease=LEASE) as d:
        yield d


def run_in_thread(target: object, *args: object) -> threading.Thread:
    t = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
    t.start()
    return t


def start(c: Controller, stop: threading.Event) -> threading.Thread:
    assert c.leader is not None
    c.watch_thread(run_in_thread(c.leader.run, stop))
    c.start_caches(stop)
    return run_in_thread(c.run, stop)


def test_elector_survives_a_short_outage_and_keeps_leading(double: ApiDouble) -> None:
    le = double_elector(kube(double, "a"), "a")
    stop = threading.Event()
    t = run_in_thread(le.run, stop)
    assert wait_for(le.is_leader, 5)
    double.outage(0.3)
    time.sleep(FAST.retry_period_seconds * 3)
    assert t.is_alive() and le.is_leader() and not le.lost.is_set()
    stop.set()
    t.join(5)


def test_elector_that_starts_during_an_outage_leads_once_the_api_is_back(double: ApiDouble) -> None:
    double.stop()
    le = double_elector(kube(double, "a"), "a")
    stop = threading.Event()
    t = run_in_thread(le.run, stop)
    time.sleep(3.0)
    assert t.is_alive() and not le.is_leader()
    double.start()
    assert wait_for(le.is_leader, 5), "the lease is created and held once the API answers"
    assert double.store.get(double.store_kind("leases"), *LEASE)["spec"]["holderIdentity"] == "a"
    stop.set()
    t.join(5)


def test_failing_renewals_stop_writes_before_the_deadline_and_end_leadership(double: ApiDouble) -> None:
    seed = seed_cluster(double)
    c = controller(double)
    stop = threading.Event()
    start(c, stop)
    le = c.leader
    assert le is not None and wait_for(lambda: le.is_leader() and c.synced, 5)
    double.faults.add(Fault(status=503, resources=("leases",), times=None))
    time.sleep(FAST.renew_deadline_seconds - FAST.retry_period_seconds)
    fail_pool(seed, "a")
    assert wait_for(le.lost.is_set, 5), "no renewal within the renew deadline: lost"
    time.sleep(0.5)
    assert double.writes_without_lease == []
    assert not [w for w in double.writes() if w.request.resource == "nodes"], (
        "no write once the budget is spent"
    )
    stop.set()


def test_a_lease_taken_by_another_holder_stops_writing(double: ApiDouble) -> None:
    seed = seed_cluster(double)
    c = controller(double)
    stop = threading.Event()
    start(c, stop)
    le = c.leader
    assert le is not None and wait_for(lambda: le.is_leader() and c.synced, 5)
    # Another candidate takes over the way client-go does: after the record stopped changing for a
    # lease duration, which the double enforces by refusing our renewals meanwhile.
    double.faults.add(Fault(status=500, resources=("leases",), identity="hotswap-0", times=None))
    time.sleep(FAST.lease_duration_seconds + 0.2)
    seed.update("leases", lease_obj(LEASE[1], LEASE[0], "intruder", time.time(), duration=30))
    fail_pool(seed, "a")
    time.sleep(1.0)
    assert le.lost.is_set()
    assert double.writes_without_lease == []
    stop.set()
