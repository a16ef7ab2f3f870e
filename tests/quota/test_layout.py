"""The quota/queue plan: one model of flavors, capacity and the cohort tree, as Kueue keeps it.

Arithmetic follows Kueue 0.19.2 ``pkg/cache/scheduler/resource_node.go`` (SubtreeQuota,
localQuota, potentialAvailable, available, addUsage, removeUsage).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import MINIMAL_STACK
from tpu_platform import catalog
from tpu_platform.config import PlatformConfig
from tpu_platform.config.capacity import nominal_claims, pool_slices
from tpu_platform.constants import TPU_RESOURCE
from tpu_platform.kueue import queue_objects
from tpu_platform.plan import load_stack_config, parse_stack_config, stack_file
from tpu_platform.quota import QuotaNode, QuotaTree, TreeUsage, quota_layout

FOUR = catalog.lookup("4x4")
EIGHT = catalog.lookup("8x8")
POOLS = [
    {"name": "small", "topology": "4x4", "count": 6},
    {"name": "big", "topology": "8x8", "count": 2},
]


def build(
    teams: list[dict[str, Any]], cohorts: list[dict[str, Any]] | None = None, **kueue: Any
) -> PlatformConfig:
    config = copy.deepcopy(MINIMAL_STACK)
    config["tpu-platform:slicePools"] = copy.deepcopy(POOLS)
    config["tpu-platform:teams"] = teams
    if cohorts is not None:
        config["tpu-platform:cohorts"] = cohorts
    if kueue:
        config["tpu-platform:kueue"] = kueue
    return parse_stack_config(config)


def q(slices: int, topology: str = "4x4", **limits: int) -> dict[str, Any]:
    return {"topology": topology, "slices": slices, **limits}


@pytest.fixture
def tree_cfg() -> PlatformConfig:
    """org <- (research <- a, b), (product <- c); product keeps one slice of its own."""
    cohorts: list[dict[str, Any]] = [
        {"name": "org"},
        {"name": "research", "parentName": "org"},
        {"name": "product", "parentName": "org", "quota": [q(1, lendingLimitSlices=0)]},
    ]
    teams = [
        {"name": "a", "cohortName": "research", "quota": [q(2)]},
        {"name": "b", "cohortName": "research", "quota": [q(1, borrowingLimitSlices=2)]},
        {"name": "c", "cohortName": "product", "quota": [q(2, lendingLimitSlices=1), q(1, "8x8")]},
    ]
    return build(teams, cohorts)


def test_hierarchical_cohort_tree_has_parent_links(tree_cfg: PlatformConfig) -> None:
    plan = quota_layout(tree_cfg)
    tree = plan.tree
    assert [(c.name, c.parent) for c in plan.cohorts] == [
        ("org", None),
        ("research", "org"),
        ("product", "org"),
    ]
    assert [n.name for n in tree.children("org")] == ["research", "product"]
    assert [n.name for n in tree.children("research")] == ["a-cq", "b-cq"]
    c = plan.queue_of("c")
    assert [n.name for n in tree.ancestors(c)] == ["product", "org"]
    assert tree.root(c).name == "org" and tree.root(tree.cohorts["org"]).name == "org"
    assert c.local_queues == (("c", "c-queue"),)
    assert [(x.shape.topology, x.nominal, x.lending_limit) for x in c.ordered()] == [
        ("4x4", 2, 1),
        ("8x8", 1, None),
    ]


def test_hierarchical_cohort_arithmetic(tree_cfg: PlatformConfig) -> None:
    tree = quota_layout(tree_cfg).tree
    product, org, research = tree.cohorts["product"], tree.cohorts["org"], tree.cohorts["research"]
    c = tree.queues["c"]
    assert tree.local(c, FOUR) == 1  # subtree 2 - lendingLimit 1
    assert tree.subtree(product, FOUR) == 2  # own 1 + c lends 1
    assert tree.local(product, FOUR) == 2  # lendingLimit 0: keeps all
    assert tree.subtree(research, FOUR) == 3
    assert tree.subtree(org, FOUR) == 3  # research lends 3, product 0
    assert tree.potential(c, FOUR) == 1 + 2 + 3  # c's local + product's local + org's subtree
    assert tree.potential(tree.queues["b"], FOUR) == 3  # borrowing limit 2 over its nominal 1
    assert tree.subtree(org, EIGHT) == 1 and tree.lent(c, EIGHT) == 1


def test_implicit_cohort_is_a_root_without_quota() -> None:
    plan = quota_layout(
        build(
            [
                {"name": "a", "cohortName": "ml", "quota": [q(2)]},
                {"name": "b", "cohortName": "ml", "quota": [q(1)]},
            ]
        )
    )
    (ml,) = plan.cohorts
    assert (ml.name, ml.parent, ml.declared, ml.quotas) == ("ml", None, False, ())
    assert [t.flavors[0].borrowable_slices for t in plan.team_quotas()] == [1, 2]


def test_plan_flavors_are_the_pools_capacity() -> None:
    plan = quota_layout(build([]))
    assert [(f.name, f.shape.topology, f.slices, f.chips) for f in plan.flavors] == [
        ("tpu-v6e-4x4", "4x4", 6, 96),
        ("tpu-v6e-8x8", "8x8", 2, 128),
    ]
    assert plan.unassigned() == {FOUR: 6, EIGHT: 2}


def test_builder_leaves_out_what_the_checks_reject() -> None:
    """A stack before its cross-checks: unknown shapes and partial slices are not in the plan."""
    raw = {
        **{k.split(":", 1)[1]: v for k, v in MINIMAL_STACK.items()},
        "slicePools": [{"name": "p", "topology": "4x4", "count": 1}, {"name": "x", "topology": "4x3"}],
        "teams": [
            {
                "name": "a",
                "quota": [{"topology": "4x3", "slices": 1}, {"topology": "4x4", "chips": 20}, q(1, "8x8")],
            }
        ],
    }
    cfg = PlatformConfig.model_validate(raw)
    plan = quota_layout(cfg)
    assert [f.shape for f in plan.flavors] == [FOUR]
    assert [x.shape for x in plan.queue_of("a").quotas] == [EIGHT]
    assert plan.nominal_claims().flavors() == []  # no pool has 8x8
    assert nominal_claims(cfg).flavors() == [] and pool_slices(cfg) == {FOUR: 1}


def test_nominal_claims_list_teams_then_cohorts() -> None:
    cfg = build(
        [{"name": "a", "cohortName": "org", "quota": [q(2), q(0, "8x8")]}, {"name": "b", "quota": [q(1)]}],
        [{"name": "org", "quota": [q(1), q(1, "8x8")]}],
    )
    claims = quota_layout(cfg).nominal_claims()
    assert claims.owners(FOUR) == [("team a", 2), ("team b", 1), ("cohort org", 1)]
    assert claims.owners(EIGHT) == [("cohort org", 1)]  # a zero nominal claims nothing
    assert claims.over({FOUR: 4, EIGHT: 1}) == [] and claims.over({FOUR: 3, EIGHT: 1}) == [FOUR]
    counted = nominal_claims(cfg)  # what the stack's capacity check adds up
    assert [counted.owners(s) for s in (FOUR, EIGHT)] == [claims.owners(s) for s in (FOUR, EIGHT)]


# --------------------------------------------------------------------------- usage, as Kueue charges it


def test_usage_fills_local_quota_then_bubbles_to_the_parent(tree_cfg: PlatformConfig) -> None:
    tree = quota_layout(tree_cfg).tree
    usage = TreeUsage(tree)
    c, product, org = tree.queues["c"], tree.cohorts["product"], tree.cohorts["org"]
    assert usage.available(c, FOUR) == tree.potential(c, FOUR) == 6
    usage.charge(c, FOUR, 1)  # within c's local quota: nothing reaches product
    assert (usage.of(c, FOUR), usage.of(product, FOUR), usage.of(org, FOUR)) == (1, 0, 0)
    usage.charge(c, FOUR, 3)  # 0 local left: all 3 go to product, which keeps 2 locally
    assert (usage.of(c, FOUR), usage.of(product, FOUR), usage.of(org, FOUR)) == (4, 3, 1)
    assert usage.available(c, FOUR) == 2
    assert usage.available(tree.queues["a"], FOUR) == 2  # org: 3 minus product's 1 stored there
    usage.release(c, FOUR, 3)
    assert (usage.of(c, FOUR), usage.of(product, FOUR), usage.of(org, FOUR)) == (1, 0, 0)


def test_borrowing_limit_caps_available_with_usage(tree_cfg: PlatformConfig) -> None:
    tree = quota_layout(tree_cfg).tree
    usage = TreeUsage(tree)
    b, a = tree.queues["b"], tree.queues["a"]
    assert usage.available(b, FOUR) == 3  # nominal 1 + borrowing limit 2
    usage.charge(a, FOUR, 2)
    assert usage.available(b, FOUR) == 1  # org's 3 minus a's 2
    usage.charge(b, FOUR, 1)
    assert usage.available(b, FOUR) == 0


def test_over_admission_leaves_nothing_available_never_less(tree_cfg: PlatformConfig) -> None:
    """Kueue v0.19.2: ``available`` (resource_node.go) goes negative when usage exceeds the tree's
    quota (capacity removed); ``ClusterQueueSnapshot.Available`` clamps it at 0."""
    tree = quota_layout(tree_cfg).tree
    usage = TreeUsage(tree)
    a, b = tree.queues["a"], tree.queues["b"]
    usage.charge(a, FOUR, 10)
    assert usage.raw_available(b, FOUR) < 0
    assert usage.available(b, FOUR) == 0


@settings(max_examples=80, deadline=None)
@given(ops=st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(1, 3)), max_size=8))
def test_release_undoes_charge(ops: list[tuple[str, int]]) -> None:
    cfg = _TREE_CFG
    tree = quota_layout(cfg).tree
    usage = TreeUsage(tree)
    nodes: list[QuotaNode] = [*tree.queues.values(), *tree.cohorts.values()]
    for team, slices in ops:
        usage.charge(tree.queues[team], FOUR, slices)
    for team, slices in reversed(ops):
        usage.release(tree.queues[team], FOUR, slices)
    assert [usage.of(n, FOUR) for n in nodes] == [0] * len(nodes)


_TREE_CFG = build(
    [
        {"name": "a", "cohortName": "research", "quota": [q(2)]},
        {"name": "b", "cohortName": "research", "quota": [q(1, borrowingLimitSlices=2)]},
        {"name": "c", "cohortName": "product", "quota": [q(2, lendingLimitSlices=1)]},
    ],
    [
        {"name": "org"},
        {"name": "research", "parentName": "org"},
        {"name": "product", "parentName": "org", "quota": [q(1, lendingLimitSlices=0)]},
    ],
)


# --------------------------------------------------------------------------- the plan is what Kueue gets


def _rendered(spec: dict[str, Any]) -> dict[str, tuple[int, int | None, int | None]]:
    """flavor -> (nominal, borrowingLimit, lendingLimit) in chips, read off rendered resourceGroups."""
    out = {}
    for group in spec.get("resourceGroups", []):
        assert group["coveredResources"] == [TPU_RESOURCE]
        for flavor in group["flavors"]:
            (res,) = flavor["resources"]
            borrowing, lending = (res.get(k) for k in ("borrowingLimit", "lendingLimit"))
            out[flavor["name"]] = (
                int(res["nominalQuota"]),
                None if borrowing is None else int(borrowing),
                None if lending is None else int(lending),
            )
    return out


def _planned(node: QuotaNode) -> dict[str, tuple[int, int | None, int | None]]:
    return {x.flavor: (x.nominal_chips, x.borrowing_limit_chips, x.lending_limit_chips) for x in node.quotas}


@st.composite
def stacks(draw: st.DrawFn) -> dict[str, Any]:
    """Valid stacks: a cohort tree (parents drawn from earlier cohorts), teams with quotas and limits."""
    n_cohorts = draw(st.integers(0, 4))
    cohorts: list[dict[str, Any]] = []
    for i in range(n_cohorts):
        cohort: dict[str, Any] = {"name": f"c{i}"}
        if i and draw(st.booleans()):
            cohort["parentName"] = f"c{draw(st.integers(0, i - 1))}"
        cohorts.append(cohort)
    teams = []
    for i in range(draw(st.integers(1, 4))):
        # A team may name an undeclared cohort only while no cohort is declared.
        names = [c["name"] for c in cohorts] or ["implicit"]
        cohort_name = draw(st.sampled_from([None, *names]))
        quota: list[dict[str, Any]] = []
        for topology in draw(st.lists(st.sampled_from(["4x4", "8x8"]), min_size=1, max_size=2, unique=True)):
            chips = catalog.lookup(topology).chips
            # A team without a cohort needs some nominal quota: otherwise it can admit nothing.
            nominal = draw(st.integers(0 if cohort_name is not None or quota else 1, 4))
            entry: dict[str, Any] = {"topology": topology}
            entry.update({"chips": nominal * chips} if draw(st.booleans()) else {"slices": nominal})
            if cohort_name is not None and draw(st.booleans()):
                entry["borrowingLimitSlices"] = draw(st.integers(0, 4))
            if cohort_name is not None and draw(st.booleans()):
                entry["lendingLimitChips"] = draw(st.integers(0, nominal)) * chips
            quota.append(entry)
        team: dict[str, Any] = {"name": f"t{i}", "quota": quota}
        if cohort_name is not None:
            team["cohortName"] = cohort_name
        teams.append(team)
    config = copy.deepcopy(MINIMAL_STACK)
    config["tpu-platform:slicePools"] = copy.deepcopy(POOLS)
    config["tpu-platform:teams"] = teams
    config["tpu-platform:cohorts"] = cohorts
    config["tpu-platform:kueue"] = {"allowOvercommit": True}
    return config


@settings(max_examples=120, deadline=None)
@given(config=stacks())
def test_plan_totals_are_what_the_rendered_cluster_queues_say(config: dict[str, Any]) -> None:
    cfg = parse_stack_config(config)
    plan = quota_layout(cfg)
    objects = queue_objects(cfg)
    for team in plan.team_quotas():
        node = plan.queue_of(team.team)
        rendered = objects.cluster_queues[team.team]
        assert rendered["metadata"]["name"] == team.cluster_queue == node.name
        assert rendered["spec"].get("cohortName") == team.cohort == node.parent
        assert _rendered(rendered["spec"]) == _planned(node)
        nominal_chips = sum(res[0] for res in _rendered(rendered["spec"]).values())
        assert team.guaranteed_chips == nominal_chips
        # What a team could ever use never exceeds the nominal quota of its whole tree.
        root = plan.tree.root(node)
        in_tree = [n for n in [*plan.cluster_queues, *plan.cohorts] if plan.tree.root(n) == root]
        for flavor in team.flavors:
            held = sum(x.nominal for n in in_tree for x in n.quotas if x.shape == flavor.shape)
            assert flavor.guaranteed_slices + flavor.borrowable_slices <= held
    for raw_team in config["tpu-platform:teams"]:
        written = {}
        for entry in raw_team["quota"]:
            shape = catalog.lookup(entry["topology"])
            written[shape] = entry["slices"] if "slices" in entry else entry["chips"] // shape.chips
        assert {x.shape: x.nominal for x in plan.queue_of(raw_team["name"]).quotas} == written
    for cohort in objects.cohorts:
        node = plan.tree.cohorts[cohort["metadata"]["name"]]
        assert cohort["spec"].get("parentName") == node.parent
        assert _rendered(cohort["spec"]) == _planned(node)
    claims = plan.nominal_claims()
    for pool_flavor in plan.flavors:
        assert claims.total(pool_flavor.shape) + plan.unassigned()[pool_flavor.shape] == pool_flavor.slices
    # The stack's capacity check counts the same claims and capacity from the stack itself.
    counted = nominal_claims(cfg)
    assert counted.flavors() == claims.flavors()
    assert all(counted.owners(shape) == claims.owners(shape) for shape in claims)
    assert pool_slices(cfg) == plan.capacity()


@pytest.mark.parametrize("stack_name", ["dev", "prod", "seed"])
def test_committed_stacks_render_their_plan(stack_name: str) -> None:
    cfg = parse_stack_config(load_stack_config(stack_file(stack_name)))
    plan = quota_layout(cfg)
    objects = queue_objects(cfg)
    assert {t: _rendered(cq["spec"]) for t, cq in objects.cluster_queues.items()} == {
        node.team: _planned(node) for node in plan.cluster_queues
    }
    assert [f["metadata"]["name"] for f in objects.resource_flavors] == [f.name for f in plan.flavors]


def test_a_copy_of_the_books_is_a_what_if_that_leaves_them_alone(tree_cfg: PlatformConfig) -> None:
    """The simulator tries preemptions on a copy: releasing victims there must not touch the books."""
    tree = quota_layout(tree_cfg).tree
    books = TreeUsage(tree)
    c, product = tree.queues["c"], tree.cohorts["product"]
    books.charge(c, FOUR, 4)
    trial = books.copy()
    assert (trial.of(c, FOUR), trial.of(product, FOUR)) == (4, 3)
    trial.release(c, FOUR, 4)
    trial.charge(tree.queues["a"], FOUR, 1)
    assert (books.of(c, FOUR), books.of(product, FOUR), books.of(tree.queues["a"], FOUR)) == (4, 3, 0)
    assert (trial.of(c, FOUR), trial.of(product, FOUR)) == (0, 0)


@settings(max_examples=80, deadline=None)
@given(
    ops=st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(1, 3), st.booleans()), max_size=12)
)
def test_usage_depends_only_on_what_each_queue_holds(ops: list[tuple[str, int, bool]]) -> None:
    """Kueue's addUsage/removeUsage leave every cohort with its children's usage past their local
    quota, whatever the order: releasing a workload admitted earlier than others (a preemption)
    gives the same books as never having admitted it."""
    tree = _TREE_CFG_TREE
    books = TreeUsage(tree)
    held = dict.fromkeys(["a", "b", "c"], 0)
    for team, slices, release in ops:
        amount = min(slices, held[team]) if release else slices
        if release:
            books.release(tree.queues[team], FOUR, amount)
            held[team] -= amount
        else:
            books.charge(tree.queues[team], FOUR, amount)
            held[team] += amount
    fresh = TreeUsage(tree)
    for team, amount in held.items():
        fresh.charge(tree.queues[team], FOUR, amount)
    nodes: list[QuotaNode] = [*tree.queues.values(), *tree.cohorts.values()]
    assert [books.of(n, FOUR) for n in nodes] == [fresh.of(n, FOUR) for n in nodes]
    assert [books.available(n, FOUR) for n in nodes] == [fresh.available(n, FOUR) for n in nodes]


def test_lendable_is_what_a_cluster_queue_lends_its_cohort(tree_cfg: PlatformConfig) -> None:
    """A ClusterQueue lends all of its nominal quota, or at most its lendingLimit (Kueue 0.19.2
    ``pkg/cache/scheduler/resource_node.go``: the subtree quota less ``localQuota``)."""
    tree = quota_layout(tree_cfg).tree
    for team in ("a", "b", "c"):
        node = tree.queues[team]
        for quota in node.quotas:
            assert quota.lendable == tree.lent(node, quota.shape), (team, quota.shape.topology)
    assert [x.lendable for x in tree.queues["c"].ordered()] == [1, 1]


def test_subtree_and_local_quota_are_the_same_when_asked_again(tree_cfg: PlatformConfig) -> None:
    """The tree keeps a node's subtree and local quota once computed: a fresh tree on the same nodes,
    asked in the opposite order, gives the same answers."""
    tree = quota_layout(tree_cfg).tree
    nodes: list[QuotaNode] = [*tree.queues.values(), *tree.cohorts.values()]
    first = [(tree.subtree(n, s), tree.local(n, s)) for n in nodes for s in (FOUR, EIGHT)]
    again = QuotaTree(tree.cohort_nodes, tree.queue_nodes)
    backwards = [(again.local(n, s), again.subtree(n, s)) for n in reversed(nodes) for s in (EIGHT, FOUR)]
    assert first == [(sub, loc) for loc, sub in reversed(backwards)]
    assert first == [(tree.subtree(n, s), tree.local(n, s)) for n in nodes for s in (FOUR, EIGHT)]


_TREE_CFG_TREE = quota_layout(_TREE_CFG).tree
