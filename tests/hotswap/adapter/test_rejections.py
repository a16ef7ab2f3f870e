"""The rejection reporter: one count per refusal while it lasts, a warning Event at most every
ten minutes, bounded metric labels."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from tpu_platform.hotswap.adapter.rejections import REPEAT_SECONDS, RejectionReporter, report_rejections
from tpu_platform.hotswap.core import EmitEvent, Rejection
from tpu_platform.hotswap.core.reconcile import Decision

BAD = Rejection("JobSet", "team-a", "low", "uid-1", "checkpoint-interval", "'NaN' is not a number of seconds")
POD = Rejection("Pod", "team-a", "p", "uid-2", "priority", "'x' is not an integer")


def decision(now: float, *rejected: Rejection) -> Decision:
    return Decision(now, (), (), rejected=rejected)


def events(d: Decision) -> list[tuple[str, str, str]]:
    return [(a.kind, a.name, a.type) for a in d.actions if isinstance(a, EmitEvent)]


def count(registry: CollectorRegistry, r: Rejection) -> float:
    value = registry.get_sample_value("hotswap_rejected_inputs_total", {"kind": r.kind, "reason": r.reason})
    return 0.0 if value is None else value


def test_counts_once_while_it_lasts_and_again_when_it_returns() -> None:
    registry = CollectorRegistry()
    reporter = RejectionReporter(registry)
    assert events(reporter.report(decision(0.0, BAD, POD))) == [
        ("JobSet", "low", "Warning"),
        ("Pod", "p", "Warning"),
    ]
    assert events(reporter.report(decision(10.0, BAD, POD))) == []
    assert count(registry, BAD) == count(registry, POD) == 1
    assert events(reporter.report(decision(REPEAT_SECONDS, BAD))) == [("JobSet", "low", "Warning")]
    assert count(registry, BAD) == 1, "a repeated Event is not a new refusal"
    reporter.report(decision(REPEAT_SECONDS + 1))
    assert events(reporter.report(decision(REPEAT_SECONDS + 2, BAD))) == [("JobSet", "low", "Warning")]
    assert count(registry, BAD) == 2, "fixed, then broken again"


def test_the_event_names_the_field_and_what_happens() -> None:
    (event,) = [a for a in RejectionReporter(CollectorRegistry()).report(decision(0.0, BAD)).actions]
    assert isinstance(event, EmitEvent)
    assert (event.namespace, event.uid, event.reason) == ("team-a", "uid-1", "HotswapInputRejected")
    assert "checkpoint-interval" in event.message and "neither helped nor preempted" in event.message


def test_one_reporter_per_registry() -> None:
    registry = CollectorRegistry()
    report_rejections(decision(0.0, BAD), registry)
    report_rejections(decision(1.0, BAD), registry)
    assert count(registry, BAD) == 1
    other = CollectorRegistry()
    report_rejections(decision(1.0, BAD), other)
    assert count(other, BAD) == 1
