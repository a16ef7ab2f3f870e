"""``pulumi up``, ``preview``, a change and ``destroy`` by the real engine, on the local control plane.

The stack is the example ``local`` stack (``cluster.mode: kubeconfig``) pointed at this control
plane, with the pinned Kueue and JobSet charts from ``../shared/upstream`` as local chart folders.
The same stack file renders the offline plans, so what the engine registers, previews and
changes can be held against them:

1. ``preview`` then ``up``: every object, the charts' too, created by the engine (readiness
   awaited, ``dependsOn`` honoured); the registered resources (type, name, parent, provider,
   dependencies, inputs) are the offline plan's, and the charts' children are the objects
   ``installs.yaml`` lists for each chart;
2. one team's quota changed: ``preview --diff`` shows the same creates, updates, replaces and
   deletes as ``tpu-platform review`` of the two offline plans; ``up`` applies it; a priority's value
   changed: ``up`` replaces its PriorityClass (an immutable field) and updates its
   WorkloadPriorityClass, step by step as the review says;
3. a second ``up`` changes nothing; ``destroy`` leaves no object behind;
4. the kubeconfig's credentials never appear in plain text in the state file.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pulumi import automation as auto

from tests.live.cluster import LiveCluster, engine, engine_state, snapshot
from tests.live.cluster.engine_stack import (
    STACK,
    chart_controllers,
    engine_config,
    offline_plan,
    program_with,
    system_node,
)
from tests.live.cluster.figures import Report
from tests.live.cluster.kube import wait_for
from tests.live.cluster.rendered import load_plan
from tests.live.cluster.review_agreement import StepEvents, compare, engine_path
from tpu_platform.plan.changes import review

CHART = "kubernetes:helm.sh/v4:Chart"
CRD = "apiextensions.k8s.io/v1"


# The committed local plan against this test's: the stack's name (the root component's parent),
# the kubeconfig and context of this control plane, the charts' folders.
SET_BY_THE_TEST = {
    ("tpu-platform:index:Platform::tpu", "parent"),
    ("kubernetes:helm.sh/v4:Chart::tpu-kueue-jobset", "chart"),
    ("kubernetes:helm.sh/v4:Chart::tpu-kueue-kueue", "chart"),
    ("pulumi:providers:kubernetes::tpu-cluster-k8s", "context"),
    ("pulumi:providers:kubernetes::tpu-cluster-k8s", "kubeconfig"),
}


def plan_entry(plan: dict[str, Any], label: str) -> dict[str, Any] | None:
    return next((r for r in plan["resources"] if f"{r['type']}::{r['name']}" == label), None)


def with_research_borrowing(config: dict[str, Any], slices: int) -> dict[str, Any]:
    changed = copy.deepcopy(config)
    for team in changed["tpu-platform:teams"]:
        if team["name"] == "research":
            team["quota"][0]["borrowingLimitSlices"] = slices
    return changed


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveCluster]:
    """A control plane of its own: what ``destroy`` leaves is compared with what was there before."""
    live = LiveCluster(tmp_path_factory.mktemp("engine-cp")).start()
    try:
        live.admin.create(system_node())
        yield live
    finally:
        live.stop()


def test_pulumi_up_change_and_destroy_on_the_real_engine(
    cluster: LiveCluster, report: Report, tmp_path: Path
) -> None:
    binaries = engine.upstream_binaries()
    eng = engine.PulumiEngine(tmp_path / "pulumi", binaries.cli, binaries.provider, binaries.provider_version)
    installed = {p["name"]: p["version"] for p in eng.plugins() if p.get("kind") == "resource"}
    assert installed == {"kubernetes": binaries.provider_version.lstrip("v")}, installed
    config = engine_config(cluster)
    base_dir, head_dir = tmp_path / "base", tmp_path / "head"
    base_dir.mkdir()
    head_dir.mkdir()
    base_plan = offline_plan(base_dir, config, cluster)
    changed = with_research_borrowing(config, 0)
    head_plan = offline_plan(head_dir, changed, cluster)

    controllers = chart_controllers(cluster, base_plan)
    program = program_with(controllers)

    before = snapshot.objects(cluster.admin)
    try:
        stack = eng.stack(STACK, program, config)
        timed = engine.Timer(report)

        with timed("preview (create)"):
            log = engine.StepLog()
            stack.preview(on_event=log)
        planned = engine_state.planned_labels(base_plan)
        previewed = {
            f"{s.type}::{s.name}"
            for s in log.changed()
            if s.op == "create" and not engine.is_chart_child(s) and s.type not in engine_state.NOT_IN_PLAN
        }
        only = f"engine only {sorted(previewed - planned)}, plan only {sorted(planned - previewed)}"
        assert previewed == planned, only

        with timed("up (create)") as step:
            result = stack.up(on_event=engine.StepLog())
            step.note(f"{result.summary.resource_changes}")
        assert result.summary.result == "succeeded", result.stderr

        resources = eng.resources(STACK)
        mismatches = engine_state.plan_mismatches(base_plan, resources)
        assert not mismatches, "\n".join(mismatches)
        # ... and that plan is the committed plans/local.yaml but for what this test sets.
        # The provider had no kubeconfig (the ambient one): DiffConfig finds no active cluster to
        # compare, so a kubeconfig and context set here update it, replacing nothing it owns.
        drift = review("local", load_plan("local"), base_plan)
        drifted = {(c.label, f.path) for c in (*drift.changes, *drift.components) for f in c.fields}
        assert drifted == SET_BY_THE_TEST, drift
        replaced = [c.label for c in drift.by_action("replace")]
        assert drift.trustworthy and replaced == ["tpu-platform:index:Platform::tpu"], drift
        children = engine_state.chart_children(resources)
        for controller in controllers.by_namespace.values():
            chart = engine_state.chart_resource_name(base_plan, controller.chart.release)
            rendered = engine_state.rendered_objects(controller.chart)
            assert children[chart] == rendered, (chart, sorted(children[chart] ^ rendered))
        report.append(
            f"engine: {len(resources)} resources registered; the {len(engine_state.comparable(resources))} "
            "the plan shows have its type, name, parent, dependencies, provider and inputs; the charts' "
            "children are helm template's objects ("
            + ", ".join(f"{name} {len(objs)}" for name, objs in sorted(children.items()))
            + ")"
        )
        kubeconfig = config["tpu-platform:cluster"]["kubeconfig"]
        assert engine_state.leaked_secrets(json.dumps(config), kubeconfig), "the check finds a key"
        leaked = engine_state.leaked_secrets(eng.state_file(STACK).read_text(), kubeconfig)
        assert not leaked, f"in plain text in {eng.state_file(STACK)}: {leaked}"

        eng.write_config(STACK, changed)
        with timed("preview (quota change)"):
            log = engine.StepLog()
            stack.preview(on_event=log, diff=True)
        expected = review(STACK, base_plan, head_plan)
        want = {(c.action, f"{c.type}::{c.name}") for c in expected.changes}
        got = {(s.op, f"{s.type}::{s.name}") for s in log.changed() if not engine.is_chart_child(s)}
        diffs = {f"{s.type}::{s.name}": set(s.diffs) for s in log.changed()}
        assert got == want, f"engine {sorted(got)} vs review {sorted(want)}; engine's diffs {diffs}"
        inputs = {
            label: [(plan_entry(p, label) or {}).get("inputs") for p in (base_plan, head_plan)]
            for label in {c.label for c in expected.changes}
        }
        fields = {
            c.label: {engine_path(f.path, *inputs[c.label]) for f in c.fields}
            for c in expected.changes
            if c.action == "update"
        }
        assert {k: v for k, v in diffs.items() if k in fields} == fields, (diffs, fields)
        report.append(
            "engine preview of the quota change, as tpu-platform review: "
            + "; ".join(f"{op} {name} ({', '.join(sorted(diffs[name]))})" for op, name in sorted(got))
        )

        with timed("up (quota change)"):
            result = stack.up(on_event=engine.StepLog())
        assert result.summary.result == "succeeded", result.stderr
        queue = cluster.admin.get("kueue.x-k8s.io/v1beta2", "ClusterQueue", "research-cq")
        limit = queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].get("borrowingLimit")
        assert limit == "0", queue["spec"]  # a Quantity, as the API server returns it

        # A PriorityClass's value is immutable: the program replaces the class, deleting it first
        # (replaceOnChanges, deleteBeforeReplace); `up` (no preview: see test_review_agreement's
        # "priority value" row for why the engine's preview of it fails) applies it as review says.
        repriced = copy.deepcopy(changed)
        priority = repriced["tpu-platform:priorities"][0]
        priority["value"] += 500000
        (tmp_path / "repriced").mkdir()
        repriced_plan = offline_plan(tmp_path / "repriced", repriced, cluster)
        eng.write_config(STACK, repriced)
        with timed("up (priority value change)"):
            events = StepEvents()
            result = stack.up(on_event=events)
        assert result.summary.result == "succeeded", result.stderr
        planned = {f"{r['type']}::{r['name']}" for r in repriced_plan["resources"]}
        verdicts = compare(events.steps, review(STACK, head_plan, repriced_plan), planned)
        assert all(v.agrees for v in verdicts), [str(v) for v in verdicts if not v.agrees]
        assert {v.engine.op for v in verdicts} == {"same", "update", "replace"}, verdicts
        for version, kind in (
            ("scheduling.k8s.io/v1", "PriorityClass"),
            ("kueue.x-k8s.io/v1beta2", "WorkloadPriorityClass"),
        ):
            applied = cluster.admin.get(version, kind, priority["name"])
            assert applied["value"] == priority["value"], applied

        with timed("up (no change)"):
            log = engine.StepLog()
            result = stack.up(on_event=log)
        assert not log.changed(), log.changed()
        assert set(result.summary.resource_changes or {}) <= {"same"}, result.summary.resource_changes

        with timed("destroy"):
            destroyed = stack.destroy(on_event=engine.StepLog())
        assert destroyed.summary.result == "succeeded", destroyed.stderr
    finally:
        controllers.stop()
    time.sleep(1)
    left = snapshot.left_behind(before, snapshot.objects(cluster.admin))
    assert not left, left
    report.append("engine destroy: no object left behind")


@pytest.mark.filterwarnings("ignore:Error in event stream")  # the killed CLI's event log ends mid-line
def test_an_up_killed_mid_way_is_finished_by_the_next_one(
    cluster: LiveCluster, report: Report, tmp_path: Path
) -> None:
    """SIGKILL to the CLI and its provider while ``up`` creates: the state keeps pending operations
    and a lock. ``pulumi cancel``, ``pulumi refresh --clear-pending-creates`` and ``up`` converge to
    the plan (``up`` alone succeeds but keeps the pending creates in the state), and ``destroy``
    still leaves nothing behind."""
    binaries = engine.upstream_binaries()
    eng = engine.PulumiEngine(tmp_path / "pulumi", binaries.cli, binaries.provider, binaries.provider_version)
    config = engine_config(cluster)
    (tmp_path / "plan").mkdir()
    plan = offline_plan(tmp_path / "plan", config)
    controllers = chart_controllers(cluster, plan)
    before = snapshot.objects(cluster.admin)
    stack = eng.stack(STACK, program_with(controllers), config)
    timed = engine.Timer(report)
    outcome: dict[str, Exception | None] = {}

    def run_up() -> None:
        try:
            stack.up(on_event=engine.StepLog())
            outcome["up"] = None
        except auto.CommandError as err:  # asserted below: the killed run must fail
            outcome["up"] = err

    try:
        worker = threading.Thread(target=run_up, daemon=True)
        worker.start()

        def midway() -> bool:  # JobSet's chart being applied, the platform's own objects not yet
            crds = {c["metadata"]["name"] for c in cluster.admin.list(CRD, "CustomResourceDefinition")}
            names = {n["metadata"]["name"] for n in cluster.admin.list("v1", "Namespace")}
            return "jobsets.jobset.x-k8s.io" in crds and "tpu-hotswap" not in names

        wait_for("up half-way (JobSet's CRD created)", midway, 120, interval=0.1)
        killed = eng.kill_all()
        worker.join(60)
        assert killed and isinstance(outcome.get("up"), Exception), (killed, outcome)
        pending = eng.pending_operations(STACK)
        report.append(f"engine killed mid-up: {len(killed)} processes, {len(pending)} pending operations")

        # The recovery upstream names (pkg/resource/deploy/deployment_executor.go, the warning on
        # pending operations): the lock away, a refresh that clears the interrupted creates (their
        # objects may exist: the provider's server-side apply takes them over), then up.
        with timed("recovery after the kill: pulumi cancel, refresh --clear-pending-creates, up"):
            stack.cancel()
            stack.refresh(clear_pending_creates=True, on_event=engine.StepLog())
            assert not eng.pending_operations(STACK)
            result = stack.up(on_event=engine.StepLog())
        assert result.summary.result == "succeeded", result.stderr
        mismatches = engine_state.plan_mismatches(plan, eng.resources(STACK))
        assert not mismatches, "\n".join(mismatches)
        log = engine.StepLog()
        stack.up(on_event=log)
        assert not log.changed(), log.changed()
        destroyed = stack.destroy(on_event=engine.StepLog())
        assert destroyed.summary.result == "succeeded", destroyed.stderr
    finally:
        eng.kill_all()
        controllers.stop()
    left = snapshot.left_behind(before, snapshot.objects(cluster.admin))
    assert not left, left
