"""What the Kueue and JobSet charts create: a summary of their templates at the pinned tags.

Source: kubernetes-sigs/kueue v0.19.2 charts/kueue/, kubernetes-sigs/jobset v0.12.0 charts/jobset/;
every file read is pinned by sha256 in tpu_platform/plan/data/installs.yaml.
"""

from __future__ import annotations

import copy
import hashlib
import re
from pathlib import Path

import pytest
import yaml

from tpu_platform.kueue import configuration as kc
from tpu_platform.plan.changes import review
from tpu_platform.plan.installs import helper_names, load, load_text, plan_section, summarize_template
from tpu_platform.plan.review import format_review
from tpu_platform.plan.stacks import PLANS_DIR
from tpu_platform.schema.crds import DEFAULT_CRDS_DIR
from tpu_platform.schema.fetch import PINNED

SUMMARY = load()


def test_the_summary_is_of_the_pinned_charts() -> None:
    assert SUMMARY["kueue"]["version"] == kc.KUEUE_VERSION and SUMMARY["kueue"]["chart"] == kc.KUEUE_CHART
    assert SUMMARY["jobset"]["version"] == kc.JOBSET_VERSION and SUMMARY["jobset"]["chart"] == kc.JOBSET_CHART
    for chart in ("kueue", "jobset"):
        source = SUMMARY[chart]["source"]
        assert source["tag"] == "v" + SUMMARY[chart]["version"]
        assert source["sha256"] and all(re.fullmatch(r"[0-9a-f]{64}", h) for h in source["sha256"].values())
        templates = {o["template"] for o in SUMMARY[chart]["objects"]}
        assert {f"charts/{chart}/{t}" for t in templates} <= set(source["sha256"])


def test_the_jobset_chart_ships_the_pinned_crd_byte_for_byte() -> None:
    pin = next(p.sha256 for p in PINNED if p.path.endswith("jobset.x-k8s.io_jobsets.yaml"))
    assert SUMMARY["jobset"]["source"]["sha256"]["charts/jobset/crds/jobset.x-k8s.io_jobsets.yaml"] == pin


@pytest.mark.skipif(not DEFAULT_CRDS_DIR.is_dir(), reason="../shared/crds unavailable")
def test_crd_versions_match_the_pinned_crd_files() -> None:
    for obj in SUMMARY["kueue"]["objects"]:
        if obj["kind"] != "CustomResourceDefinition":
            continue
        path = DEFAULT_CRDS_DIR / "kueue-v0.19.2" / f"kueue.x-k8s.io_{obj['name'].split('.')[0]}.yaml"
        crd = yaml.safe_load(path.read_text())
        expected = [
            (v["name"], v["served"], v["storage"], bool(v.get("deprecated"))) for v in crd["spec"]["versions"]
        ]
        got = [(v["name"], v["served"], v["storage"], bool(v.get("deprecated"))) for v in obj["versions"]]
        assert got == expected, obj["name"]


def test_the_summary_lists_what_an_upgrade_must_show() -> None:
    kueue = {(o["kind"], o["name"]) for o in SUMMARY["kueue"]["objects"]}
    assert ("Deployment", "kueue-controller-manager") in kueue
    assert ("ClusterRole", "kueue-manager-role") in kueue
    assert ("MutatingWebhookConfiguration", "kueue-mutating-webhook-configuration") in kueue
    assert sum(kind == "CustomResourceDefinition" for kind, _ in kueue) == 11
    jobset = {(o["kind"], o["name"]) for o in SUMMARY["jobset"]["objects"]}
    assert {("Deployment", "jobset-controller"), ("ClusterRole", "jobset-controller")} <= jobset
    manager = next(o for o in SUMMARY["kueue"]["objects"] if o["name"] == "kueue-manager-role")
    assert any(rule.startswith("kueue.x-k8s.io/workloads:") for rule in manager["rules"])


def test_templates_are_summarized_without_rendering() -> None:
    names = helper_names(
        [
            '{{- define "c.fullname" -}}x{{- end }}\n'
            '{{- define "c.ctl" -}}\n{{ include "c.fullname" . }}-ctl\n{{- end -}}'
        ],
        "c",
        "rel",
    )
    assert names["c.ctl"] == "rel-ctl"
    text = (
        "{{- if .Values.enabled }}\n"
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n"
        '  name: {{ include "c.ctl" . }}\n  namespace: {{ .Release.Namespace }}\n'
        '  labels:\n  {{- include "c.labels" . | nindent 4 }}\n'
        'rules:\n  - apiGroups: [""]\n    resources: [secrets]\n    verbs: [get]\n{{- end }}\n'
    )
    (obj,) = summarize_template(text, names, "ns")
    assert obj == {
        "kind": "Role",
        "name": "rel-ctl",
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "if": ".Values.enabled",
        "rules": ["core/secrets: get"],
    }


def test_every_plan_carries_the_summary_digest() -> None:
    digest = hashlib.sha256(load_text().encode()).hexdigest()
    assert plan_section()["sha256"] == digest
    for path in PLANS_DIR.glob("*.yaml"):
        assert yaml.safe_load(path.read_text())["installs"]["sha256"] == digest, path.name


def test_an_upgrade_is_listed_in_the_review() -> None:
    old = yaml.safe_load((PLANS_DIR / "dev.yaml").read_text())
    new = copy.deepcopy(old)
    new["installs"]["kueue"]["version"] = "0.20.0"
    new["installs"]["kueue"]["crds"]["workloads.kueue.x-k8s.io"] = "v1beta2*"
    text = format_review(review("dev", old, new))
    assert "installs.kueue.version: 0.19.2 -> 0.20.0" in text
    assert "installs.kueue.crds.workloads.kueue.x-k8s.io" in text


def test_no_upstream_template_is_committed() -> None:
    data = Path(__file__).resolve().parents[2] / "tpu_platform" / "plan" / "data"
    assert sorted(p.name for p in data.iterdir()) == [
        "chart_renders.yaml",
        "force_new.json",
        "installs.yaml",
        "provider_rules.json",
    ]
