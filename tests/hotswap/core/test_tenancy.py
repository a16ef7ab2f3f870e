"""The team is the tenant: a team's own reports never cost another team its work, and are rate-limited.

Each attack is the one an adversarial review reproduced through the controller's own rules: a team alone
on its slice writes the TPU runtime's error into its pods' termination messages; its restart then takes
a slice from another team's lower-priority JobSet, and repeating it takes a second pool out of service;
a team with two namespaces counts as two independent tenants.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from tpu_platform.hotswap.core import EvictPod, PatchNode, Settings, Snapshot, apply_actions, decide
from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.model import FAILED, JobSet, Pod, Termination
from tpu_platform.hotswap.core.settings import settings_from_mapping
from tpu_platform.hotswap.core.tenancy import has_word, parse_declarations, team_of_namespace, tenant_key
from tpu_platform.testing.hotswap_builders import (
    make_jobset,
    make_nodes,
    make_pools,
    pending_pods,
    running_pods,
)

T0 = 100_000.0
CHIP_ERROR = "E1201 session_master.cc] Detected failure SLICE_FAILURE_CHIP_DRIVER_ERROR in session 1f"
TEAMS = {"a": ["team-a", "team-a2"], "b": ["team-b"]}
S = Settings(max_bad_node_fraction=1.0, teams=tuple((t, tuple(ns)) for t, ns in sorted(TEAMS.items())))
POOLS = make_pools("p", 6, "4x4")
NODES = {p.name: make_nodes(p, ready_since=T0 - 7200) for p in POOLS}
A_HIGH = make_jobset("train", priority=200, namespace="team-a")
A_HIGH2 = make_jobset("tune", priority=200, namespace="team-a2")
A_LOW = make_jobset("sweep", priority=50, namespace="team-a2")
B_LOW = make_jobset("serve", priority=50, namespace="team-b")
B_LOW2 = make_jobset("batch", priority=50, namespace="team-b")


def crashed(pod: Pod, at: float) -> Pod:
    return replace(pod, phase=FAILED, terminations=(Termination("trainer", 1, "Error", CHIP_ERROR, at),))


def cluster(placed: Sequence[tuple[JobSet, int]], *, spare: int = 0, now: float = T0) -> Snapshot:
    """Each JobSet on its pool, then ``spare`` free pools; no other pool."""
    pools = POOLS[: max(i for _, i in placed) + 1 + spare]
    pods = [p for js, i in placed for p in running_pods(js, [POOLS[i]], NODES, started=T0 - 3600)]
    return Snapshot(
        now,
        pools,
        tuple(n for pool in pools for n in NODES[pool.name]),
        tuple(js for js, _ in placed),
        tuple(pods),
    )


def report(snap: Snapshot, js: JobSet, count: int, at: float) -> Snapshot:
    """``count`` of ``js``'s pods write the chip error into their termination messages."""
    out, done = [], 0
    for p in snap.pods:
        if p.jobset == js.key and p.phase != FAILED and done < count:
            out.append(crashed(p, at))
            done += 1
        else:
            out.append(p)
    return replace(snap, now=max(snap.now, at + 0.5), pods=tuple(out))


def occupy(snap: Snapshot, js: JobSet, pool: int) -> Snapshot:
    """``js`` lands on the free pool ``pool`` (the spare is gone before the restart lands)."""
    pods = running_pods(js, [POOLS[pool]], NODES, started=snap.now)
    return replace(snap, jobsets=(*snap.jobsets, js), pods=(*snap.pods, *pods))


def restart(snap: Snapshot, evicted: set[str], now: float) -> Snapshot:
    """JobSet recreates the Jobs of each JobSet whose pods were evicted: its pods are pending."""
    keep = [p for p in snap.pods if p.jobset not in evicted]
    fresh = [p for js in snap.jobsets if js.key in evicted for p in pending_pods(js, unschedulable_since=now)]
    return replace(snap, now=now, pods=(*keep, *fresh))


def step(snap: Snapshot, s: Settings = S) -> tuple[Snapshot, list[tuple[str, ...]], list[str]]:
    """One reconcile, its actions applied, evicted JobSets restarted: the state, victims, notes."""
    d = decide(snap, s)
    after = apply_actions(snap, d.actions)
    evicted = {a.jobset for a in d.actions if isinstance(a, EvictPod) and a.jobset is not None}
    return restart(after, evicted, snap.now), [p.victims for p in d.preemptions], list(d.notes)


def declared(snap: Snapshot, pool: str, s: Settings = S) -> bool:
    status = decide(snap, s).pool(pool)
    return status is not None and status.declared


def test_without_a_spare_slice_a_teams_word_keeps_its_pool_in_service() -> None:
    """Tainted, the restart would find no free node and kube-scheduler would preempt team b's pods
    for it (seen on the live tier): the pool stays suspect and the JobSet restarts in place."""
    snap = report(cluster([(A_HIGH, 0), (B_LOW, 1)]), A_HIGH, 2, T0)
    d = decide(snap, S)
    assert not d.pool("p-0").declared and "p-0" in d.suspects  # type: ignore[union-attr]
    assert any("no free slice of its shape" in n for n in d.notes), d.notes
    for dt in (20, 60, 300):
        snap, victims, _ = step(replace(snap, now=T0 + dt))
        assert victims == [] and not declared(snap, "p-0")


def test_a_pool_its_restart_just_emptied_is_not_its_own_spare() -> None:
    """JobSet deletes the failed Jobs' pods within milliseconds: the reports outlive them in the
    pool's annotation, and the emptied pool must not count as the free slice for its own restart."""
    snap = report(cluster([(A_HIGH, 0), (B_LOW, 1)]), A_HIGH, 2, T0)
    snap, _, _ = step(snap)  # stores the reports; not declared (no spare)
    emptied = restart(snap, {A_HIGH.key}, T0 + 1)
    for dt in (1, 2, 20):
        d = decide(replace(emptied, now=T0 + dt), S)
        assert not d.pool("p-0").declared, dt  # type: ignore[union-attr]
        assert any("no free slice" in n for n in d.notes), d.notes


def test_a_teams_own_reports_never_cost_another_team_its_slice() -> None:
    snap = report(cluster([(A_HIGH, 0), (B_LOW, 1)], spare=1), A_HIGH, 2, T0)
    snap, _, _ = step(snap)
    assert declared(snap, "p-0"), "with a spare slice for the restart, the team's word takes its pool out"
    on_pool = [n for n in snap.nodes if n.pool == "p-0"]
    assert all(
        [d.tenant for d in parse_declarations(n.annotations.get(k.TENANT_DECLARED_ANNOTATION), snap.now)]
        == ["team:a"]
        for n in on_pool
    )
    snap = occupy(snap, B_LOW2, 2)  # the spare is taken before the restart lands
    for dt in (20, 60, 300):
        _, victims, notes = step(replace(snap, now=T0 + dt))
        assert victims == [], f"team b lost its slice to team a's word at +{dt}s"
        assert any("victims of team a" in n for n in notes), notes


def test_its_own_lower_priority_work_is_still_preempted() -> None:
    snap = report(cluster([(A_HIGH, 0), (B_LOW, 1), (A_LOW, 2)], spare=1), A_HIGH, 2, T0)
    snap, _, _ = step(snap)
    snap = occupy(snap, B_LOW2, 3)
    _, victims, _ = step(replace(snap, now=T0 + 20))
    assert victims == [(A_LOW.key,)]


def test_a_signal_no_tenant_writes_lets_the_restart_preempt_across_teams() -> None:
    base = cluster([(A_HIGH, 0), (B_LOW, 1)])
    withdrawn = tuple(
        replace(n, tpu_capacity=4, tpu_allocatable=2) if n.name == NODES["p-0"][0].name else n
        for n in base.nodes
    )
    snap = report(replace(base, nodes=withdrawn), A_HIGH, 1, T0)
    snap, _, _ = step(snap)
    assert declared(snap, "p-0")
    assert not any(k.TENANT_DECLARED_ANNOTATION in n.annotations for n in snap.nodes)
    _, victims, _ = step(replace(snap, now=T0 + 20))
    assert victims == [(B_LOW.key,)]


def test_two_namespaces_of_one_team_are_one_tenant() -> None:
    a2 = running_pods(A_HIGH2, [POOLS[0]], NODES)[2]
    b = running_pods(B_LOW, [POOLS[0]], NODES)[3]
    a = running_pods(A_HIGH, [POOLS[0]], NODES)[:2]
    snap = Snapshot(
        T0 + 2,
        POOLS,
        tuple(n for pool in POOLS for n in NODES[pool.name]),
        (A_HIGH, A_HIGH2, B_LOW),
        (crashed(a[0], T0), a[1], crashed(a2, T0 + 1), b),
    )
    d = decide(snap, S)
    assert not d.pool("p-0").declared  # type: ignore[union-attr]
    assert any("also runs team b" in n for n in d.notes), d.notes
    by_namespace = Settings(max_bad_node_fraction=1.0)
    assert decide(snap, by_namespace).pool("p-0").declared_now, "without teams each namespace is a tenant"  # type: ignore[union-attr]


def test_a_team_takes_at_most_its_limit_of_pools_out_on_its_word() -> None:
    snap = report(cluster([(A_HIGH, 0), (A_HIGH2, 1), (B_LOW, 2)], spare=1), A_HIGH, 2, T0)
    snap, _, _ = step(snap)
    assert declared(snap, "p-0")
    second = report(snap, A_HIGH2, 2, T0 + 30)
    d = decide(second, S)
    assert not d.pool("p-1").declared, "the second pool on the same team's word"  # type: ignore[union-attr]
    assert "p-1" in d.suspects
    assert any("not heard" in n for n in d.notes), d.notes
    # Once the first declaration has left the window and its pool is back, the team is heard again.
    later = snap
    for t in (T0 + 700, T0 + 900, T0 + 3700):
        later, _, _ = step(replace(later, now=t))
    assert not declared(later, "p-0")
    assert not any(k.TENANT_DECLARED_ANNOTATION in n.annotations for n in later.nodes)
    fresh = report(replace(later, now=T0 + 3700), A_HIGH2, 2, T0 + 3700)
    assert decide(fresh, S).pool("p-1").declared_now  # type: ignore[union-attr]


def test_a_future_declaration_time_is_dropped() -> None:
    far = "9999-12-31T00:00:00Z/team:a"
    nodes = tuple(replace(n, annotations={k.TENANT_DECLARED_ANNOTATION: far}) for n in NODES["p-0"])
    assert parse_declarations(far, T0) == []
    snap = replace(
        cluster([(A_HIGH, 1), (B_LOW, 2)]), nodes=(*nodes, *(n for p in POOLS[1:] for n in NODES[p.name]))
    )
    d = decide(snap, S)
    patches = [a for a in d.actions if isinstance(a, PatchNode) and a.pool == "p-0"]
    assert patches and all(k.TENANT_DECLARED_ANNOTATION in a.remove_annotations for a in patches)
    assert {(r.name, r.reason) for r in d.rejected} == {(n.name, "tenant-declared") for n in nodes}


def test_a_namespace_named_like_a_team_is_not_that_team() -> None:
    teams = {"team-b": "team:b"}
    assert tenant_key("b", teams) == "ns:b" != tenant_key("team-b", teams)


@settings(max_examples=60, deadline=None)
@given(
    attacks=st.lists(
        st.tuples(st.sampled_from([0, 1]), st.integers(1, 4), st.floats(1.0, 900.0)), min_size=1, max_size=8
    ),
    limit=st.integers(1, 2),
)
def test_no_sequence_of_one_teams_reports_ever_preempts_another_team(
    attacks: list[tuple[int, int, float]], limit: int
) -> None:
    """Team a reports from any of its pods on any of its pools, at any pace; team b's JobSets are never
    victims, and team a never holds more than ``limit`` pools out on its word."""
    s = S.replace(workload_signal_team_limit=limit)
    snap = cluster([(A_HIGH, 0), (A_HIGH2, 1), (B_LOW, 2), (B_LOW2, 3)], spare=1)
    now = T0
    for which, count, gap in attacks:
        now += gap
        js = (A_HIGH, A_HIGH2)[which]
        snap, victims, _ = step(report(replace(snap, now=now), js, count, now), s)
        assert all(not v.startswith("team-b/") for vs in victims for v in vs), victims
        recent = {
            n.pool
            for n in snap.nodes
            for d in parse_declarations(n.annotations.get(k.TENANT_DECLARED_ANNOTATION), now)
            if now - d.at < s.workload_signal_team_window_seconds
        }
        assert len(recent) <= limit, recent
        snap, victims, _ = step(replace(snap, now=now + 15), s)
        assert all(not v.startswith("team-b/") for vs in victims for v in vs), victims


@given(
    st.dictionaries(
        st.sampled_from(["a", "b", "c", "d", "e"]),
        st.lists(st.sampled_from(["n1", "n2", "n3", "n4", "n5", "n6"]), min_size=1, max_size=3),
        max_size=5,
    )
)
def test_teams_sharing_a_namespace_are_one_tenant(teams: dict[str, list[str]]) -> None:
    """A team writes every object of its namespaces, so teams that share one write each other's."""
    s = settings_from_mapping({"teams": teams})
    of = team_of_namespace(s)
    for namespaces in teams.values():
        assert len({of[ns] for ns in namespaces}) == 1
    for x, y in ((x, y) for x in of for y in of):
        joined = any(x in a and y in b and set(a) & set(b) for a in teams.values() for b in teams.values())
        if joined:
            assert of[x] == of[y]
    # Teams never joined by a namespace chain stay apart: as many tenants as connected groups.
    groups: list[set[str]] = []
    for namespaces in teams.values():
        merged = set(namespaces)
        for g in [g for g in groups if g & merged]:
            merged |= g
            groups.remove(g)
        groups.append(merged)
    assert len(set(of.values())) == len(groups)


def test_a_system_signal_after_the_teams_word_lifts_the_restriction() -> None:
    """The reports come first (the trainer exits at once), the kubelet's withdrawn chips 10 s later."""
    snap, _, _ = step(report(cluster([(A_HIGH, 0), (B_LOW, 1)], spare=1), A_HIGH, 2, T0))
    assert any(k.TENANT_DECLARED_ANNOTATION in n.annotations for n in snap.nodes)
    snap = occupy(snap, B_LOW2, 2)
    first = NODES["p-0"][0].name
    withdrawn = tuple(
        replace(n, tpu_capacity=4, tpu_allocatable=2) if n.name == first else n for n in snap.nodes
    )
    snap, victims, _ = step(replace(snap, now=T0 + 10, nodes=withdrawn))
    assert not any(k.TENANT_DECLARED_ANNOTATION in n.annotations for n in snap.nodes)
    _, victims, _ = step(replace(snap, now=T0 + 25))
    assert len(victims) == 1 and victims[0][0].startswith("team-b/")


def test_without_a_spare_only_its_own_lower_priority_work_is_exposed() -> None:
    """kube-scheduler preempts only pods below the restart's priority: the team's own, or another
    team's at a priority at least as high, leave no other team's work exposed."""
    snap = report(cluster([(A_HIGH, 0), (A_LOW, 1)]), A_HIGH, 2, T0)
    assert decide(snap, S).pool("p-0").declared_now  # type: ignore[union-attr]
    b_equal = make_jobset("peer", priority=A_HIGH.priority, namespace="team-b")
    snap = report(cluster([(A_HIGH, 0), (b_equal, 1)]), A_HIGH, 2, T0)
    assert decide(snap, S).pool("p-0").declared_now  # type: ignore[union-attr]
    snap = report(cluster([(A_HIGH, 0), (A_LOW, 1), (B_LOW, 2)]), A_HIGH, 2, T0)
    assert not decide(snap, S).pool("p-0").declared, "team b's lower-priority pods are exposed"  # type: ignore[union-attr]


SIDE = make_jobset("side", priority=200, namespace="scratch")
"""Team a's JobSet in ``scratch``, a namespace no team of the stack lists, where team a can also write."""
LAB = make_jobset("lab", priority=200, namespace="lab")
"""Another namespace of no team, alone on its slice."""


def shared_cluster(now: float = T0) -> Snapshot:
    """p-0 shared by team a (two nodes), ``scratch`` and team b (a node each); ``lab`` alone on p-1;
    team b alone on p-2; p-3 free (a spare slice for any restart)."""
    up = T0 - 3600
    pods = (
        *running_pods(A_HIGH, [POOLS[0]], NODES, started=up)[:2],
        *running_pods(SIDE, [POOLS[0]], NODES, started=up)[2:3],
        *running_pods(B_LOW, [POOLS[0]], NODES, started=up)[3:],
        *running_pods(LAB, [POOLS[1]], NODES, started=up),
        *running_pods(B_LOW2, [POOLS[2]], NODES, started=up),
    )
    pools = POOLS[:4]
    nodes = tuple(n for pool in pools for n in NODES[pool.name])
    return Snapshot(now, pools, nodes, (A_HIGH, SIDE, B_LOW, LAB, B_LOW2), pods)


def team_b_evicted(snap: Snapshot, s: Settings = S) -> list[str]:
    return [a.key for a in decide(snap, s).actions if isinstance(a, EvictPod) and a.namespace == "team-b"]


def recorded_tenants(snap: Snapshot) -> set[str]:
    return {
        d.tenant
        for n in snap.nodes
        for d in parse_declarations(n.annotations.get(k.TENANT_DECLARED_ANNOTATION), snap.now)
    }


def test_a_teams_namespace_of_no_team_is_not_a_second_voice() -> None:
    """Team a reports from its own namespace and from ``scratch``: heard as two independent tenants,
    they took the shared pool out and evicted team b's pod on it."""
    snap = report(report(shared_cluster(), A_HIGH, 1, T0), SIDE, 1, T0 + 1)
    d = decide(snap, S)
    assert not d.pool("p-0").declared and "p-0" in d.suspects  # type: ignore[union-attr]
    assert any("namespace scratch of no team of the stack: not heard" in n for n in d.notes), d.notes
    assert team_b_evicted(snap) == []
    for dt in (20, 60, 300):
        snap, victims, _ = step(replace(snap, now=T0 + dt))
        assert victims == [] and team_b_evicted(snap) == [] and not declared(snap, "p-0")
    as_team = S.replace(teams=(*S.teams, ("c", ("scratch",))))
    snap = report(report(shared_cluster(), A_HIGH, 1, T0), SIDE, 1, T0 + 1)
    assert decide(snap, as_team).pool("p-0").declared_now, "a team of its own would be a second voice"  # type: ignore[union-attr]


def test_a_namespace_of_no_team_alone_takes_no_pool_out() -> None:
    """Repeated reports from ``lab``, alone on its slice with a spare free: its JobSet restarts in
    place; no pool goes out on its word, nothing is recorded for it, no rate limit is spent."""
    snap = report(shared_cluster(), LAB, 4, T0)
    d = decide(snap, S)
    assert not d.pool("p-1").declared and "p-1" in d.suspects  # type: ignore[union-attr]
    assert any("namespace lab of no team" in n for n in d.notes), d.notes
    snap, _, _ = step(snap)
    assert recorded_tenants(snap) == set()
    by_namespace = Settings(max_bad_node_fraction=1.0)
    assert decide(report(shared_cluster(), LAB, 4, T0), by_namespace).pool("p-1").declared_now, (  # type: ignore[union-attr]
        "with no teams declared, each namespace is a tenant and is heard"
    )


def test_a_namespace_of_no_team_still_counts_beside_a_signal_no_tenant_writes() -> None:
    base = shared_cluster()
    first = NODES["p-1"][0].name
    withdrawn = tuple(
        replace(n, tpu_capacity=4, tpu_allocatable=2) if n.name == first else n for n in base.nodes
    )
    snap = report(replace(base, nodes=withdrawn), LAB, 1, T0)
    assert decide(snap, S).pool("p-1").declared_now  # type: ignore[union-attr]
    after, _, _ = step(snap)
    assert recorded_tenants(after) == set(), "out on the system's word, not a tenant's"


def test_a_namespace_has_a_word_only_in_a_team_or_with_no_teams() -> None:
    teams = team_of_namespace(S)
    assert has_word("team-a2", teams) and not has_word("scratch", teams)
    assert has_word("scratch", {})


@settings(max_examples=60, deadline=None)
@given(
    attacks=st.lists(
        st.tuples(st.sampled_from([0, 1, 2]), st.integers(1, 4), st.floats(0.5, 900.0)),
        min_size=1,
        max_size=8,
    ),
)
def test_no_sequence_of_reports_from_namespaces_of_no_team_costs_another_team(
    attacks: list[tuple[int, int, float]],
) -> None:
    """Team a and the namespaces of no team report, from any of their pods, at any pace: no pool goes
    out on that word, so team b never loses a pod nor a JobSet to it, and no namespace of no team is
    ever recorded as a declaring tenant."""
    snap = shared_cluster()
    now = T0
    for which, count, gap in attacks:
        now += gap
        js = (A_HIGH, SIDE, LAB)[which]
        snap = report(replace(snap, now=now), js, count, now)
        assert team_b_evicted(snap) == []
        snap, victims, _ = step(snap)
        assert all(not v.startswith("team-b/") for vs in victims for v in vs), victims
        assert not any(declared(snap, p.name) for p in snap.pools)
        assert not {t for t in recorded_tenants(snap) if t.startswith("ns:")}
        snap, victims, _ = step(replace(snap, now=now + 15))
        assert all(not v.startswith("team-b/") for vs in victims for v in vs), victims
        assert team_b_evicted(snap) == []
