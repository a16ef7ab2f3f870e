"""Entry points: lint one JobSet, or every document of a YAML stream."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import yaml

from ..schema import CrdsUnavailable, SchemaIssue, SchemaValidator, validate_object
from .context import LintContext
from .findings import SEVERITY_ORDER, Finding
from .jobset import JobSetView, is_jobset
from .rules import run_rules

_SCHEMA_FIXES = {
    "unknown-field": "remove the field or fix its spelling; the API server rejects unknown fields",
    "version": "change apiVersion as the message says",
    "cel": "change the values so the CRD's validation rule holds",
    "list-type": "give every list item a unique key",
}


def _schema_finding(issue: SchemaIssue) -> Finding:
    return Finding(
        "jobset-schema",
        "error" if issue.severity == "error" else "info",
        issue.path,
        issue.message,
        _SCHEMA_FIXES.get(issue.code, "make the field match the JobSet CRD (jobset.x-k8s.io/v1alpha2)"),
    )


def schema_findings(manifest: dict[str, Any], validator: SchemaValidator | None = None) -> list[Finding]:
    """The JobSet CRD check as findings; an info finding when the CRDs are not available."""
    try:
        issues = validate_object(manifest, validator)
    except CrdsUnavailable as err:
        return [Finding("jobset-schema", "info", "", f"JobSet schema not checked: {err}")]
    return [_schema_finding(issue) for issue in issues]


def _ordered(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: SEVERITY_ORDER[f.severity])


def lint_jobset(
    manifest: dict[str, Any],
    ctx: LintContext,
    *,
    check_schema: bool = True,
    validator: SchemaValidator | None = None,
    document: int = 0,
) -> list[Finding]:
    """What would make Kueue ignore the JobSet, never admit it, or leave hotswap unable to help it."""
    js = JobSetView(manifest, ctx.default_namespace)
    found = schema_findings(manifest, validator) if check_schema else []
    found += run_rules(js, ctx)
    return _ordered([replace(f, document=document, name=js.name) for f in found])


def lint_documents(
    text: str,
    ctx: LintContext,
    *,
    check_schema: bool = True,
    validator: SchemaValidator | None = None,
) -> list[Finding]:
    """Lint every JobSet of a (multi-document) YAML text; other documents are noted and skipped."""
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        return [Finding("yaml-invalid", "error", where, str(err).replace("\n", " "), "fix the YAML syntax")]
    found: list[Finding] = []
    for index, doc in enumerate(docs):
        if doc is None:
            continue
        if is_jobset(doc):
            found += lint_jobset(doc, ctx, check_schema=check_schema, validator=validator, document=index)
            continue
        what = "a document without apiVersion and kind"
        name = ""
        if isinstance(doc, dict) and doc.get("kind"):
            what = f"{doc.get('apiVersion')} {doc.get('kind')}"
            name = str((doc.get("metadata") or {}).get("name", ""))
        found.append(
            Finding("not-a-jobset", "info", "", f"skipped {what}: only JobSets are linted", "", index, name)
        )
    return found
