"""Every Kubernetes object every stack renders must pass the API server's schema checks offline."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest
import yaml

from tpu_platform.plan import list_stacks, load_stack_config, render
from tpu_platform.plan.stacks import stack_file
from tpu_platform.schema import (
    CrdsUnavailable,
    SchemaReport,
    check_object,
    default_validator,
    kubernetes_objects,
)
from tpu_platform.schema.rendered import AUTONAME_SUFFIX


def _explain(label: str, obj: dict[str, Any], report: SchemaReport) -> str:
    return f"{label}\n{report.describe()}\n--- object ---\n{yaml.safe_dump(obj, sort_keys=False)}"


@pytest.mark.parametrize("stack", list_stacks())
def test_every_rendered_object_matches_its_schema(stack: str) -> None:
    from tpu_platform.components.program import stack_program

    rendering = render(stack_program, load_stack_config(stack_file(stack)), stack=stack)
    assert rendering.resources, f"stack {stack} rendered nothing"
    validator = default_validator()
    failures: list[str] = []
    unchecked: list[str] = []
    reason = ""
    reports: list[SchemaReport] = []
    for item in kubernetes_objects(rendering.resources):
        try:
            report = check_object(item.obj, validator)
        except CrdsUnavailable as err:
            unchecked.append(item.label)
            reason = str(err)
            continue
        reports.append(report)
        if report.errors:
            failures.append(_explain(item.label, item.obj, report))
    assert not failures, (
        f"stack {stack}: {len(failures)} object(s) the API server would reject:\n\n" + "\n\n".join(failures)
    )
    for report in reports:
        # Every CEL rule of the rendered objects really ran (or is a transition rule, update-only).
        assert report.cel_count("not-evaluated") == 0, report.describe()
    if unchecked:
        pytest.skip(f"{len(unchecked)} custom resource(s) not checked: {reason}")


def _probe_program() -> None:
    k8s.core.v1.Namespace("team-a", metadata={"name": "team-a"})
    k8s.core.v1.ConfigMap("settings", metadata={"namespace": "team-a"}, data={"a": "b"})
    k8s.scheduling.v1.PriorityClass("low", metadata={"name": "low"}, value=1000, global_default=False)
    k8s.apiextensions.CustomResource(
        "cq",
        api_version="kueue.x-k8s.io/v1beta2",
        kind="ClusterQueue",
        metadata={"name": "cq"},
        spec={
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["google.com/tpu"],
                    "flavors": [{"name": "f", "resources": [{"name": "google.com/tpu", "nominalQuota": 16}]}],
                }
            ],
            "cohort": "v1beta1-spelling",
        },
    )
    k8s.helm.v4.Chart("kueue", chart="oci://registry.k8s.io/kueue/charts/kueue", version="0.19.2")
    pulumi.export("done", True)


def test_rendered_objects_are_what_pulumi_kubernetes_sends() -> None:
    rendering = render(_probe_program, {}, stack="probe")
    objects = {item.label.split("::")[-1]: item.obj for item in kubernetes_objects(rendering.resources)}
    assert set(objects) == {"team-a", "settings", "low", "cq"}, "helm charts are not objects"
    assert objects["low"]["value"] == 1000 and isinstance(objects["low"]["value"], int)
    assert objects["settings"]["metadata"]["name"] == f"settings{AUTONAME_SUFFIX}"
    assert check_object(objects["low"]).issues == []
    assert check_object(objects["settings"]).issues == []
    try:
        report = check_object(objects["cq"])
    except CrdsUnavailable as err:
        pytest.skip(f"Kueue CRDs unavailable: {err}")
    assert [(i.path, i.code) for i in report.errors] == [("spec.cohort", "unknown-field")]
