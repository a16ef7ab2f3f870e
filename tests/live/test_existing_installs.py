"""A cluster that already runs Kueue and JobSet, under the real engine's ``preview`` and ``up``.

The local stack (``cluster.mode: kubeconfig``) meets, on its own control plane each:

1. Kueue 0.17.1 and JobSet 0.10.1, what xpk and Cluster Toolkit install, built from their Go modules
   (``upstream/kueue-0.17``, ``upstream/jobset-0.10``) and installed from their own charts (``helm
   template`` of the module's ``charts/`` folder, every object applied, the controllers run as local
   processes as the rest of the tier runs them). The default (``existingInstall: use``) refuses:
   Kueue 0.17.1 cannot ignore the resources a TPU ClusterQueue does not cover. ``refuse`` refuses.
   ``use`` with ``quotaCheckStrategy: BlockUndeclared`` uses both: ``up`` installs no chart, the
   platform's objects pass the old webhooks, and ``destroy`` leaves the install as it was.
   ``upgrade`` applies the pinned charts over them: one controller each, at 0.19.2 and 0.12.0, the
   next preview changes nothing, and ``destroy`` keeps the upgraded install.
2. Kueue 0.19.2 and JobSet 0.12.0 installed by ``helm install`` with the platform's own values:
   used as they are, not reinstalled (same Deployments, same Helm revisions, no field of the engine's).
"""

from __future__ import annotations

import base64
import functools
import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi import automation as auto

from tests.live.cluster import LiveCluster, binaries, engine, engine_addons, snapshot
from tests.live.cluster.addons import (
    Addon,
    Serving,
    chart_inputs_from_plan,
    chart_workdir,
    crd_established,
    install_crds,
    namespace_obj,
    run_controller,
)
from tests.live.cluster.charts import RenderedChart, local_chart, local_webhooks, render
from tests.live.cluster.engine_stack import engine_config, offline_plan, program_with, system_node
from tests.live.cluster.figures import Report
from tests.live.cluster.kube import ApiError, Kube, wait_for
from tests.live.cluster.process import StartError

REPO = Path(__file__).resolve().parents[2]
STACK = "existing"
CHART = "kubernetes:helm.sh/v4:Chart"
OLD = {"jobset": "jobset-0.10", "kueue": "kueue-0.17"}  # upstream/build.py components (binary names)
MODULES = {"jobset": "sigs.k8s.io/jobset", "kueue": "sigs.k8s.io/kueue"}
NAMESPACES = {"jobset": "jobset-system", "kueue": "kueue-system"}
IMAGES = {"jobset": "registry.k8s.io/jobset/jobset", "kueue": "registry.k8s.io/kueue/kueue"}
PORT_ATTEMPTS = 3


# --------------------------------------------------------------------------- the installs found


def module_dir(component: str, version: str) -> Path:
    """The upstream module in Go's module cache (``go mod download``, offline once built)."""
    folder = REPO / "upstream" / OLD[component]
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"{MODULES[component]}@{version}"],
        cwd=folder,
        env={**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=mod"},
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(json.loads(out.stdout)["Dir"])


def old_values(component: str, version: str) -> dict[str, Any]:
    """The release images, as the released manifests (and xpk) run them."""
    image = {"repository": IMAGES[component], "tag": version}
    if component == "kueue":
        return {"controllerManager": {"manager": {"image": image}}}
    return {"image": image}


def helm_template(
    cluster: LiveCluster, chart: Path, release: str, namespace: str, values: dict[str, Any]
) -> RenderedChart:
    workdir = cluster.cp.workdir / f"{release}-{chart.parent.parent.name}"
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "values.json").write_text(json.dumps(values))
    cmd = [str(cluster.paths["helm"]), "template", release, str(chart), "--namespace", namespace]
    cmd += [
        "--include-crds",
        "--kube-version",
        cluster.kube_version,
        "--values",
        str(workdir / "values.json"),
    ]
    env = {"HELM_CACHE_HOME": str(workdir / "helm"), "HELM_CONFIG_HOME": str(workdir / "helm"), "PATH": ""}
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    objects = [d for d in yaml.safe_load_all(out.stdout) if isinstance(d, dict) and d.get("kind")]
    return RenderedChart(release, namespace, objects)


def local_api_objects(objects: list[dict[str, Any]], serving: Serving, ca_pem: bytes) -> list[dict[str, Any]]:
    """Kueue's visibility APIService on the local process, its Service an ExternalName of 127.0.0.1
    (as ``engine_addons.ChartControllers`` does for the engine's install)."""
    backends = {str(o["spec"]["service"]["name"]) for o in objects if o["kind"] == "APIService"}
    out = []
    for obj in objects:
        doc = json.loads(json.dumps(obj))
        if doc["kind"] == "APIService":
            doc["spec"]["service"]["port"] = serving.visibility_port
            doc["spec"]["caBundle"] = base64.b64encode(ca_pem).decode()
            doc["spec"].pop("insecureSkipTLSVerify", None)
        elif doc["kind"] == "Service" and doc["metadata"]["name"] in backends:
            doc["spec"].update(type="ExternalName", externalName="127.0.0.1")
            doc["spec"].pop("selector", None)
        out.append(doc)
    return out


def apply_rendered(cluster: LiveCluster, chart: RenderedChart, binary: Path) -> Addon:
    """A chart's every object applied as rendered (Deployment, Services and Secret too, so the cluster
    shows the install as it would), webhooks and conversions on the local controller."""
    kube, ca = cluster.admin, cluster.cp.pki.pem()
    kube.apply(namespace_obj(chart.namespace))
    rest = [o for o in chart.objects if o["kind"] not in ("CustomResourceDefinition", *WEBHOOK_KINDS)]
    for obj in rest:
        meta = obj["metadata"]
        if kube.resource(obj["apiVersion"], obj["kind"]).namespaced:
            meta.setdefault("namespace", chart.namespace)  # `helm install` puts them in the release's
    for attempt in range(1, PORT_ATTEMPTS + 1):
        serving = Serving.pick()
        install_crds(kube, chart.crds, serving.webhook_url, ca)
        kube.apply_all(local_api_objects(rest, serving, ca))
        try:
            addon = run_controller(cluster.cp, kube, binary, chart, serving)
        except StartError as err:
            if "address already in use" not in str(err) or attempt == PORT_ATTEMPTS:
                raise
            continue
        kube.apply_all(local_webhooks(chart.webhooks, serving.webhook_url, ca))
        return addon
    raise AssertionError("unreachable")


WEBHOOK_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")

POST_RENDERER = """\
#!{python}
import base64, json, sys, yaml
BASE, PORT, CA = {base!r}, {port!r}, {ca!r}

def url(config):
    service = config.get("service") or {{}}
    return {{"url": BASE + service.get("path", "/"), "caBundle": CA}}

docs = [d for d in yaml.safe_load_all(sys.stdin) if isinstance(d, dict) and d.get("kind")]
backends = {{d["spec"]["service"]["name"] for d in docs if d["kind"] == "APIService"}}
for d in docs:
    if d["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for hook in d.get("webhooks") or []:
            hook["clientConfig"] = url(hook.get("clientConfig") or {{}})
    elif d["kind"] == "CustomResourceDefinition":
        conversion = d["spec"].get("conversion") or {{}}
        if conversion.get("strategy") == "Webhook":
            conversion["webhook"]["clientConfig"] = url(conversion["webhook"].get("clientConfig") or {{}})
    elif d["kind"] == "APIService":
        d["spec"]["service"]["port"] = PORT
        d["spec"]["caBundle"] = CA
        d["spec"].pop("insecureSkipTLSVerify", None)
    elif d["kind"] == "Service" and d["metadata"]["name"] in backends:
        d["spec"].update(type="ExternalName", externalName="127.0.0.1")
        d["spec"].pop("selector", None)
sys.stdout.write(yaml.safe_dump_all(docs))
"""


def helm_install(cluster: LiveCluster, inputs: dict[str, Any], binary: Path) -> Addon:
    """``helm install`` of a plan's chart inputs (a real release record), its webhooks, conversions and
    aggregated API pointed at the local controller by a post-renderer, then the controller started."""
    chart = render(cluster.paths["helm"], inputs, chart_workdir(cluster.cp, inputs), cluster.kube_version)
    workdir = chart_workdir(cluster.cp, inputs) / "install"
    workdir.mkdir(parents=True, exist_ok=True)
    serving = Serving.pick()
    ca = base64.b64encode(cluster.cp.pki.pem()).decode()
    script = workdir / "post-render"
    text = POST_RENDERER.format(
        python=sys.executable, base=serving.webhook_url, port=serving.visibility_port, ca=ca
    )
    script.write_text(text)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    (workdir / "values.json").write_text(json.dumps(inputs.get("values") or {}))
    cmd = [
        str(cluster.paths["helm"]),
        "install",
        str(inputs["name"]),
        str(local_chart(str(inputs["chart"]), str(inputs["version"]))),
        "--namespace",
        str(inputs["namespace"]),
        "--create-namespace",
        "--values",
        str(workdir / "values.json"),
        "--post-renderer",
        str(script),
    ]
    home = str(workdir / "helm")
    env = {
        "KUBECONFIG": str(cluster.cp.admin_kubeconfig),
        "HELM_CACHE_HOME": home,
        "HELM_CONFIG_HOME": home,
        "HELM_DATA_HOME": home,
        # client-go's discovery cache goes under $HOME/.kube/cache; without HOME it lands in the cwd.
        "HOME": home,
        "PATH": os.environ.get("PATH", ""),
    }
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    assert out.returncode == 0, out.stderr
    for crd in chart.crds:  # `helm install` without --wait returns before the API server serves them
        name = crd["metadata"]["name"]
        wait_for(f"CRD {name} established", functools.partial(crd_established, cluster.admin, name), 60)
    return run_controller(cluster.cp, cluster.admin, binary, chart, serving)


# --------------------------------------------------------------------------- what the cluster shows


def controllers(kube: Kube) -> dict[str, list[tuple[str, str, str, int]]]:
    """Per add-on, every Deployment running its image: (namespace/name, image, uid, generation)."""
    out: dict[str, list[tuple[str, str, str, int]]] = {"jobset": [], "kueue": []}
    for dep in kube.list("apps/v1", "Deployment"):
        for container in dep["spec"]["template"]["spec"]["containers"]:
            for key, repository in IMAGES.items():
                if container["image"].startswith(f"{repository}:"):
                    meta = dep["metadata"]
                    where = f"{meta['namespace']}/{meta['name']}"
                    out[key].append((where, container["image"], meta["uid"], meta["generation"]))
    return out


def managers(kube: Kube, namespace: str, name: str) -> set[str]:
    dep = kube.get("apps/v1", "Deployment", name, namespace)
    return {str(m.get("manager")) for m in dep["metadata"].get("managedFields") or []}


def helm_records(kube: Kube) -> list[str]:
    return sorted(
        f"{s['metadata']['namespace']}/{s['metadata']['name']}"
        for ns in NAMESPACES.values()
        for s in kube.list("v1", "Secret", ns, selector="owner=helm")
    )


def live_and_state(kube: Kube, eng: engine.PulumiEngine, steps: list[engine.Step]) -> list[Any]:
    """For a failing assertion: each changed object as the API server and the state hold it."""
    out: list[Any] = []
    state = {r["urn"]: r for r in eng.resources(STACK)}
    for step in steps:
        outputs = (state.get(step.urn) or {}).get("outputs") or {}
        meta = outputs.get("metadata") or {}
        try:
            live = kube.get(outputs["apiVersion"], outputs["kind"], meta["name"], meta.get("namespace"))
        except (ApiError, KeyError) as err:
            live = {"metadata": str(err)}
        out.append({"urn": step.urn, "live": live.get("metadata"), "state": meta})
    return out


@dataclass
class Diagnostics:
    """The engine's diagnostics (the program's ``pulumi.log`` lines and errors) and resource steps."""

    steps: engine.StepLog = field(default_factory=engine.StepLog)
    lines: list[tuple[str, str]] = field(default_factory=list)

    def __call__(self, event: auto.EngineEvent) -> None:
        self.steps(event)
        diag = event.diagnostic_event
        if diag is not None:
            self.lines.append((str(diag.severity), diag.message.strip()))

    def about(self, *words: str) -> list[str]:
        return [m for _, m in self.lines if all(w in m for w in words)]


@dataclass(eq=False)
class Replacing(engine_addons.LocalController):
    """The pinned chart's controller for an upgrade: the old process stops when the new one starts,
    as the Deployment's rollout replaces the old pod."""

    old: Addon | None = None

    def _start(self) -> Addon:
        if self.old is not None:
            self.old.process.stop()
            if self.old.process in self.cp.group.processes:
                self.cp.group.processes.remove(self.old.process)
        return super()._start()


def stack_config(cluster: LiveCluster, **kueue: Any) -> dict[str, Any]:
    config = engine_config(cluster)
    config["tpu-platform:kueue"].update(kueue)
    return config


def new_cluster(tmp_path_factory: pytest.TempPathFactory, name: str) -> LiveCluster:
    live = LiveCluster(tmp_path_factory.mktemp(name)).start()
    live.admin.create(system_node())
    return live


@pytest.fixture
def eng(tmp_path: Path) -> Iterator[engine.PulumiEngine]:
    found = engine.upstream_binaries()
    pulumi_engine = engine.PulumiEngine(
        tmp_path / "pulumi", found.cli, found.provider, found.provider_version
    )
    try:
        yield pulumi_engine
    finally:
        pulumi_engine.kill_all()


# --------------------------------------------------------------------------- the tests


def test_an_older_install_is_refused_used_or_upgraded_never_installed_twice(
    tmp_path_factory: pytest.TempPathFactory, eng: engine.PulumiEngine, report: Report, tmp_path: Path
) -> None:
    paths, versions = binaries.locate(tuple(OLD.values()))
    cluster = new_cluster(tmp_path_factory, "existing-old")
    timed = engine.Timer(report)
    old: dict[str, Addon] = {}
    upgraded: engine_addons.ChartControllers | None = None
    try:
        with timed("install JobSet 0.10.1 and Kueue 0.17.1 from their charts"):
            for component in ("jobset", "kueue"):
                version = versions[OLD[component]]
                chart = module_dir(component, version) / "charts" / component
                rendered = helm_template(
                    cluster, chart, component, NAMESPACES[component], old_values(component, version)
                )
                old[component] = apply_rendered(cluster, rendered, paths[OLD[component]])
        found = controllers(cluster.admin)
        assert [image for _, image, _, _ in found["kueue"]] == [f"{IMAGES['kueue']}:v0.17.1"], found
        assert [image for _, image, _, _ in found["jobset"]] == [f"{IMAGES['jobset']}:v0.10.1"], found
        before = snapshot.objects(cluster.admin)
        none = engine_addons.ChartControllers([])

        # 1. The default, use: Kueue 0.17.1 cannot serve the stack's TPU-only ClusterQueues.
        stack = eng.stack(STACK, program_with(none), stack_config(cluster))
        for setting, words in (
            ({}, ("Kueue: refuse", "does not run QuotaCheckStrategy")),
            ({"existingInstall": "refuse"}, ("Kueue: refuse", "kueue.existingInstall is refuse")),
        ):
            eng.write_config(STACK, stack_config(cluster, **setting))
            log = Diagnostics()
            with (
                timed(f"preview ({setting or 'default'}): refused"),
                pytest.raises(auto.CommandError) as raised,
            ):
                stack.preview(on_event=log)
            refusal = log.about(*words)
            assert refusal, log.lines
            assert all(w in str(raised.value) for w in words)  # what the CLI prints
            report.append(
                f"preview {setting or '(default: use)'} refused: " + refusal[0].replace("\n", " | ")
            )
        assert controllers(cluster.admin) == found

        # 2. use, with a quota check Kueue 0.17.1 has: no chart; the platform's objects on 0.17.1.
        eng.write_config(STACK, stack_config(cluster, quotaCheckStrategy="BlockUndeclared"))
        log = Diagnostics()
        with timed("up (use)"):
            result = stack.up(on_event=log)
        assert result.summary.result == "succeeded", result.stderr
        used = log.about("JobSet: use") + log.about("Kueue: use")
        assert len(used) == 2, log.lines
        report.append("up (use): " + " || ".join(u.split("\n")[0] for u in used))
        assert not [r for r in eng.resources(STACK) if r["type"] == CHART]
        assert controllers(cluster.admin) == found
        assert cluster.admin.get("kueue.x-k8s.io/v1beta2", "ClusterQueue", "research-cq")
        with timed("destroy (use)"):
            stack.destroy(on_event=engine.StepLog())
        assert controllers(cluster.admin) == found
        left = snapshot.left_behind(before, snapshot.objects(cluster.admin))
        assert not left, left

        # 3. upgrade: the pinned charts over the old installs, one controller each.
        config = stack_config(cluster, existingInstall="upgrade")
        (tmp_path / "plan").mkdir()
        plan = offline_plan(tmp_path / "plan", config)
        pinned: list[engine_addons.LocalController] = []
        for component in ("jobset", "kueue"):
            inputs = chart_inputs_from_plan(plan, component)
            chart_of = render(
                cluster.paths["helm"], inputs, chart_workdir(cluster.cp, inputs), cluster.kube_version
            )
            pinned.append(
                Replacing(cluster.cp, cluster.admin, cluster.paths[component], chart_of, old=old[component])
            )
        upgraded = engine_addons.ChartControllers(pinned)
        stack = eng.stack(STACK, program_with(upgraded), config)
        log = Diagnostics()
        with timed("up (upgrade)"):
            result = stack.up(on_event=log)
        assert result.summary.result == "succeeded", result.stderr
        lines = log.about("JobSet: upgrade") + log.about("Kueue: upgrade")
        assert len(lines) == 2, log.lines
        report.append("up (upgrade): " + " || ".join(u.replace("\n", " | ") for u in lines))
        now = controllers(cluster.admin)
        assert [(w, i) for w, i, _, _ in now["kueue"]] == [
            ("kueue-system/kueue-controller-manager", f"{IMAGES['kueue']}:v0.19.2")
        ], now
        assert [(w, i) for w, i, _, _ in now["jobset"]] == [
            ("jobset-system/jobset-controller", f"{IMAGES['jobset']}:v0.12.0")
        ], now
        assert [u for _, _, u, _ in now["kueue"]] == [u for _, _, u, _ in found["kueue"]]  # the same object
        jobset_crd = cluster.admin.get(
            "apiextensions.k8s.io/v1", "CustomResourceDefinition", "jobsets.jobset.x-k8s.io"
        )
        spec = jobset_crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
            "properties"
        ]
        assert "volumeClaimPolicies" in spec  # the 0.12.0 CRD, applied before the controller
        config_map = cluster.admin.get("v1", "ConfigMap", "kueue-manager-config", "kueue-system")
        assert "quotaCheckStrategy: IgnoreUndeclared" in config_map["data"]["controller_manager_config.yaml"]

        log = Diagnostics()
        with timed("preview after the upgrade"):
            previewed = stack.preview(on_event=log, diff=True)
        changed = log.steps.changed()
        own = log.about("Kueue: install", "taken over from Kueue 0.17.1")
        assert own, log.lines
        # Never a second install: nothing created, replaced or deleted. The provider may have recorded
        # an object it upserted as its await last saw it, before its own apply: the first preview then
        # shows the labels and annotation the takeover set as an update; a refresh reads them back.
        details = (changed, previewed.stdout, live_and_state(cluster.admin, eng, changed))
        assert all(s.op == "update" and all(d.startswith("metadata.") for d in s.diffs) for s in changed), (
            details
        )
        if changed:
            report.append(
                f"preview after the upgrade: stale metadata in the state: {[s.name for s in changed]}"
            )
            stack.refresh(on_event=engine.StepLog())
            log = Diagnostics()
            stack.preview(on_event=log)
            assert not log.steps.changed(), log.steps.changed()
        report.append("preview after the upgrade: no change; " + own[0].split("\n")[0])

        with timed("destroy (upgraded)"):
            destroyed = stack.destroy(on_event=engine.StepLog())
        assert destroyed.summary.result == "succeeded", destroyed.stderr
        assert [(w, i) for w, i, _, _ in controllers(cluster.admin)["kueue"]] == [
            ("kueue-system/kueue-controller-manager", f"{IMAGES['kueue']}:v0.19.2")
        ]
        assert not cluster.admin.list("kueue.x-k8s.io/v1beta2", "ClusterQueue")
        report.append("destroy after the upgrade: the platform's objects gone, the upgraded install kept")
    finally:
        if upgraded is not None:
            upgraded.stop()
        cluster.stop()


def test_the_same_versions_installed_by_helm_are_used_not_reinstalled(
    tmp_path_factory: pytest.TempPathFactory, eng: engine.PulumiEngine, report: Report, tmp_path: Path
) -> None:
    cluster = new_cluster(tmp_path_factory, "existing-same")
    timed = engine.Timer(report)
    try:
        config = engine_config(cluster)
        (tmp_path / "plan").mkdir()
        plan = offline_plan(tmp_path / "plan", config)
        with timed("helm install JobSet 0.12.0 and Kueue 0.19.2 with the platform's values"):
            for component in ("jobset", "kueue"):
                helm_install(cluster, chart_inputs_from_plan(plan, component), cluster.paths[component])
        found = controllers(cluster.admin)
        records = helm_records(cluster.admin)
        assert records == [
            "jobset-system/sh.helm.release.v1.jobset.v1",
            "kueue-system/sh.helm.release.v1.kueue.v1",
        ], records
        before = snapshot.objects(cluster.admin)

        stack = eng.stack(STACK, program_with(engine_addons.ChartControllers([])), config)
        log = Diagnostics()
        with timed("up (same versions, helm)"):
            result = stack.up(on_event=log)
        assert result.summary.result == "succeeded", result.stderr
        used = log.about("JobSet: use", "Helm release jobset-system/jobset") + log.about(
            "Kueue: use", "Helm release kueue-system/kueue"
        )
        assert len(used) == 2, log.lines
        report.append("up over helm's 0.19.2/0.12.0: " + " || ".join(u.split("\n")[0] for u in used))
        assert not [r for r in eng.resources(STACK) if r["type"] == CHART]
        assert controllers(cluster.admin) == found  # same objects, same generation: not reinstalled
        assert helm_records(cluster.admin) == records
        for component, name in (("jobset", "jobset-controller"), ("kueue", "kueue-controller-manager")):
            owners = managers(cluster.admin, NAMESPACES[component], name)
            assert not any(m.startswith("pulumi-kubernetes") for m in owners), owners
        with timed("destroy (same versions)"):
            stack.destroy(on_event=engine.StepLog())
        time.sleep(1)
        assert controllers(cluster.admin) == found and helm_records(cluster.admin) == records
        left = snapshot.left_behind(before, snapshot.objects(cluster.admin))
        assert not left, left
    finally:
        cluster.stop()


def test_the_old_versions_build_from_their_modules() -> None:
    """The pins of upstream/kueue-0.17 and upstream/jobset-0.10 are the versions xpk installs."""
    _, versions = binaries.locate(tuple(OLD.values()))
    assert versions == {"kueue-0.17": "v0.17.1", "jobset-0.10": "v0.10.1"}
