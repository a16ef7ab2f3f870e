"""Each plan's install section lists what the pinned charts render with that plan's own values.

Source: ``helm template`` (the pinned helm v3.18.6) of kubernetes-sigs/kueue v0.19.2 charts/kueue and
kubernetes-sigs/jobset v0.12.0 charts/jobset (the Go module cache's copy of each tag), committed in
tpu_platform/plan/data/chart_renders.yaml. Offline, the committed data is checked; with the helm
binary cached, it is rendered again and compared.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml

from tpu_platform.plan.chart_renders import (
    chart_folder,
    chart_inputs,
    default_module_cache,
    derive,
    load,
    pinned_tools,
    values_key,
)
from tpu_platform.plan.installs import load as load_summary
from tpu_platform.plan.installs import plan_section
from tpu_platform.plan.stacks import PLANS_DIR

REPO_ROOT = Path(__file__).resolve().parents[2]
PLANS = [yaml.safe_load(p.read_text()) for p in sorted(PLANS_DIR.glob("*.yaml"))]
DATA = load()
TOOLS = pinned_tools(REPO_ROOT)
HELM = Path(TOOLS.get("helm", {}).get("path", "/nonexistent"))
CACHE = default_module_cache()


def test_every_values_set_of_the_plans_has_a_committed_render() -> None:
    keys = set(chart_inputs(PLANS))
    assert keys and keys == set(DATA["renders"])
    for plan in PLANS:
        for name, section in plan["installs"].items():
            if isinstance(section, dict):
                assert isinstance(section["rendered"], dict), (plan["stack"], name)


def test_the_plan_lists_what_its_values_render_not_the_catalogue() -> None:
    dev = next(p for p in PLANS if p["stack"] == "dev")
    kueue = dev["installs"]["kueue"]
    assert sum(kueue["objects"].values()) == 78
    assert "Ingress" not in kueue["rendered"] and "Certificate" not in kueue["rendered"]
    assert "kueue-controller-manager" in kueue["rendered"]["Deployment"]
    catalogue = {o["kind"] for o in load_summary()["kueue"]["objects"]}
    assert {"Ingress", "Certificate"} <= catalogue  # what the templates could make, not what is made
    assert kueue["crds"]["workloads.kueue.x-k8s.io"].startswith("v1beta1")


def test_values_without_a_render_say_how_to_derive_them() -> None:
    chart = {
        "chart": "oci://registry.k8s.io/kueue/charts/kueue",
        "version": "0.19.2",
        "name": "kueue",
        "namespace": "kueue-system",
        "values": {"enableKueueViz": True},
    }
    section = plan_section([{"type": "kubernetes:helm.sh/v4:Chart", "name": "k", "inputs": chart}])
    assert section["kueue"]["values"] == values_key(chart)[:16]
    assert section["kueue"]["rendered"].startswith(
        "not derived for these values: run python -m tpu_platform.plan.chart_renders"
    )


@pytest.mark.skipif(not CACHE.is_dir(), reason="no Go module cache")
def test_the_rendered_charts_are_the_pinned_tags() -> None:
    """The chart folders rendered hold the very files installs.yaml pinned from the git tags."""
    for chart, summary in load_summary().items():
        inputs = next(i for i in chart_inputs(PLANS).values() if str(i["chart"]).endswith(f"/{chart}"))
        folder = chart_folder(CACHE, inputs)
        if not folder.is_dir():
            pytest.skip(f"{folder} not cached")
        for path, digest in summary["source"]["sha256"].items():
            local = folder / path.removeprefix(f"charts/{chart}/")
            assert hashlib.sha256(local.read_bytes()).hexdigest() == digest, path


@pytest.mark.skipif(not HELM.is_file(), reason="the pinned helm is not built (./dev upstream)")
def test_helm_renders_what_is_committed() -> None:
    fresh = derive(HELM, DATA["helm"], DATA["kubeVersion"], CACHE, PLANS)
    assert fresh["charts"] == DATA["charts"]
    assert fresh["renders"] == DATA["renders"]
