"""Chaos run: two real controller processes against the loopback API double through random faults.

The double (``tests.kubeapi``) plays kube-apiserver; a small world loop plays the node lifecycle
controller, the kubelet and JobSet: nodes of random pools go NotReady and recover, evicted pods
terminate and their JobSet's pods come back on a healthy free pool. Meanwhile a fault schedule
injects API outages (refused connections), connection resets, 409/429/500/503 replies (429 with
Retry-After), slow writes, compactions (410 on resume), SIGTERM of the leader mid-batch, and the
Lease taken over by another holder (which the double makes legitimate: it refuses the holder's
renewals for a lease duration first, as an unreachable API would).

Each outage starts with a fresh pool failure, so the controller has something to do the moment the
API is back; ``max_seconds_to_act_after_outage`` is the time from the outage's end to that pool's
taint. Outages and Lease takeovers never overlap (during a takeover no replica may lead for two
lease durations, which is not the controller's to shorten), and an outage never starts inside the
previous one's act-again window (lease duration + retry period): the first outage's time to act
would then include the second outage's length. ``writes_without_lease`` is judged by
the double at each write (the writer must hold an unexpired Lease by the server's clock),
``double_evictions`` counts pods evicted successfully more than once, ``thread_deaths`` the
"thread died" log lines and tracebacks.

A missed action, precisely: a failure episode (one node of a pool NotReady, from the failure until
it recovers, or until the run's settle time ends) whose pool was never tainted although, during
it, a leader could act for longer than :data:`ACT_NEEDS` without a break. "Could act" is sampled
by the bench every loop: the API serves (no outage), a controller replica (not the intruder) is
running, not sent SIGTERM, and its last renewal in the Lease is younger than its write budget
(renew deadline - retry period, the controller's documented margin). :data:`ACT_NEEDS` is what the
controller's documented timings need once the node is bad: the detection threshold T_bad, one
reconcile period (the loop's periodic pass) and one retry period (a write out of budget or failed on the
first try is issued again). An untainted episode without such a stretch (a handover, an outage, a
leader that had just lost its lease) is not a miss: it is counted in ``excluded_no_leader`` and
listed as ``excluded:`` on stderr, so the two never mix. Request faults (429, 5xx, resets, slow
writes, cut watches) do not excuse an episode: surviving them is the controller's job.

Faults come from two sources: every request meets one with the constant probability
:data:`REQUEST_FAULT_RATE`, and cluster-level faults (compactions, outages, SIGTERM of the leader, a
Lease takeover) come at ``rate`` a second. The share does not depend on how the run is going: a
share raised while the count lags (after an outage, say) would hit the controller hardest exactly
while it recovers, and measure the schedule rather than the controller. It is set high enough for
the full run to inject well over 1,000 faults (requests the schedule saw go to stderr as
``requests``).

    python -m bench.chaos            # ~9.5 min, >= 1,000 injected faults
    python -m bench.chaos --quick    # under a minute

Ends with one JSON line: the keys of the target, then ``episodes`` and ``excluded_no_leader``.
The per-kind fault counts, restarts and exit codes go to stderr, with ``clock offset`` (wall
minus monotonic seconds) for ``bench.chaos_causes``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from tests.hotswap.replicas import Replica, write_config
from tests.kubeapi import ApiDouble, Fault, Request, Seeder
from tests.kubeapi.objects import jobset_obj, lease_obj, node_obj, pod_obj
from tests.kubeapi.store import ApiStatus, node_ready, rfc3339
from tpu_platform.hotswap.core import constants as k

LEASE_NS, LEASE_NAME = "hotswap", "tpu-hotswap"
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 8.0, 6.0, 1.0
"""Shorter than the 15/10/2 s defaults (same ratios as client-go requires) so that a run has
enough leader-election traffic and handovers to fault; the target scales with them."""
T_BAD = 2.0
FAULT_TTL = 3.0
WORLD_STEP_SECONDS = 0.25
REQUEST_FAULT_RATE = 0.2
"""Share of API requests that meet a fault (status, reset, slow write, watch cut), the same all
run long."""
RECONCILE_INTERVAL = 0.5
ACT_NEEDS = T_BAD + RECONCILE_INTERVAL + RETRY_PERIOD
"""Seconds a leader must be able to reach the API, without a break, for an untainted episode to
count as missed: T_bad, one reconcile period and one retry period."""
RESTART_DELAY = 5.0
"""Seconds before an exited replica is started again (the kubelet's restart backoff starts at 10 s)."""
SETTINGS = {
    "unhealthy_after_seconds": T_BAD,
    "healthy_after_seconds": 4,
    "flapping_healthy_after_seconds": 4,
    "flap_threshold": 1000,
    "dead_node_confirm_seconds": 3,
    "preemption": False,
}
RUNTIME = {
    "lease_namespace": LEASE_NS,
    "lease_name": LEASE_NAME,
    "lease_duration_seconds": LEASE_DURATION,
    "renew_deadline_seconds": RENEW_DEADLINE,
    "retry_period_seconds": RETRY_PERIOD,
    "reconcile_interval_seconds": RECONCILE_INTERVAL,
    "min_reconcile_gap_seconds": 0.1,
    "watch_timeout_seconds": 5,
    "metrics_port": 0,
    "health_port": 0,
    "bind_address": "127.0.0.1",
    "log_level": "INFO",
}


@dataclass(slots=True)
class Episode:
    pool: str
    node: str
    failed_at: float
    recover_at: float
    after_outage: float | None = None
    """Monotonic end of the outage this episode was started during."""
    tainted_at: float | None = None
    recovered: bool = False
    ended_at: float | None = None
    """Monotonic time the node recovered (None: still failed when the run ended)."""


@dataclass(frozen=True, slots=True)
class Stretch:
    """A time one leader could act: the API served and it held the Lease (server's clock)."""

    holder: str
    start: float
    end: float


def longest_stretch(stretches: list[Stretch], start: float, end: float) -> float:
    """The longest single stretch inside ``[start, end]`` (seconds)."""
    return max((max(0.0, min(s.end, end) - max(s.start, start)) for s in stretches), default=0.0)


def judge(
    episodes: list[Episode], stretches: list[Stretch], *, end: float, needs: float = ACT_NEEDS
) -> tuple[list[Episode], list[Episode]]:
    """(missed, excluded): untainted episodes with, and without, a stretch longer than ``needs``."""
    missed: list[Episode] = []
    excluded: list[Episode] = []
    for e in episodes:
        if e.tainted_at is not None:
            continue
        until = e.ended_at if e.ended_at is not None else end
        (missed if longest_stretch(stretches, e.failed_at, until) > needs else excluded).append(e)
    return missed, excluded


@dataclass(slots=True)
class Figures:
    faults: Counter[str] = field(default_factory=Counter)
    outages: int = 0
    leader_changes: int = 0
    act_after_outage: list[float] = field(default_factory=list)


class World:
    """Cluster actors other than the controller, driven from the bench's main loop."""

    def __init__(self, api: ApiDouble, pools: int, rng: random.Random) -> None:
        self.api = api
        self.seed = Seeder(api)
        self.rng = rng
        self.pools = [f"p{i:02d}" for i in range(pools)]
        self.episodes: list[Episode] = []
        self.generation: dict[str, int] = {}
        now = time.time()
        for pool in self.pools:
            for i in range(4):
                self.seed.node(node_obj(f"{pool}-{i}", pool, since=now - 9000))
        for j, pool in enumerate(self.pools[: pools // 2]):
            name = f"job{j}"
            self.seed.jobset(jobset_obj(name))
            self.generation[name] = 0
            self._place(name, pool)

    def _place(self, jobset: str, pool: str) -> None:
        gen = self.generation[jobset]
        now = time.time()
        for i in range(4):
            self.seed.pod(
                pod_obj(
                    f"{jobset}-g{gen}-{i}",
                    jobset,
                    job=f"{jobset}-slice-0",
                    node=f"{pool}-{i}",
                    priority=1_000_000,
                    started=now,
                )
            )

    def _nodes(self) -> dict[str, dict]:
        return {n["metadata"]["name"]: n for n in self.seed.list("nodes")}

    def tainted(self, pool: str, nodes: dict[str, dict] | None = None) -> bool:
        nodes = nodes if nodes is not None else self._nodes()
        return any(
            t.get("key") == k.UNHEALTHY_TAINT_KEY
            for n in nodes.values()
            if n["metadata"]["labels"].get(k.NODEPOOL_LABEL) == pool
            for t in (n.get("spec") or {}).get("taints") or []
        )

    def busy_pools(self) -> set[str]:
        return {e.pool for e in self.episodes if not e.recovered}

    def fail_random(self, now: float, *, after_outage: float | None = None) -> Episode | None:
        nodes = self._nodes()
        free = [
            p
            for p in self.pools
            if p not in self.busy_pools()
            and not self.tainted(p, nodes)
            and all(node_ready(nodes[f"{p}-{i}"]) for i in range(4))
        ]
        if not free:
            return None
        pool = self.rng.choice(free)
        node = f"{pool}-{self.rng.randrange(4)}"
        self.seed.set_node_ready(node, "Unknown", time.time() - 30)
        ep = Episode(pool, node, now, now + self.rng.uniform(12, 20), after_outage=after_outage)
        self.episodes.append(ep)
        return ep

    def step(self, now: float) -> None:
        """Recover due nodes, note taints, terminate evicted pods, restart JobSets on free pools."""
        nodes = self._nodes()
        for ep in self.episodes:
            if ep.tainted_at is None and not ep.recovered and self.tainted(ep.pool, nodes):
                ep.tainted_at = now
            if not ep.recovered and now >= ep.recover_at:
                self.seed.set_node_ready(ep.node, "True", time.time())
                ep.recovered = True
                ep.ended_at = now
        self.api.store.finish_terminating(ready_only=False)
        pods = self.seed.list("pods")
        running = Counter(p["metadata"]["labels"][k.JOBSET_NAME_LABEL] for p in pods)
        used = {p["spec"].get("nodeName", "").rsplit("-", 1)[0] for p in pods}
        nodes = self._nodes()
        for jobset in self.generation:
            if running[jobset]:
                continue
            free = [
                p
                for p in self.pools
                if p not in used
                and p not in self.busy_pools()
                and not self.tainted(p, nodes)
                and all(node_ready(nodes[f"{p}-{i}"]) for i in range(4))
            ]
            if free:
                self.generation[jobset] += 1
                pool = self.rng.choice(free)
                used.add(pool)
                self._place(jobset, pool)


class Chaos:
    def __init__(self, *, seconds: float, rate: float, pools: int, seed: int, workdir: Path) -> None:
        self.seconds = seconds
        self.rate = rate
        self.rng = random.Random(seed)
        self.api = ApiDouble(bookmark_interval=5.0, guard_lease=(LEASE_NS, LEASE_NAME)).start()
        self.world = World(self.api, pools, self.rng)
        kubeconfig = self.api.kubeconfig(str(workdir / "kubeconfig"))
        config = write_config(workdir / "config.yaml", settings=SETTINGS, runtime=RUNTIME)
        self.replicas = [
            Replica(f"hotswap-{i}", kubeconfig=kubeconfig, config=config, log_dir=workdir) for i in range(2)
        ]
        self.figures = Figures()
        self.evictions: Counter[str] = Counter()
        self.api.on_write = self._on_write
        self._holder = ""
        self._lock = threading.Lock()
        self._intruder: tuple[float, Fault] | None = None
        self.faulting = True
        self.api.faults.background = self.request_fault
        self.serving = True
        self.stretches: list[Stretch] = []
        self._able: tuple[str, float] | None = None
        self._last_sample = time.monotonic()
        self._outage_ended = -float("inf")
        self._takeover_until = -float("inf")
        """A takeover refuses the holder's renewals for a lease duration, then the intruder holds
        the Lease for another: outages and takeovers never overlap, so the time to act again after
        an outage is the controller's own."""
        self.drawn = 0
        """Request faults the background schedule has drawn."""
        self.consulted = 0
        """Requests the background schedule saw (while faulting)."""
        self.started = time.monotonic()
        self._sigtermed: dict[str, object] = {}
        """The process each replica was last sent SIGTERM in (it stops deciding at once)."""

    def _on_write(self, served: object) -> None:
        req = served.request  # type: ignore[attr-defined]
        if req.verb == "evict" and served.status == 201:  # type: ignore[attr-defined]
            with self._lock:
                self.evictions[f"{req.namespace}/{req.name}"] += 1

    # --- observation -------------------------------------------------------------------------------
    def holder(self) -> str:
        try:
            lease = self.world.seed.get("leases", LEASE_NAME, LEASE_NS)
        except ApiStatus:
            return ""
        return str((lease.get("spec") or {}).get("holderIdentity") or "")

    def watch_holder(self) -> None:
        h = self.holder()
        if h and h != self._holder:
            if self._holder:
                self.figures.leader_changes += 1
            self._holder = h

    def able(self) -> str:
        """The replica that can act now ("" if none): the API serving, the replica running and not
        sent SIGTERM, and its last renewal of the Lease (the server's record) younger than the
        controller's write budget (renew deadline - retry period)."""
        if not self.serving:
            return ""
        try:
            spec = self.world.seed.get("leases", LEASE_NAME, LEASE_NS).get("spec") or {}
        except ApiStatus:
            return ""
        holder, renewed = spec.get("holderIdentity"), spec.get("renewTime")
        if not holder or not renewed:
            return ""
        age = time.time() - datetime.fromisoformat(str(renewed).replace("Z", "+00:00")).timestamp()
        if age >= RENEW_DEADLINE - RETRY_PERIOD:
            return ""
        for r in self.replicas:
            if r.identity == holder and r.running and self._sigtermed.get(r.identity) is not r.proc:
                return r.identity
        return ""

    def sample(self, now: float) -> None:
        """Extend or close the current stretch (called every loop, including during outages)."""
        who = self.able()
        current = self._able
        if current is not None and current[0] != who:
            self.stretches.append(Stretch(current[0], current[1], self._last_sample))
            current = None
        if current is None and who:
            current = (who, now)
        self._able = current
        self._last_sample = now

    def pause(self, seconds: float) -> None:
        """Sleep, still sampling who can act."""
        deadline = time.monotonic() + seconds
        while (now := time.monotonic()) < deadline:
            self.sample(now)
            time.sleep(0.05)

    def close_stretch(self, now: float) -> None:
        if self._able is not None:
            self.stretches.append(Stretch(self._able[0], self._able[1], now))
            self._able = None

    # --- faults ------------------------------------------------------------------------------------
    def add(self, fault: Fault) -> None:
        """A one-off request fault: dropped if no matching request comes within FAULT_TTL."""
        fault.expires = time.monotonic() + FAULT_TTL
        self.api.faults.add(fault)

    def request_fault(self, req: Request) -> Fault | None:
        """The background schedule: each request fails with probability REQUEST_FAULT_RATE."""
        with self._lock:
            if not self.faulting:
                return None
            self.consulted += 1
            if self.rng.random() >= REQUEST_FAULT_RATE:
                return None
            self.drawn += 1
            return self._draw(req.verb, write=req.write)

    def _draw(self, verb: str, *, write: bool) -> Fault:
        """One request fault of the mix, for a request of ``verb`` (call with the lock held)."""
        kind = self.rng.choices(["http", "reset", "slow", "drop"], weights=[55, 20, 15, 10])[0]
        if kind == "slow" and write:
            return Fault(delay=self.rng.uniform(0.3, 1.5), label="slow_write")
        if kind == "drop" and verb == "watch":
            return Fault(drop_after=self.rng.uniform(0.2, 3.0), label="watch_cut")
        if kind == "reset":
            return Fault(reset=True, label="reset")
        codes = [429, 500, 503] + ([409] if verb in ("patch", "update") else [])
        code = self.rng.choice(codes)
        return Fault(status=code, retry_after=1 if code == 429 else None, label=f"http_{code}")

    def inject(self, now: float) -> None:
        kind = self.rng.choices(["compact", "outage", "sigterm", "takeover"], weights=[8, 3, 2, 2])[0]
        f = self.figures
        if kind == "compact":
            self.api.store.compact()
            self.api.close_watches()
            f.faults["compact_410"] += 1
        elif kind == "outage":
            self.outage()
        elif kind == "sigterm":
            self.sigterm_leader()
        else:
            self.takeover()

    def outage(self) -> None:
        if time.monotonic() < self._takeover_until:
            return  # the Lease is another holder's: acting again after the outage could not be timed
        if time.monotonic() < self._outage_ended + LEASE_DURATION + RETRY_PERIOD:
            return  # inside the last outage's act-again window: its time to act would include this one
        f = self.figures
        seconds = self.rng.choice([0.3, 1.0, 2.0, 4.0, 8.0, 12.0])
        self.api.stop()
        ep = self.world.fail_random(time.monotonic())
        f.outages += 1
        f.faults["outage"] += 1
        self.serving = False
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for r in self.replicas:
                r.ensure_running(restart_delay=RESTART_DELAY)
            self.sample(time.monotonic())
            time.sleep(0.1)
        self.api.start()
        self.serving = True
        self._outage_ended = time.monotonic()
        if ep is not None:
            ep.after_outage = time.monotonic()
            ep.recover_at = max(ep.recover_at, ep.after_outage + 20.0)

    def sigterm_leader(self) -> None:
        """SIGTERM the replica that leads now (not one the Lease still names after it stopped)."""
        holder = self.able()
        for r in self.replicas:
            if r.identity == holder and r.running:
                self.world.fail_random(time.monotonic())
                for _ in range(3):
                    self.add(Fault(delay=0.5, verbs=("patch", "evict"), label="slow_write"))
                self.pause(self.rng.uniform(0.5, 1.5))
                self._sigtermed[r.identity] = r.proc
                r.sigterm()
                self.figures.faults["sigterm_leader"] += 1
                return

    def takeover(self) -> None:
        holder = self.holder()
        if not holder or holder == "intruder" or self._intruder is not None:
            return
        if time.monotonic() < self._outage_ended + LEASE_DURATION + RETRY_PERIOD:
            return  # not inside an outage's act-again window: the two would add up
        self._takeover_until = time.monotonic() + 2 * LEASE_DURATION + 0.5
        self.figures.faults["lease_taken"] += 1
        rule = self.api.faults.add(
            Fault(
                status=500,
                resources=("leases",),
                verbs=("update", "create"),
                identity=holder,
                times=None,
                label="takeover_refusal",
            )
        )
        self._intruder = (time.monotonic() + LEASE_DURATION + 0.5, rule)

    def finish_takeover(self, now: float) -> None:
        pending = self._intruder
        if pending is None or now < pending[0]:
            return
        self._intruder = None
        refused = pending[1]
        self.api.faults.remove(refused)
        try:
            lease = self.world.seed.get("leases", LEASE_NAME, LEASE_NS)
        except ApiStatus:
            return
        spec = lease.get("spec") or {}
        if spec.get("holderIdentity") != refused.identity or self.api.holds_lease(refused.identity):
            return  # another replica took over meanwhile, or the record is still valid: no forced takeover
        renewed = spec.get("renewTime")
        stamp = rfc3339(time.time(), micro=True)
        taken = lease_obj(LEASE_NAME, LEASE_NS, "intruder", time.time(), duration=int(LEASE_DURATION))
        taken["spec"]["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        if renewed:
            taken["spec"]["acquireTime"] = stamp
        self.world.seed.update("leases", taken)

    # --- the run -----------------------------------------------------------------------------------
    def run(self) -> dict[str, object]:
        for r in self.replicas:
            r.start()
        started = time.monotonic()
        next_fault = started + 5.0
        next_failure = started + 3.0
        next_step = started
        self.started = started
        while time.monotonic() - started < self.seconds:
            now = time.monotonic()
            for r in self.replicas:
                r.ensure_running(restart_delay=RESTART_DELAY)
            self.sample(now)
            self.watch_holder()
            self.finish_takeover(now)
            if now >= next_step:
                # The world reads every node and pod from the store: not more often than needed,
                # or the bench itself would slow the API down.
                self.world.step(now)
                next_step = now + WORLD_STEP_SECONDS
            if now >= next_failure:
                self.world.fail_random(now)
                next_failure = now + self.rng.uniform(0.7, 1.4)
            while now >= next_fault:
                self.inject(now)
                next_fault += self.rng.expovariate(self.rate)
            time.sleep(0.05)
        return self.finish()

    def finish(self) -> dict[str, object]:
        # Let the last episodes play out without new faults (enough for any to be acted on).
        settle = time.monotonic() + LEASE_DURATION + RETRY_PERIOD + 10
        self._intruder = None
        self.faulting = False
        self.api.faults.clear()
        while time.monotonic() < settle:
            for r in self.replicas:
                r.ensure_running(restart_delay=RESTART_DELAY)
            self.sample(time.monotonic())
            self.world.step(time.monotonic())
            time.sleep(0.1)
        end = time.monotonic()
        self.close_stretch(end)
        for r in self.replicas:
            r.stop()
        self.api.stop()
        logs = [line for r in self.replicas for line in r.logs()]
        thread_deaths = sum(1 for line in logs if line.get("msg") == "thread died")
        tracebacks = sum(1 for line in logs if "Traceback" in str(line.get("raw", "")))
        missed, excluded = judge(self.world.episodes, self.stretches, end=end)
        figs_act = [
            max(0.0, e.tainted_at - e.after_outage)
            for e in self.world.episodes
            if e.after_outage is not None and e.tainted_at is not None
        ]
        self.figures.act_after_outage.extend(figs_act)
        for e in self.world.episodes:
            if e.after_outage is not None:
                took = "untainted" if e.tainted_at is None else f"{e.tainted_at - e.after_outage:.2f}"
                print(
                    f"after outage: {e.pool} ended {e.after_outage:.3f} tainted after {took}", file=sys.stderr
                )
        for e in missed:
            print(f"missed: {e}", file=sys.stderr)
        for e in excluded:
            print(f"excluded: {e}", file=sys.stderr)
        for st in self.stretches:
            print(f"stretch: {st.holder} {st.start:.3f} {st.end:.3f}", file=sys.stderr)
        for w in self.api.writes_without_lease:
            print(f"write without lease: {w}", file=sys.stderr)
        figs = self.figures
        by_kind = {key: n for key, n in self.api.faults.fired_by.items() if key != "takeover_refusal"}
        by_kind.update(figs.faults)
        return {
            "faults": sum(by_kind.values()),
            "outages": figs.outages,
            "leader_changes": figs.leader_changes,
            "double_evictions": sum(1 for n in self.evictions.values() if n > 1),
            "writes_without_lease": len(self.api.writes_without_lease),
            "thread_deaths": thread_deaths + tracebacks,
            "missed_actions": len(missed),
            "max_seconds_to_act_after_outage": round(max(figs.act_after_outage, default=0.0), 2),
            "episodes": len(self.world.episodes),
            "excluded_no_leader": len(excluded),
            "by_kind": by_kind,
            "restarts": sum(r.starts - 1 for r in self.replicas),
            "requests": self.consulted,
            "exit_codes": dict(Counter(c for r in self.replicas for c in r.exit_codes)),
        }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--quick", action="store_true", help="under a minute")
    p.add_argument("--seconds", type=float, default=None)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--keep", default=None, help="keep the replicas' logs in this directory")
    args = p.parse_args(argv)
    seconds = args.seconds or (25.0 if args.quick else 540.0)
    rate = 0.25
    with tempfile.TemporaryDirectory(prefix="hotswap-chaos-") as tmp:
        workdir = Path(args.keep or tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        chaos = Chaos(seconds=seconds, rate=rate, pools=28, seed=args.seed, workdir=workdir)
        print(f"clock offset: {time.time() - time.monotonic():.3f}", file=sys.stderr)
        result = chaos.run()
    detail = {key: result.pop(key) for key in ("by_kind", "restarts", "requests", "exit_codes")}
    print(json.dumps(detail), file=sys.stderr)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
