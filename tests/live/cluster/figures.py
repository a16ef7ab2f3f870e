"""What a live test measured, carried on its pytest report so that every xdist worker's figures
reach the controller's terminal summary (``tests/live/conftest.py``)."""

from __future__ import annotations

import json

import pytest

from .workloads import Stopwatch

FIGURE = "live figure"
STEPS = "live steps"


class Report:
    """What one test measured: lines for the summary, and incident step times."""

    def __init__(self, item: pytest.Item) -> None:
        self.item = item

    def append(self, line: str) -> None:
        self.item.user_properties.append((FIGURE, line))

    def incident(self, policy: str, kind: str, watch: Stopwatch, outcome: str) -> None:
        """One incident's steps under one policy, as a line and as a JSON record."""
        self.append(watch.line(f"{policy}, {kind} ({outcome})"))
        record = {"kind": kind, "policy": policy, "outcome": outcome, "steps": watch.steps}
        self.item.user_properties.append((STEPS, json.dumps(record)))
