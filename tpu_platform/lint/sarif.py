"""Findings as SARIF 2.1.0, the format GitHub code scanning shows on pull requests.

Shape per the OASIS SARIF 2.1.0 specification (https://docs.oasis-open.org/sarif/sarif/v2.1.0/):
a log has ``version`` and ``runs``; a run has ``tool.driver`` (``name``, ``rules``) and
``results``; a result has ``ruleId``, ``level`` (``error`` | ``warning`` | ``note``), ``message.text``
and ``locations[].physicalLocation`` (``artifactLocation.uri``, ``region.startLine``/``startColumn``,
both 1-based). GitHub requires ``startLine`` >= 1 for a result to be shown on a line.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePath
from typing import Any

from .findings import RULES, Finding

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
VERSION = "2.1.0"
TOOL = "tpu-platform-lint"
INFORMATION_URI = "https://github.com/tpu-platform/tpu-platform/blob/main/docs/linter.md"
_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def _uri(name: str) -> str:
    """A relative file URI as code scanning expects it; stdin becomes ``stdin``."""
    if name in ("", "-"):
        return "stdin"
    return (
        PurePath(name).as_posix().lstrip("/") if not PurePath(name).is_absolute() else PurePath(name).as_uri()
    )


def to_sarif(results: Sequence[tuple[str, Sequence[Finding]]], version: str = "0.1.0") -> dict[str, Any]:
    """One run with every rule of the catalogue and one result per finding."""
    rule_ids = list(RULES)
    rules = [
        {
            "id": rule.id,
            "name": "".join(part.title() for part in rule.id.split("-")),
            "shortDescription": {"text": rule.summary},
            "helpUri": f"{INFORMATION_URI}#{rule.id}",
            "defaultConfiguration": {"level": _LEVEL[rule.severity]},
        }
        for rule in RULES.values()
    ]
    out: list[dict[str, Any]] = []
    for name, findings in results:
        for f in findings:
            text = f.message + (f" Fix: {f.fix}" if f.fix else "")
            result: dict[str, Any] = {
                "ruleId": f.rule,
                "level": _LEVEL[f.severity],
                "message": {"text": text},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": _uri(name)},
                            "region": {"startLine": max(f.line, 1), "startColumn": max(f.column, 1)},
                        },
                        **({"logicalLocations": [{"fullyQualifiedName": f.path}]} if f.path else {}),
                    }
                ],
                "properties": {"document": f.document, "object": f.name, "kind": f.kind, "path": f.path},
            }
            if f.rule in RULES:
                result["ruleIndex"] = rule_ids.index(f.rule)
            out.append(result)
    return {
        "$schema": SCHEMA_URI,
        "version": VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": TOOL,
                        "version": version,
                        "informationUri": INFORMATION_URI,
                        "rules": rules,
                    }
                },
                "results": out,
            }
        ],
    }
