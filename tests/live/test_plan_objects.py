"""Every Kubernetes object of every committed plan, applied to the real API server with the real webhooks.

Each cluster of each plan gets its own install: its TPU pools as kwok nodes, JobSet and Kueue from
their charts with the plan's values (Kueue runs that stack's Configuration), then every object the
plan shows, in its dependency order. The API server's schema and CEL validation, the
ValidatingAdmissionPolicies and the Kueue and JobSet webhooks all judge them: 0 rejections.
"""

from __future__ import annotations

import pytest

from tests.live.cluster import LiveCluster, rendered
from tests.live.cluster.figures import Report

CLUSTERS = [
    (stack, provider)
    for stack in rendered.plan_stacks()
    for provider in rendered.clusters(rendered.load_plan(stack))
]


@pytest.mark.parametrize(("stack", "provider"), CLUSTERS, ids=[f"{s}-{p}" for s, p in CLUSTERS])
def test_every_planned_object_is_accepted(
    live: LiveCluster, report: Report, stack: str, provider: str
) -> None:
    live.install(stack, provider)
    results = live.apply_plan_objects()
    rejected = [f"{obj.describe()}: {err}" for obj, err in results if err is not None]
    report.append(
        f"plan objects {stack}/{provider}: {len(results) - len(rejected)} of {len(results)} accepted"
    )
    assert not rejected, "\n".join(rejected)
    assert len(results) > 10
