"""JobSet v0.12.0's webhook test table extracts as data (needs Go, not a cluster; hence this tier)."""

from __future__ import annotations

from tests.live.cluster.webhook_cases import create_cases, update_cases, webhook_cases


def test_upstream_cases_extract() -> None:
    cases = webhook_cases()
    creates = create_cases()
    assert len(creates) >= 40, len(creates)
    assert update_cases(), "no UPDATE cases"
    for case in cases:
        assert case.name, case
        assert case.object.get("kind") == "JobSet", case.name
        assert case.object.get("apiVersion") == "jobset.x-k8s.io/v1alpha2", case.name
        if case.operation == "UPDATE":
            assert case.old_object is not None and case.old_object.get("kind") == "JobSet", case.name
        assert case.expect_rejected == bool(case.expected_errors), case.name
    validation = [c for c in cases if c.operation in ("CREATE", "UPDATE")]
    assert any(c.expect_rejected for c in validation), "no rejected cases"
    assert any(not c.expect_rejected for c in validation), "no accepted cases"
