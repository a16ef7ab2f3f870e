"""The live tier: one real control plane for the whole session (``./dev live``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.live.cluster import LiveCluster


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


FIGURES: list[str] = []


@pytest.fixture(scope="session")
def report() -> list[str]:
    """Lines a test measured (counts, step times): printed together at the end of the run."""
    return FIGURES


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if FIGURES:
        terminalreporter.section("live tier figures")
        for line in FIGURES:
            terminalreporter.write_line(line)
