"""The client's rate limits, and the lease's write budget carried to each write
(``tpu_platform.hotswap.adapter.client``; the budget itself is the elector's).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from typing import Any, cast
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes import client

from tests.hotswap.double_world import seed_cluster
from tests.hotswap.hotswap_fakes import FakeApi
from tests.kubeapi import ApiDouble, Fault, Request
from tests.kubeapi.objects import node_obj
from tpu_platform.hotswap.adapter.applier import Applier, Outcome
from tpu_platform.hotswap.adapter.client import (
    JSON,
    ApiError,
    ItemBackoff,
    KubeApi,
    OutOfBudget,
    TokenBucket,
    budgeted,
)
from tpu_platform.hotswap.adapter.convert import node_from_api
from tpu_platform.hotswap.adapter.elector import LeaderElector
from tpu_platform.hotswap.adapter.kube import (
    KubernetesApi,
    configure,
)
from tpu_platform.hotswap.core import (
    Action,
    AnnotateJobSet,
    EmitEvent,
    EvictionCause,
    EvictPod,
    ForceDeletePod,
    PatchNode,
    Snapshot,
)
from tpu_platform.hotswap.core.pool_health import OWN_TAINT


# --- rate limits ----------------------------------------------------------------------------------
def test_token_bucket_allows_the_burst_then_the_rate() -> None:
    t = [0.0]
    bucket = TokenBucket(qps=10, burst=3, clock=lambda: t[0], sleep=lambda s: t.__setitem__(0, t[0] + s))
    waits = [bucket.take() for _ in range(5)]
    assert waits[:3] == [0.0, 0.0, 0.0]
    assert waits[3] == pytest.approx(0.1) and waits[4] == pytest.approx(0.1)
    t[0] += 10
    assert [bucket.take() for _ in range(3)] == [0.0, 0.0, 0.0], "at most burst tokens are saved up"


def test_item_backoff_doubles_to_the_cap_honours_retry_after_and_forgets() -> None:
    t = [0.0]
    b = ItemBackoff(base=0.25, cap=8.0, jitter=0.0, clock=lambda: t[0])
    assert [b.failed("x") for _ in range(7)] == [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert b.waiting("x") == 8.0 and b.waiting("y") == 0.0
    assert b.failed("y", retry_after=5.0) == 5.0, "Retry-After is a floor"
    assert b.failed("z", retry_after=10_000) == 60.0, "and is capped"
    b.forget("x")
    assert b.waiting("x") == 0.0 and b.failures("x") == 0


def test_item_backoff_jitter_stays_within_bounds() -> None:
    b = ItemBackoff(base=1.0, cap=4.0, jitter=0.2)
    for n in range(1, 10):
        d = b.delay(n)
        base = min(4.0, 2 ** (n - 1))
        assert base <= d <= base * 1.2


def test_item_backoff_transport_failures_do_not_escalate() -> None:
    """An outage (refused connections) must not leave a write waiting out a grown backoff after it."""
    t = [0.0]
    b = ItemBackoff(base=0.25, cap=8.0, jitter=0.0, clock=lambda: t[0])
    assert [b.failed("x", escalate=False) for _ in range(20)] == [0.25] * 20
    assert b.failures("x") == 0
    assert [b.failed("x") for _ in range(3)] == [0.25, 0.5, 1.0], "status failures still escalate"
    assert b.failed("x", escalate=False) == 0.25 and b.failures("x") == 3
    assert b.failed("x", retry_after=3.0, escalate=False) == 3.0, "Retry-After is still a floor"


# --- the lease's write budget ---------------------------------------------------------------------
# The write budget's bound: no write is sent after ``renewed_at + renew_deadline - write_margin``, and
# every write's client has given up by ``renewed_at + lease_seconds - expiry_margin``, before another
# replica could take the Lease (``tpu_platform.hotswap.adapter.elector``, ``.client``).
#
# Attacked with slow writes, writes that block until their timeout, first on a simulated clock: the
# real elector, applier and ``KubernetesApi`` over a client double whose every request takes a drawn
# time or blocks until its timeout, behind a rate limiter that holds each write a drawn time, while a
# second candidate polls the Lease (hypothesis draws the timings, renewals, waits and latencies).
# Then in real time through the real client against the loopback API double, whose writes hang.
NS, NAME = "tpu-hotswap", "tpu-hotswap"
CAP = 15.0
"""The read timeout of :data:`tpu_platform.hotswap.adapter.kube.REQUEST_TIMEOUT`: the budget's cap."""
EPS = 1e-9


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


# --- the Lease, shared by two candidates, on the simulated clock -----------------------------------
class LeaseLog:
    """One Lease (in a FakeApi) and when each holder's writes of it landed or were sent."""

    def __init__(self, clock: Clock) -> None:
        self.store = FakeApi()
        self.clock = clock
        self.sent: dict[str, list[float]] = {}
        """Holder -> when its successful Lease writes were sent (before their latency)."""
        self.landed: list[tuple[float, str]] = []
        """(when the record changed, holder)."""


class LeaseClient:
    """A candidate's lease calls: each takes ``latency`` (a timeout past the call's own), fails
    with 503 while ``down``; a write that fails or times out does not land."""

    def __init__(self, log: LeaseLog, who: str) -> None:
        self.log = log
        self.who = who
        self.down = False
        self.latency = 0.0

    def _wait(self, timeout: float | None) -> None:
        if timeout is not None and self.latency > timeout:
            self.log.clock.t += timeout
            raise ApiError(0, "ReadTimeoutError")
        self.log.clock.t += self.latency
        if self.down:
            raise ApiError(503, "ServiceUnavailable")

    def get_lease(self, namespace: str, name: str, *, timeout: float | None = None) -> JSON | None:
        self._wait(timeout)
        return self.log.store.get_lease(namespace, name)

    def create_lease(self, namespace: str, body: JSON, *, timeout: float | None = None) -> JSON:
        return self._write(lambda: self.log.store.create_lease(namespace, body), timeout)

    def replace_lease(self, namespace: str, name: str, body: JSON, *, timeout: float | None = None) -> JSON:
        return self._write(lambda: self.log.store.replace_lease(namespace, name, body), timeout)

    def _write(self, write: Any, timeout: float | None) -> JSON:
        sent = self.log.clock.t
        self._wait(timeout)
        out = write()
        self.log.sent.setdefault(self.who, []).append(sent)
        self.log.landed.append((self.log.clock.t, self.who))
        return cast(JSON, out)


def candidate(
    log: LeaseLog, who: str, lease: float, renew: float, retry: float
) -> tuple[LeaderElector, LeaseClient]:
    api = LeaseClient(log, who)
    le = LeaderElector(
        cast(KubeApi, api),
        namespace=NS,
        name=NAME,
        identity=who,
        lease_duration=lease,
        renew_deadline=renew,
        retry_period=retry,
        clock=log.clock,
        wall_clock=lambda: 1.7e9 + log.clock.t,
    )
    return le, api


# --- the writes: the real KubernetesApi over a client double ---------------------------------------
@dataclass(frozen=True, slots=True)
class Sent:
    at: float
    method: str
    path: str
    query: dict[str, str]
    timeout: Any
    """``_request_timeout`` as passed: one number (total) or (connect, read)."""


class SlowClient:
    """Stands in for ``kubernetes.client.ApiClient``: every request takes the next latency, or, if
    that is past its timeout, blocks until the timeout and fails (a slow write: did it land?)."""

    user_agent = ""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.latencies: list[float] = []
        self.sent: list[Sent] = []

    def param_serialize(
        self, *, method: str, resource_path: str, path_params: Any, query_params: Any, **_: Any
    ) -> Any:
        path = resource_path.format(**(path_params or {}))
        url = path + ("?" + urlencode(query_params) if query_params else "")
        return method, url, {}, None, None

    def call_api(self, method: str, url: str, *, _request_timeout: Any = None, **_: Any) -> Any:
        parts = urlsplit(url)
        self.sent.append(
            Sent(self.clock.t, method, parts.path, dict(parse_qsl(parts.query)), _request_timeout)
        )
        latency = self.latencies.pop(0) if self.latencies else 0.0
        limit = _request_timeout if isinstance(_request_timeout, int | float) else sum(_request_timeout)
        if latency >= limit:
            self.clock.t += limit
            raise TimeoutError(f"read timed out ({limit})")
        self.clock.t += latency
        return _Reply()


class _Raw:
    data = b"{}"
    headers: dict[str, str] = {}

    def release_conn(self) -> None:
        """Nothing pooled."""


class _Reply:
    status = 200
    reason = "OK"
    response = _Raw()


class Limiter:
    """The token bucket's place: each write waits the next drawn time before it is sent."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.waits: list[float] = []

    def take(self) -> float:
        wait = self.waits.pop(0) if self.waits else 0.0
        self.clock.t += wait
        return wait


@dataclass
class World:
    clock: Clock
    log: LeaseLog
    a: LeaderElector
    a_api: LeaseClient
    b: LeaderElector
    b_api: LeaseClient
    wire: SlowClient
    limiter: Limiter
    applier: Applier
    snap: Snapshot


def world(lease: float = 15.0, renew: float = 10.0, retry: float = 2.0, *, budget: bool = True) -> World:
    clock = Clock()
    log = LeaseLog(clock)
    a, a_api = candidate(log, "a", lease, renew, retry)
    b, b_api = candidate(log, "b", lease, renew, retry)
    wire, limiter = SlowClient(clock), Limiter(clock)
    kube = KubernetesApi(cast(client.ApiClient, wire), limiter=cast(Any, limiter), identity="a")
    applier = Applier(
        kube,
        identity="a",
        clock=lambda: 1.7e9 + clock.t,
        may_write=a.may_write,
        write_budget=a.write_budget if budget else None,
        monotonic=clock,
        backoff=ItemBackoff(clock=clock),
        node_backoff=ItemBackoff(cap=1.0, clock=clock),
        node_patch_workers=1,
    )
    rec = node_from_api(node_obj("n0", "p"))
    assert rec is not None
    snap = Snapshot(0.0, (), (replace(rec.node, resource_version="7"),))
    return World(clock, log, a, a_api, b, b_api, wire, limiter, applier, snap)


_serial = iter(range(10**9))


def action(kind: str) -> Action:
    """A fresh target each time (no backoff from an earlier timeout), of every written kind."""
    i = next(_serial)
    match kind:
        case "patch":
            return PatchNode("n0", "p", add_taints=(OWN_TAINT,), reason="unhealthy")
        case "jobset":
            return AnnotateJobSet("ml", f"j{i}", f"uid-j{i}", (("k", "v"),), "record")
        case "evict":
            return EvictPod("ml", f"p{i}", f"uid-p{i}", EvictionCause.PREEMPTION, jobset="ml/x")
        case "delete":
            return ForceDeletePod("ml", f"p{i}", f"uid-p{i}", node="n0", jobset="ml/x")
    return EmitEvent("Node", "", f"n{i}", "", "Warning", "HotswapPoolUnhealthy", "tainted", "Taint")


def write(w: World, kind: str = "evict", *, wait: float = 0.0, latency: float = 0.0) -> Outcome:
    w.limiter.waits.append(wait)
    w.wire.latencies.append(latency)
    [result] = w.applier.apply([action(kind)], w.snap)
    if result.outcome is Outcome.OUT_OF_BUDGET or result.status is None:
        w.limiter.waits.clear()  # not sent: its wait and latency were not used
        w.wire.latencies.clear()
    return result.outcome


# --- the bound, as numbers ---------------------------------------------------------------------------
HANG = 1e9
"""A write that never answers: it blocks until its timeout."""


@pytest.mark.parametrize(
    ("wait", "timeout"),
    [(0.0, 13.0), (3.0, 10.0), (7.9, 5.1)],
    ids=["at-renewal", "3s-later", "budget-edge"],
)
def test_a_slow_write_gets_the_budget_left_when_it_is_sent_and_gives_up_before_expiry(
    wait: float, timeout: float
) -> None:
    """Defaults 15/10/2 s: a write held ``wait`` seconds by the rate limiter is sent with a total
    timeout of 15 - 2 - wait, sent to the server too, and its client gives up by renewal + 13 s."""
    w = world()
    assert w.a.try_acquire_or_renew()
    renewed = w.log.sent["a"][-1]
    assert write(w, wait=wait, latency=HANG) is Outcome.FAILED
    [sent] = w.wire.sent
    assert sent.at == pytest.approx(renewed + wait)
    assert sent.timeout == pytest.approx(timeout), "the budget at the moment of sending, not at the check"
    assert sent.query["timeout"] == f"{int(sent.timeout * 1000)}ms"
    assert w.clock.t == pytest.approx(renewed + 13.0) and w.clock.t < renewed + 15.0


def test_a_write_held_past_its_budget_by_the_rate_limiter_is_not_sent() -> None:
    """The applier's check passes at the renewal; the limiter holds the write 8 s, to the end of
    its budget: the client checks again and sends nothing. Checked only before the limiter, it would
    have gone out with no budget left, one way a write checked in time reaches the server late."""
    w = world()
    assert w.a.try_acquire_or_renew()
    assert write(w, "patch", wait=8.0) is Outcome.OUT_OF_BUDGET
    assert w.wire.sent == []
    assert write(w, wait=0.0) is Outcome.OUT_OF_BUDGET, "and the next write is refused at the check"


def test_the_cap_is_the_read_timeout() -> None:
    """A long lease (30 s) leaves 28 s; the write still times out at the 15 s read timeout."""
    w = world(lease=30.0, renew=20.0, retry=2.0)
    assert w.a.try_acquire_or_renew()
    assert write(w, latency=HANG) is Outcome.FAILED
    assert w.wire.sent[0].timeout == CAP


def test_the_lease_budget_counts_the_whole_seconds_the_lease_records() -> None:
    """client-go writes ``LeaseDurationSeconds: int(LeaseDuration / time.Second)`` and candidates
    wait that long: a 3.9 s lease is recorded as 3 s, and the budget is 3 - 0.25, not 3.65."""
    w = world(lease=3.9, renew=2.0, retry=0.25)
    assert w.a.try_acquire_or_renew()
    assert w.log.store.leases[(NS, NAME)]["spec"]["leaseDurationSeconds"] == 3
    assert w.a.write_budget() == pytest.approx(2.75)


def test_without_a_budget_the_client_keeps_its_own_timeouts() -> None:
    """An applier given no ``write_budget`` (no election) sends as before: (connect, read), no
    ``timeout`` parameter."""
    w = world(budget=False)
    assert w.a.try_acquire_or_renew()
    assert write(w) is Outcome.APPLIED
    [sent] = w.wire.sent
    assert sent.timeout == (5.0, 15.0) and "timeout" not in sent.query


def test_lease_requests_are_never_budgeted() -> None:
    """The renewals are what renew the budget: with none left they still go out."""
    clock = Clock()
    wire = SlowClient(clock)
    kube = KubernetesApi(cast(client.ApiClient, wire), limiter=cast(Any, Limiter(clock)))
    with budgeted(lambda: None):
        kube.replace_lease(NS, NAME, {"metadata": {"name": NAME}}, timeout=5.0)
        kube.get_lease(NS, NAME, timeout=5.0)
        with pytest.raises(OutOfBudget):
            kube.patch_node("n0", [])
    assert [(s.method, s.timeout) for s in wire.sent] == [("PUT", 5.0), ("GET", 5.0)]


# --- the property ------------------------------------------------------------------------------------
KINDS = st.sampled_from(["patch", "jobset", "evict", "delete", "event"])
LATENCY = st.one_of(st.floats(0.0, 0.3), st.just(HANG))
"""A write's latency as a share of the lease duration, or a write that never answers."""
STEP = st.one_of(
    st.tuples(st.just("renew"), st.booleans(), st.floats(0.0, 0.4)),
    st.tuples(st.just("write"), st.floats(0.0, 0.8), LATENCY, KINDS),
    st.tuples(st.just("idle"), st.floats(0.0, 0.6)),
    st.tuples(st.just("candidate"), st.floats(0.0, 0.2)),
)
"""Times are shares of the lease duration (renewal latencies of the renew deadline)."""


@st.composite
def timings(draw: st.DrawFn) -> tuple[float, float, float]:
    lease = draw(st.floats(2.0, 30.0))
    renew = lease * draw(st.floats(0.3, 0.95))
    retry = renew * draw(st.floats(0.05, 0.6))
    return lease, renew, retry


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    timings(),
    st.lists(STEP, max_size=30),
    st.lists(st.tuples(st.floats(0.0, 0.5), LATENCY, KINDS), min_size=1, max_size=4),
)
def test_no_write_is_sent_after_the_budget_or_outlives_the_lease(
    timing: tuple[float, float, float],
    steps: list[tuple[Any, ...]],
    race: list[tuple[float, float, str]],
) -> None:
    """Whatever the renewals, limiter waits and write latencies: every write is sent while its last
    landed renewal is younger than renew deadline - write margin, with a timeout that ends by
    renewal + lease seconds - expiry margin, never past the cap, never under the minimum, the
    same timeout sent to the server. Each run ends with ``a`` cut off from the Lease while it keeps
    writing and ``b`` polls until it takes over: every write's client has given up before that."""
    lease, renew, retry = timing
    w = world(lease, renew, retry)
    a = w.a
    a.try_acquire_or_renew()
    for step in steps:
        match step:
            case ("renew", ok, latency):
                w.a_api.down, w.a_api.latency = not ok, latency * renew
                a.try_acquire_or_renew()
            case ("write", wait, latency, kind):
                write(w, kind, wait=wait * lease, latency=latency * lease)
            case ("idle", share):
                w.clock.t += share * lease
            case ("candidate", latency):
                w.b_api.latency = latency * lease
                w.b.try_acquire_or_renew()
    w.a_api.down, w.b_api.latency = True, 0.0
    for n in range(100):  # a's renewals fail from here on; it writes on until b has the Lease
        wait, latency, kind = race[n % len(race)]
        write(w, kind, wait=wait * retry, latency=latency * lease)
        if w.b.try_acquire_or_renew():
            break
        a.try_acquire_or_renew()
        w.clock.t += max(retry, lease / 20)
    takeover = next((t for t, who in w.log.landed if who == "b"), None)
    assert takeover is not None, "b never took the Lease over"
    for s in w.wire.sent:
        renewals = [t for t in w.log.sent.get("a", []) if t <= s.at]
        assert renewals, f"a write at {s.at} before any renewal landed"
        since = s.at - renewals[-1]
        assert since < renew - a.write_margin, f"sent {since:.3f}s after the renewal"
        assert isinstance(s.timeout, float)
        assert a.min_write_seconds - EPS <= s.timeout <= CAP
        assert s.at + s.timeout <= renewals[-1] + a.lease_seconds - a.expiry_margin + EPS
        assert s.query["timeout"] == f"{max(1, int(s.timeout * 1000))}ms"
        assert s.at + s.timeout < takeover, "a's client still waiting when b took the Lease"


# --- real time, real client, the loopback API double ---------------------------------------------
LEASE, RENEW, RETRY = 4.0, 3.0, 0.75
"""Writes stop at renewal + 2.25 s, every client gone by + 3.25 s, the lease expires at + 4 s."""


def test_hanging_writes_over_http_are_cut_before_the_lease_could_pass() -> None:
    """One write every 0.25 s after the renewal, through the real client; the double holds every
    write past the lease (and, without its ``timeout`` deadline, would apply it after). Writes sent
    before the cutoff carry a timeout (and a ``timeout`` parameter) ending by renewal + 3.25 s and
    have given up before the lease expires at + 4 s; writes after it never reach the server."""
    arrivals: list[float] = []

    def hang(req: Request) -> Fault | None:
        if not req.write or req.resource == "leases":
            return None
        arrivals.append(time.monotonic())
        return Fault(delay=LEASE + 1.0, label="hang")

    with ApiDouble() as d:
        seed_cluster(d)
        lease_api = KubernetesApi(client.ApiClient(configure(client.Configuration(host=d.url))))
        writes = KubernetesApi(client.ApiClient(configure(client.Configuration(host=d.url))))
        sends: list[tuple[float, Any, str]] = []
        call_api = writes.client.call_api

        def spy(method: str, url: str, *args: Any, **kw: Any) -> Any:
            sends.append((time.monotonic(), kw.get("_request_timeout"), url))
            return call_api(method, url, *args, **kw)

        writes.client.call_api = spy  # type: ignore[method-assign]
        le = LeaderElector(
            lease_api,
            namespace=NS,
            name=NAME,
            identity="hotswap-0",
            lease_duration=LEASE,
            renew_deadline=RENEW,
            retry_period=RETRY,
        )
        assert le.try_acquire_or_renew()
        renewed = cast(float, le._renewed_at)  # just before the Lease update was sent
        d.faults.background = hang
        results: dict[int, tuple[float, str, float]] = {}

        def writer(i: int, at: float) -> None:
            time.sleep(max(0.0, at - time.monotonic()))
            outcome = "applied"
            ops = [{"op": "add", "path": f"/metadata/labels/w{i}", "value": "x"}]
            try:
                with budgeted(le.write_budget):
                    writes.patch_node(f"a-{i % 4}", ops)
            except OutOfBudget:
                outcome = "refused"
            except ApiError as err:
                outcome = f"status {err.status}"
            results[i] = (at, outcome, time.monotonic())

        threads = [
            threading.Thread(target=writer, args=(i, renewed + 0.25 * i), daemon=True) for i in range(12)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=LEASE + 2.0)
    cutoff = renewed + RENEW - le.write_margin
    give_up = renewed + le.lease_seconds - le.expiry_margin
    expiry = renewed + le.lease_seconds
    assert len(results) == 12
    for i, (at, outcome, returned) in sorted(results.items()):
        if at < cutoff - 0.1:
            # Cut by the client's timeout (0) or answered 504 at the same deadline by the server
            # (kube-apiserver's WithRequestDeadline, which the double plays): not applied either way.
            assert outcome in ("status 0", "status 504"), f"write {i} sent at +{at - renewed:.2f}s: {outcome}"
            assert returned < expiry, f"write {i} still waiting at +{returned - renewed:.2f}s"
        elif at > cutoff + 0.1:
            assert outcome == "refused", f"write {i} at +{at - renewed:.2f}s: {outcome}"
    assert len(sends) == len(arrivals) == sum(1 for _, o, _ in results.values() if o != "refused")
    assert 0 < len(sends) < 12
    for sent, timeout, url in sends:
        assert sent < cutoff + 0.05, f"sent at +{sent - renewed:.3f}s, cutoff at +{cutoff - renewed:.2f}s"
        assert isinstance(timeout, float) and sent + timeout <= give_up + 0.05
        assert f"timeout={int(timeout * 1000)}ms" in url
