"""The live tier: one real control plane per pytest worker for the whole session (``./dev live``).

Figures a test measures travel on its report (``user_properties``), so they reach the terminal
summary from every xdist worker; ``TPU_PLATFORM_LIVE_STEPS=FILE`` also writes each incident's step
times there as JSON lines (``{"kind", "policy", "steps": {step: seconds}}``) for ``bench/``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.live.cluster import LiveCluster
from tests.live.cluster.figures import FIGURE, STEPS, Report

STEPS_FILE_ENV = "TPU_PLATFORM_LIVE_STEPS"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/live/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.live)


@pytest.fixture(scope="session")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveCluster]:
    """etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok, started once."""
    cluster = LiveCluster(tmp_path_factory.mktemp("live")).start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def dev(live: LiveCluster) -> Iterator[LiveCluster]:
    """The dev stack's cluster with every object of its plan applied (fresh for each module)."""
    rejected = live.install_planned("dev")
    assert not rejected, rejected
    yield live


@pytest.fixture
def report(request: pytest.FixtureRequest) -> Report:
    return Report(request.node)


SEEN: dict[tuple[str, str, str], None] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Every phase's report carries the properties so far: keep each once, in order."""
    for name, value in report.user_properties:
        if name in (FIGURE, STEPS):
            SEEN.setdefault((report.nodeid, name, str(value)), None)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    ordered = sorted(SEEN, key=lambda key: key[0])  # by test, each test's lines in their order
    figures = [value for (_, name, value) in ordered if name == FIGURE]
    if figures:
        terminalreporter.section("live tier figures")
        for line in figures:
            terminalreporter.write_line(line)
    path = os.environ.get(STEPS_FILE_ENV)
    if path:
        steps = [value for (_, name, value) in ordered if name == STEPS]
        with open(path, "w", encoding="utf-8") as out:
            out.writelines(f"{line}\n" for line in steps)
        terminalreporter.write_line(f"{len(steps)} incidents' steps written to {path}")
