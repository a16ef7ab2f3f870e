"""The component package from another language: a Pulumi YAML program, the real engine, this cluster.

``examples/yaml/Pulumi.yaml`` registers ``tpu-platform:index:StackPlatform`` of ``provider/`` with
the sections of ``stacks/Pulumi.local.yaml`` (``cluster.mode: kubeconfig``) pointed at this control
plane. The engine (the CLI v3.274.0) runs the program with the YAML language host
(``upstream/pulumi-yaml``), loads the package's schema from ``provider/`` and has it construct the
component (``component_package`` says how the plugin is started); the component registers the
Kubernetes provider's resources, as the Python program does. JobSet and Kueue run here, started
before the program, which installs their charts from folders pointed at them (``served_charts``).
The same sections under ``tpu-platform:`` render the offline plan, so:

1. ``preview`` shows a create of every resource the plan shows, and of the StackPlatform;
2. ``up`` registers them as the plan has them (type, name, parent, dependencies, provider, inputs;
   the Platform's parent is the StackPlatform), and every Kubernetes object of the plan is in the
   cluster; the outputs are the cluster's name and location and the stack's pool names;
3. a second ``up`` changes nothing; ``destroy`` leaves no object behind.
"""

from __future__ import annotations

import collections
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi import automation as auto

from tests.live.cluster import (
    LiveCluster,
    binaries,
    component_package,
    engine,
    engine_state,
    served_charts,
    snapshot,
)
from tests.live.cluster.engine_stack import STACK as PLAN_STACK
from tests.live.cluster.engine_stack import offline_plan, system_node
from tests.live.cluster.figures import Report
from tests.live.cluster.kube import ApiError, wait_for
from tests.live.cluster.rendered import charts as plan_charts
from tests.live.cluster.rendered import clusters
from tpu_platform.kueue import configuration as kc
from tpu_platform.plan.stacks import check_stack_file
from tpu_platform.slices import expand_slices

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "yaml" / "Pulumi.yaml"
NAMESPACE = "tpu-platform:"  # the stack file's; the YAML program's sections are under its project
STACK = "yaml"
COMPONENT = "tpu-platform:index:StackPlatform"
RELEASES = {"jobset": kc.JOBSET_VERSION, "kueue": kc.KUEUE_VERSION}  # the pinned charts


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveCluster]:
    """A control plane of its own: what ``destroy`` leaves is compared with what was there before."""
    live = LiveCluster(tmp_path_factory.mktemp("yaml-cp")).start()
    try:
        live.admin.create(system_node())
        # kube-controller-manager gives each namespace its default ServiceAccount soon after the
        # start: before the snapshot, or the comparison after destroy counts them as left behind.
        wait_for("every namespace's default ServiceAccount", lambda: not unserved(live), 60)
        yield live
    finally:
        live.stop()


def unserved(live: LiveCluster) -> list[str]:
    """Namespaces without their default ServiceAccount yet."""
    namespaces = [n["metadata"]["name"] for n in live.admin.list("v1", "Namespace")]
    return [
        ns
        for ns in namespaces
        if not any(a["metadata"]["name"] == "default" for a in live.admin.list("v1", "ServiceAccount", ns))
    ]


def platform_config(live: LiveCluster, chart_folders: dict[str, Path]) -> dict[str, Any]:
    """``stacks/Pulumi.local.yaml`` on this control plane (its kubeconfig file and context), the
    charts from ``chart_folders``."""
    config = yaml.safe_load((REPO / "stacks" / "Pulumi.local.yaml").read_text())["config"]
    config["tpu-platform:cluster"].update(kubeconfig=str(live.cp.admin_kubeconfig), context="live")
    kueue = config.setdefault("tpu-platform:kueue", {})
    kueue["controller"] = {"chart": str(chart_folders["kueue"])}
    kueue["jobset"] = {"chart": str(chart_folders["jobset"])}
    return dict(config)


def program_config(project: str, config: dict[str, Any]) -> dict[str, Any]:
    """The stack file's sections under the YAML project's name (``gcp:*`` as they are)."""
    return {
        f"{project}:{key.removeprefix(NAMESPACE)}" if key.startswith(NAMESPACE) else key: value
        for key, value in config.items()
    }


def yaml_stack(
    eng: engine.PulumiEngine, plugin: Path, language_host: Path, config: dict[str, Any]
) -> auto.Stack:
    """The example program in the engine's project folder, its package the plugin folder; the YAML
    language host on ``PATH``, where the CLI finds a language host it does not find beside itself."""
    program = yaml.safe_load(EXAMPLE.read_text())
    program["packages"]["tpu-platform"] = str(plugin)
    (eng.project_dir / "Pulumi.yaml").write_text(yaml.safe_dump(program, sort_keys=False))
    (eng.root / "bin" / language_host.name).symlink_to(language_host)
    env = {**eng.env, "PATH": f"{eng.root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    opts = auto.LocalWorkspaceOptions(
        work_dir=str(eng.project_dir),
        pulumi_home=str(eng.home),
        env_vars=env,
        secrets_provider="passphrase",
        pulumi_command=auto.PulumiCommand(root=str(eng.root)),
    )
    stack = auto.create_or_select_stack(STACK, work_dir=str(eng.project_dir), opts=opts)
    eng.write_config(STACK, program_config(program["name"], config))
    return stack


def state_resources(eng: engine.PulumiEngine, project: str) -> list[dict[str, Any]]:
    state = json.loads((eng.backend / ".pulumi" / "stacks" / project / f"{STACK}.json").read_text())
    return list(state.get("checkpoint", {}).get("latest", {}).get("resources") or [])


def as_planned(resources: list[dict[str, Any]], plan: dict[str, Any]) -> list[dict[str, Any]]:
    """The state as the Python program would have registered it: without the StackPlatform, and
    its child the Platform under the stack, as the plan has it."""
    component = {r["urn"] for r in resources if r["type"] == COMPONENT}
    (root,) = (r for r in plan["resources"] if r["type"] == "tpu-platform:index:Platform")
    stack_urn = next(r["urn"] for r in resources if r["type"] == "pulumi:pulumi:Stack")
    # The plan's stack is named by its own project and stack: the same type, that name.
    stack_urn = stack_urn.rsplit("::", 1)[0] + "::" + str(root["parent"]).split("::", 1)[1]
    out = []
    for r in resources:
        if r["urn"] in component:
            continue
        out.append({**r, "parent": stack_urn} if r.get("parent") in component else r)
    return out


def short_type(rtype: str) -> str:
    """``kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue`` -> ``ClusterQueue``; a provider by package."""
    if rtype.startswith("pulumi:providers:"):
        return f"provider {rtype.removeprefix('pulumi:providers:')}"
    return rtype.rsplit(":", 1)[-1]


def missing_objects(live: LiveCluster, plan: dict[str, Any]) -> list[str]:
    """The plan's Kubernetes objects (the charts' aside) the cluster does not hold."""
    missing = []
    for obj in (o for objs in clusters(plan).values() for o in objs):
        meta = obj.manifest["metadata"]
        try:
            live.admin.get(obj.manifest["apiVersion"], obj.kind, meta["name"], meta.get("namespace"))
        except (ApiError, KeyError):
            missing.append(obj.describe())
    return missing


def test_yaml_program_uses_the_component_package_on_the_real_engine(
    cluster: LiveCluster, report: Report, tmp_path: Path
) -> None:
    upstream = engine.upstream_binaries()
    hosts, versions = binaries.locate(("pulumi-language-yaml",))
    eng = engine.PulumiEngine(tmp_path / "pulumi", upstream.cli, upstream.provider, upstream.provider_version)
    started = time.monotonic()
    venv, made = component_package.provider_virtualenv()
    report.append(
        f"provider: virtualenv of provider/requirements.txt {'made' if made else 'cached'} "
        f"({time.monotonic() - started:.1f} s), YAML language host {versions['pulumi-language-yaml']}"
    )
    plugin = component_package.plugin_folder(tmp_path, venv)

    folders = {release: tmp_path / "charts" / release for release in RELEASES}
    config = platform_config(cluster, folders)
    (tmp_path / "plan").mkdir()
    for release, version in RELEASES.items():
        served_charts.prepare(folders[release], release, version)
    plan = offline_plan(tmp_path / "plan", config)
    stack_file = tmp_path / "plan" / f"Pulumi.{PLAN_STACK}.yaml"  # what offline_plan rendered
    provider = next(iter(clusters(plan)))
    for release, inputs in plan_charts(plan, provider).items():
        assert inputs["chart"] == str(folders[release]), inputs

    before = snapshot.objects(cluster.admin)
    installed = cluster.install("yaml", plan=plan)
    try:
        for addon in installed.addons:
            served_charts.fill(folders[addon.name], addon, cluster.cp.pki.pem())
            served_charts.as_platform_install(cluster.admin, addon)
        stack = yaml_stack(eng, plugin, hosts["pulumi-language-yaml"], config)
        project = yaml.safe_load((eng.project_dir / "Pulumi.yaml").read_text())["name"]
        timed = engine.Timer(report)

        with timed("YAML preview (create)"):
            log = engine.StepLog()
            stack.preview(on_event=log)
        planned = engine_state.planned_labels(plan) | {f"{COMPONENT}::tpu"}
        previewed = {
            f"{s.type}::{s.name}"
            for s in log.changed()
            if s.op == "create"
            and not engine.is_chart_child(s)
            and s.type not in engine_state.NOT_IN_PLAN
            and not s.type.startswith("pulumi:providers:tpu-platform")
        }
        assert previewed == planned, (
            f"engine only {sorted(previewed - planned)}, plan only {sorted(planned - previewed)}"
        )

        with timed("YAML up (create)") as step:
            result = stack.up(on_event=engine.StepLog())
            step.note(f"{result.summary.resource_changes}")
        assert result.summary.result == "succeeded", result.stderr
        outputs = {k: v.value for k, v in result.outputs.items()}
        assert outputs["clusterName"] == config["tpu-platform:cluster"]["name"], outputs
        assert outputs["clusterLocation"] == config["gcp:region"], outputs
        pools = [spec.pool_name for spec in expand_slices(check_stack_file(stack_file))]
        assert outputs["poolNames"] == pools, outputs

        resources = state_resources(eng, project)
        mismatches = engine_state.plan_mismatches(plan, as_planned(resources, plan))
        assert not mismatches, "\n".join(mismatches)
        missing = missing_objects(cluster, plan)
        assert not missing, missing
        kinds = collections.Counter(
            short_type(r["type"]) for r in resources if not engine_state.is_chart_child_urn(r["urn"])
        )
        children = engine_state.chart_children(resources)
        report.append(
            f"YAML program: {len(resources)} resources registered through {COMPONENT} "
            f"({', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))}; chart children: "
            + ", ".join(f"{name} {len(objs)}" for name, objs in sorted(children.items()))
            + f"); the {len(engine_state.comparable(as_planned(resources, plan)))} the plan shows are "
            f"the plan's, every planned object is in the cluster; outputs {outputs}"
        )

        with timed("YAML up (no change)"):
            log = engine.StepLog()
            result = stack.up(on_event=log)
        assert not log.changed(), log.changed()
        assert set(result.summary.resource_changes or {}) <= {"same"}, result.summary.resource_changes

        with timed("YAML destroy"):
            destroyed = stack.destroy(on_event=engine.StepLog())
        assert destroyed.summary.result == "succeeded", destroyed.stderr
    finally:
        eng.kill_all()
        cluster.uninstall()
    time.sleep(1)
    left = snapshot.left_behind(before, snapshot.objects(cluster.admin))
    assert not left, left
    report.append("YAML destroy: no object left behind")
