"""What a schema check reports: issues (errors and warnings) and the fate of every CEL rule."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .outcome import CelOutcome, Status

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class SchemaIssue:
    """One problem at one path of an object; ``code`` groups issues for callers and tests.

    ``error``: the API server (or a webhook-free apply) would reject the object.
    ``warning``: part of the object could not be checked (no schema, a CEL rule cel-python
    cannot run) or the API server silently drops what was written.
    """

    path: str
    message: str
    severity: Severity = "error"
    code: str = "structure"

    def __str__(self) -> str:
        return f"{self.severity}: {self.path or '<object>'}: {self.message}"


@dataclass
class SchemaReport:
    """The full outcome for one object, including which CEL rules ran."""

    api_version: str
    kind: str
    name: str
    schema_source: str = ""
    issues: list[SchemaIssue] = field(default_factory=list)
    cel: list[CelOutcome] = field(default_factory=list)

    @property
    def errors(self) -> list[SchemaIssue]:
        return [i for i in self.issues if i.severity == "error"]

    @property
    def warnings(self) -> list[SchemaIssue]:
        return [i for i in self.issues if i.severity == "warning"]

    def cel_count(self, status: Status) -> int:
        return sum(1 for outcome in self.cel if outcome.status == status)

    @property
    def cel_evaluated(self) -> int:
        """Rules that really ran (passed or failed)."""
        return self.cel_count("passed") + self.cel_count("failed")

    @property
    def notes(self) -> list[str]:
        """Rules that were skipped or not evaluated, one line each."""
        return [
            f"{o.path or '<object>'}: {o.message} [{o.rule}]"
            for o in self.cel
            if o.status in ("transition", "not-evaluated")
        ]

    def describe(self) -> str:
        """Every issue and note, for test failures and the CLI."""
        head = f"{self.api_version} {self.kind} {self.name!r} ({self.schema_source or 'no schema'})"
        counts = (
            f"CEL: {self.cel_count('passed')} passed, {self.cel_count('failed')} failed, "
            f"{self.cel_count('not-evaluated')} not evaluated, "
            f"{self.cel_count('transition')} transition rules skipped"
        )
        lines = [head, *(f"  {issue}" for issue in self.issues), f"  {counts}"]
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)
