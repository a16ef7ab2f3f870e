"""What a CEL rule did on one value: a plain record, so reports need no CEL evaluator installed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Status = Literal["passed", "failed", "not-evaluated", "transition"]


@dataclass(frozen=True)
class CelOutcome:
    """What happened to one rule on one value."""

    path: str
    rule: str
    status: Status
    message: str = ""
