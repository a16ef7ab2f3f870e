"""The reflector caches (``tpu_platform.hotswap.adapter.cache``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.hotswap.double_world import (
    LEASE,
    fail_pool,
    kube,
    seed_cluster,
    wait_for,
)
from tests.hotswap.hotswap_fakes import FakeApi
from tests.kubeapi import ApiDouble, Fault
from tests.kubeapi.objects import node_obj
from tpu_platform.hotswap.adapter.cache import Backoff, WatchCache
from tpu_platform.hotswap.adapter.client import JSON, ApiError, Resource
from tpu_platform.hotswap.adapter.convert import NodeRecord, node_from_api

# --- against the fake API -------------------------------------------------------------------------
# Watch-fed caches: one list, then watches from its resourceVersion; re-list only on 410 Gone.
NODES = Resource("nodes", "cloud.google.com/gke-tpu-accelerator")


def event(kind: str, obj: dict[str, Any], rv: str) -> dict[str, Any]:
    obj = {**obj, "metadata": {**obj["metadata"], "resourceVersion": rv}}
    return {"type": kind, "object": obj}


def make() -> tuple[FakeApi, WatchCache[NodeRecord], list[int]]:
    api = FakeApi()
    api.add("nodes", node_obj("n1", "a"))
    changes: list[int] = []
    cache: WatchCache[NodeRecord] = WatchCache(
        api, NODES, node_from_api, watch_timeout_seconds=60, on_change=lambda: changes.append(1)
    )
    return api, cache, changes


def names(cache: WatchCache[NodeRecord]) -> list[str]:
    return sorted(r.node.name for r in cache.values())


def test_lists_once_then_watches_from_the_list_version() -> None:
    api, cache, changes = make()
    api.watch_streams["nodes"] = [
        [
            event("ADDED", node_obj("n2", "a"), "120"),
            event("MODIFIED", node_obj("n1", "a", ready="Unknown", since=5), "121"),
            {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "130"}}},
        ],
        [event("DELETED", node_obj("n2", "a"), "131")],
    ]
    assert not cache.synced
    cache.watch_once()
    assert cache.synced and names(cache) == ["n1", "n2"]
    ready = cache.get("n1")
    assert ready is not None
    cond = ready.node.condition("Ready")
    assert cond is not None and cond.status == "Unknown"
    assert cache.resource_version == "130", "bookmarks advance the resume point"
    cache.watch_once()
    assert names(cache) == ["n1"]
    assert [c for c in api.calls if c[0] in ("list", "watch")] == [
        ("list", "nodes", NODES.label_selector),
        ("watch", "nodes", "101", 60),
        ("watch", "nodes", "130", 60),
    ]
    assert cache.lists == 1
    assert len(changes) == 4, "one wake-up per list or object change; none for bookmarks"


def test_error_event_410_relists_and_resumes_from_the_new_version() -> None:
    api, cache, _ = make()
    cache.relist()
    api.add("nodes", node_obj("n3", "b"))  # happened while the watch was gone
    api.watch_streams["nodes"] = [
        [
            {
                "type": "ERROR",
                "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"},
            }
        ],
        [event("MODIFIED", node_obj("n1", "a"), "102")],
    ]
    cache.watch_once()
    assert cache.lists == 2 and names(cache) == ["n1", "n3"]
    assert cache.resource_version == "102"
    cache.watch_once()
    assert api.calls[-1] == ("watch", "nodes", "102", 60)


def test_api_error_410_on_watch_request_relists() -> None:
    api, cache, _ = make()
    cache.relist()
    api.watch_streams["nodes"] = [[ApiError(410, "Gone")]]
    cache.watch_once()
    assert cache.lists == 2


def test_other_errors_propagate_and_run_retries_with_backoff() -> None:
    api, cache, _ = make()
    cache.relist()
    api.watch_streams["nodes"] = [[{"type": "ERROR", "object": {"code": 500, "reason": "InternalError"}}]]
    with pytest.raises(ApiError) as err:
        cache.watch_once()
    assert err.value.status == 500
    assert cache.lists == 1, "a 500 is no reason to re-list"

    stop = threading.Event()

    class StopAfterWatch(FakeApi):
        def watch_objects(
            self, resource: Resource, resource_version: str, timeout_seconds: int
        ) -> Iterator[JSON]:
            stop.set()
            return super().watch_objects(resource, resource_version, timeout_seconds)

    flaky = StopAfterWatch()
    flaky.fail["list_objects"] = [ApiError(503, "Unavailable")]
    fresh: WatchCache[NodeRecord] = WatchCache(
        flaky, NODES, node_from_api, backoff=Backoff(initial=0.01, cap=0.01)
    )
    fresh.run(stop)
    assert fresh.synced, "the failed list was retried"
    assert [c[0] for c in flaky.calls] == ["list", "list", "watch"]


def test_objects_that_stop_qualifying_are_dropped() -> None:
    _, cache, _ = make()
    cache.relist()
    not_tpu = node_obj("n1", "a")
    del not_tpu["metadata"]["labels"]["cloud.google.com/gke-tpu-accelerator"]
    assert cache.apply_event(event("MODIFIED", not_tpu, "140"))
    assert names(cache) == []


def test_backoff_transport_failures_wait_one_initial_step() -> None:
    """A watch retried through an outage is retried within one initial step once the API is back."""
    b = Backoff(initial=0.8, cap=4.0, jitter=1.0, clock=lambda: 0.0)
    waits = [b.next(escalate=False) for _ in range(30)]
    assert all(0.8 <= w <= 1.6 for w in waits)
    escalated = [b.next() for _ in range(4)]
    assert escalated[-1] >= 4.0, "status failures still escalate to the cap"


def test_watch_refused_many_times_retries_quickly() -> None:
    class Refusing(FakeApi):
        def watch_objects(
            self, resource: Resource, resource_version: str, timeout_seconds: int
        ) -> Iterator[JSON]:
            raise ApiError(0, "NewConnectionError", "connection refused")

    api = Refusing()
    api.add("nodes", node_obj("n1", "a"))
    waits: list[float] = []
    stop = threading.Event()
    cache: WatchCache[NodeRecord] = WatchCache(api, NODES, node_from_api, watch_timeout_seconds=60)

    class Recording(Backoff):
        def next(self, *, escalate: bool = True) -> float:
            w = super().next(escalate=escalate)
            waits.append(w)
            if len(waits) >= 8:
                stop.set()
            return 0.0

    cache.backoff = Recording()
    cache.run(stop)
    assert len(waits) >= 8 and max(waits) <= 1.6


def test_a_watch_that_streamed_an_object_resets_the_backoff() -> None:
    """client-go only resets after 2 min without a backoff (apimachinery ``pkg/util/wait/backoff.go``
    v0.34.1); here a watch that delivered an object proves the server healthy, so the failure after
    it waits one initial step, not a step grown by the failures before it."""
    api, cache, _ = make()
    cache.backoff = Backoff(initial=0.8, cap=4.0, jitter=0.0, clock=lambda: 0.0)
    cache.relist()
    for _ in range(4):
        cache.backoff.next()
    assert cache.backoff.next() == 4.0, "escalated to the cap"
    api.watch_streams["nodes"] = [
        [event("MODIFIED", node_obj("n1", "a", ready="Unknown", since=5), "120"), ApiError(500, "Internal")]
    ]
    with pytest.raises(ApiError):
        cache.watch_once()
    assert cache.backoff.next() == 0.8, "the failure after a streaming watch starts over"


def test_a_watch_that_streamed_only_bookmarks_keeps_the_backoff() -> None:
    api, cache, _ = make()
    cache.backoff = Backoff(initial=0.8, cap=4.0, jitter=0.0, clock=lambda: 0.0)
    cache.relist()
    for _ in range(4):
        cache.backoff.next()
    api.watch_streams["nodes"] = [
        [{"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "130"}}}, ApiError(500, "Internal")]
    ]
    with pytest.raises(ApiError):
        cache.watch_once()
    assert cache.backoff.next() == 4.0, "a bookmark is no object: a server sending only those stays backed"


def test_a_cache_stale_through_failures_relists_and_is_fresh_at_once() -> None:
    """After an outage a quiet watch would prove nothing until its first bookmark; a list does."""
    api, cache, _ = make()
    cache.relist()
    api.watch_streams["nodes"] = [[ApiError(0, "NewConnectionError")] for _ in range(3)]
    for _ in range(3):
        with pytest.raises(ApiError):
            cache.watch_once()
        cache.failures += 1  # as run() counts them
    assert not cache.fresh()
    lists = cache.lists

    api.watch_streams["nodes"] = [[]]
    seen: list[bool] = []
    original = api.watch_objects

    def watch(resource: Resource, rv: str, timeout: int) -> Iterator[JSON]:
        seen.append(cache.fresh())
        return original(resource, rv, timeout)

    api.watch_objects = watch  # type: ignore[method-assign,assignment]
    with pytest.raises(ApiError, match="ShortWatch"):
        cache.watch_once()
    assert cache.lists == lists + 1, "relisted instead of resuming"
    assert seen == [True], "fresh from the list, before the watch delivered anything"


def test_a_410_error_event_proves_nothing_about_the_watch() -> None:
    """Compacted: each watch opens into an ERROR 410 and the relist fails. That is a failing cache,
    not a streaming one: the failures add up to stale and the backoff keeps growing."""
    api, cache, _ = make()
    cache.backoff = Backoff(initial=0.8, cap=4.0, jitter=0.0, clock=lambda: 0.0)
    cache.relist()
    gone = {"type": "ERROR", "object": {"code": 410, "reason": "Expired"}}
    api.watch_streams["nodes"] = [[gone] for _ in range(3)]
    api.fail["list_objects"] = [ApiError(429, "TooManyRequests", retry_after=1.0)] * 3
    for _ in range(3):
        with pytest.raises(ApiError):
            cache.watch_once()
        cache.failures += 1  # as run() counts them
        cache.backoff.next()
    assert cache.failures == 3 and not cache.fresh()
    assert cache.backoff.next() == 4.0, "never reset by the ERROR events"


class RecordingStop(threading.Event):
    """A stop event whose waits return at once and are recorded; set after ``limit`` waits."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit
        self.waits: list[float] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(float(timeout or 0.0))
        if len(self.waits) >= self.limit:
            self.set()
        return self.is_set()


def overloaded_relists(stale_retry: float | None) -> list[float]:
    """The waits of a cache whose every list meets 500, 503 or 429 (the API just after an outage)."""
    api = FakeApi()
    api.fail["list_objects"] = [ApiError(code, "Overloaded") for code in (500, 503, 429) * 4]
    cache: WatchCache[NodeRecord] = WatchCache(
        api, NODES, node_from_api, stale_retry_seconds=stale_retry, failure_threshold=3
    )
    stop = RecordingStop(limit=12)
    cache.run(stop)
    assert not cache.fresh()
    return stop.waits


def test_a_stale_node_cache_retries_within_its_stale_retry_however_the_backoff_grew() -> None:
    """client-go's reflector backoff (0.8 s doubling) grows through 429/5xx; a stale node cache
    withholds every taint, so once stale it lists again within ``stale_retry_seconds``, jittered
    between half and all of it (never a fixed beat, never below half: a 429 still waits)."""
    capped = overloaded_relists(1.0)
    assert all(w >= 0.8 for w in capped[:2])
    assert capped[1] > 1.0, "not stale yet after two failures: the reflector's backoff alone"
    assert all(0.5 <= w <= 1.0 for w in capped[2:]), capped
    assert len(set(capped[2:])) > 1, "jittered"
    uncapped = overloaded_relists(None)
    assert max(uncapped[2:]) >= 4.0, "without it (pods, JobSets) the backoff keeps growing"


def test_stale_retry_must_be_positive() -> None:
    with pytest.raises(ValueError, match="stale_retry_seconds"):
        WatchCache(FakeApi(), NODES, node_from_api, stale_retry_seconds=0.0)


def _failed_pod(name: str, message: str) -> dict[str, Any]:
    from tests.hotswap.hotswap_fakes import pod_obj

    obj = pod_obj(name, "train", job="train-slice-0", node="n0", priority=1000, phase="Failed")
    obj["status"]["containerStatuses"] = [
        {"name": "trainer", "state": {"terminated": {"exitCode": 1, "reason": "Error", "message": message}}}
    ]
    return obj


def _pod_cache() -> WatchCache[Any]:
    """A pod cache as the controller builds it: deleted failed pods with terminations kept."""
    from tpu_platform.hotswap.adapter.convert import pod_from_api

    cache: WatchCache[Any] = WatchCache(
        FakeApi(),
        Resource("pods"),
        pod_from_api,
        keep_deleted=lambda pod: pod.finished and bool(pod.terminations),
    )
    cache.relist()
    return cache


def test_a_failed_pod_deleted_before_a_reconcile_is_shown_to_one_snapshot() -> None:
    """JobSet deletes a failed pod within a second; its TPU error report must reach a reconcile."""
    cache = _pod_cache()
    failed = _failed_pod("p0", "SLICE_FAILURE_CHIP_DRIVER_ERROR")
    assert cache.apply_event(event("ADDED", failed, "10"))
    assert cache.apply_event(event("DELETED", failed, "11"))
    assert cache.values() == []
    first = cache.snapshot()
    assert [p.name for p in first] == ["p0"]
    assert first[0].terminations and "SLICE_FAILURE" in first[0].terminations[0].message
    assert cache.snapshot() == [], "shown once"


def test_a_deleted_running_pod_is_not_kept() -> None:
    from tests.hotswap.hotswap_fakes import pod_obj

    cache = _pod_cache()
    running = pod_obj("p1", "train", job="train-slice-0", node="n0", priority=1000)
    assert cache.apply_event(event("ADDED", running, "10"))
    assert cache.apply_event(event("DELETED", running, "11"))
    assert cache.snapshot() == []


# --- through the real client, against the API double ----------------------------------------------
@pytest.fixture
def double() -> Iterator[ApiDouble]:
    with ApiDouble(bookmark_interval=0.5, guard_lease=LEASE) as d:
        yield d


def run_in_thread(target: object, *args: object) -> threading.Thread:
    t = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
    t.start()
    return t


def node_cache(d: ApiDouble, **kw: object) -> WatchCache[NodeRecord]:
    return WatchCache(kube(d, "c"), NODES, node_from_api, watch_timeout_seconds=5, **kw)  # type: ignore[arg-type]


def test_watches_closed_at_once_back_off_instead_of_hot_looping(double: ApiDouble) -> None:
    seed_cluster(double)
    cache = node_cache(double, backoff=Backoff(initial=0.2, cap=0.4))
    double.faults.add(Fault(drop_after=0.0, verbs=("watch",), times=None))
    stop = threading.Event()
    t = run_in_thread(cache.run, stop)
    time.sleep(2.0)
    stop.set()
    t.join(5)
    watches = [s for s in double.served if s.request.verb == "watch"]
    assert 2 <= len(watches) <= 10, f"{len(watches)} watch requests in 2 s"


def test_too_large_resource_version_relists(double: ApiDouble) -> None:
    seed_cluster(double)
    cache = node_cache(double)
    cache.relist()
    cache.resource_version = str(double.store.rv + 1000)
    cache.watch_once()
    assert cache.lists == 2 and int(cache.resource_version) <= double.store.rv


def test_compacted_resource_version_relists_and_sees_changes(double: ApiDouble) -> None:
    seed = seed_cluster(double)
    cache = node_cache(double)
    cache.relist()
    fail_pool(seed, "a")
    double.store.compact()
    cache.watch_once()
    assert cache.lists == 2
    record = cache.get("a-1")
    assert record is not None and record.node.condition("Ready").status == "Unknown"  # type: ignore[union-attr]


def test_bookmarks_advance_the_resume_point(double: ApiDouble) -> None:
    seed = seed_cluster(double)
    cache = node_cache(double)
    cache.relist()
    seed.pod({**seed.get("pods", "high-0", "default"), "metadata": {"name": "x", "namespace": "default"}})
    rv = double.store.rv
    stop = threading.Event()
    t = run_in_thread(cache.run, stop)
    assert wait_for(lambda: cache.resource_version == str(rv), 3), "a bookmark carried the newer version"
    stop.set()
    t.join(8)


def test_after_an_outage_a_quiet_cache_is_fresh_within_one_backoff_step() -> None:
    """No object changes and no bookmark for 60 s: resuming the watch would prove nothing until
    one came; the stale cache lists again on its first attempt after the outage instead."""
    with ApiDouble(bookmark_interval=60.0) as d:
        seed_cluster(d)
        cache = node_cache(d)
        stop = threading.Event()
        t = run_in_thread(cache.run, stop)
        assert wait_for(cache.fresh, 5)
        d.stop()
        assert wait_for(lambda: not cache.fresh(), 10), "refused three times in a row: stale"
        lists = cache.lists
        d.start()
        assert wait_for(cache.fresh, 8), "fresh again from a list, not from a bookmark a minute away"
        assert cache.lists == lists + 1
        stop.set()
        d.close_watches()
        t.join(5)
