"""Entry points: lint one JobSet, every document of a YAML stream, or several files as one run.

Every document is read: JobSets get the JobSet rules, Kueue objects and PriorityClasses the
Kueue rules, every kind its schema. Kueue objects and priorities a run defines count as part of
the cluster for the JobSets of the same run, and JobSets of one run are checked together
against their queue (``together``). Findings carry the line and column of the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..schema import CrdsUnavailable
from .context import LintContext
from .counts import jobset_counts, priority_class_value
from .findings import SEVERITY_ORDER, Finding
from .jobset import JobSetView, is_jobset
from .objects import RunIndex, is_kueue, is_priority_class, kueue_rules, name_of, schema_finding
from .rules import run_rules
from .source import Document, SourceProblem, decode, normalize, parse
from .together import Submitted, together_rules

if TYPE_CHECKING:
    from ..schema.validate import SchemaValidator

# Findings about the input as a whole: the command exits 2 on them.
INPUT_RULES = frozenset({"input-empty", "input-binary", "yaml-invalid", "not-a-manifest", "crds-unavailable"})
CRDS_HELP = (
    "pass --crds DIR (a folder with the Kueue v0.19.2 and JobSet v0.12.0 CRD files), set "
    "TPU_PLATFORM_CRDS, run `python -m tpu_platform.schema.fetch` to download the pinned files into "
    "the user cache, or skip the check with --no-schema"
)


def _ordered(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (SEVERITY_ORDER[f.severity], f.line, f.column))


def schema_findings(manifest: dict[str, Any], validator: SchemaValidator | None = None) -> list[Finding]:
    """The schema check of one object as findings; ``crds-unavailable`` when the CRDs are missing."""
    from ..schema.validate import validate_object  # the lint extra; not needed with --no-schema

    try:
        issues = validate_object(manifest, validator)
    except CrdsUnavailable as err:
        return [Finding("crds-unavailable", "error", "", f"schema not checked: {err}", CRDS_HELP)]
    kind = str(manifest.get("kind") or "") if isinstance(manifest, dict) else ""
    return [schema_finding(issue, is_jobset(manifest), kind) for issue in issues]


def _value_findings(problems: list[tuple[str, str]]) -> list[Finding]:
    return [
        Finding(
            "yaml-value",
            "error",
            path,
            f"{message}: the API server cannot decode this object",
            "fix the value",
        )
        for path, message in problems
    ]


def _jobset_findings(
    manifest: dict[str, Any],
    ctx: LintContext,
    *,
    check_schema: bool,
    validator: SchemaValidator | None,
    document: int,
) -> list[Finding]:
    js = JobSetView(manifest, ctx.default_namespace)
    found = schema_findings(manifest, validator) if check_schema else []
    found += jobset_counts(manifest)
    found += run_rules(js, ctx)
    return _ordered([replace(f, document=document, name=js.name, kind="JobSet") for f in found])


def lint_jobset(
    manifest: dict[str, Any],
    ctx: LintContext,
    *,
    check_schema: bool = True,
    validator: SchemaValidator | None = None,
    document: int = 0,
) -> list[Finding]:
    """What would make Kueue ignore the JobSet, never admit it, or leave hotswap unable to help it.

    The manifest is first made JSON-like (string keys); values the API server cannot decode are
    ``yaml-value`` findings, and the schema check is skipped for such a manifest.
    """
    value, problems = normalize(manifest)
    if not isinstance(value, dict):
        return _value_findings(problems)
    found = _value_findings(problems)
    found += _jobset_findings(
        value, ctx, check_schema=check_schema and not problems, validator=validator, document=document
    )
    return _ordered([replace(f, document=document, name=f.name, kind="JobSet") for f in found])


@dataclass
class _Source:
    name: str
    documents: list[Document]
    problem: SourceProblem | None = None


def _read(name: str, content: str | bytes) -> _Source:
    try:
        text = decode(content) if isinstance(content, bytes) else content
        if not text.strip():
            decode(b"")
        return _Source(name, parse(text))
    except SourceProblem as problem:
        return _Source(name, [], problem)


def with_run_objects(ctx: LintContext, run: RunIndex) -> LintContext:
    """The context plus the priorities a run defines (its own PriorityClasses count for its JobSets)."""
    if not run.priority_classes and not run.workload_priority_classes:
        return ctx
    return replace(
        ctx,
        priority_classes={**ctx.priority_classes, **run.priority_classes},
        workload_priority_classes={**ctx.workload_priority_classes, **run.workload_priority_classes},
    )


def _document_findings(
    doc: Document,
    ctx: LintContext,
    run: RunIndex,
    known: tuple[set[str], set[str]],
    *,
    check_schema: bool,
    validator: SchemaValidator | None,
) -> list[Finding]:
    value = doc.value
    if not isinstance(value, dict) or not isinstance(value.get("kind"), str) or not value.get("kind"):
        what = type(value).__name__ if not isinstance(value, dict) else "a mapping without kind"
        return [
            Finding(
                "not-a-manifest",
                "error",
                "",
                f"document {doc.index} is {what}, not a Kubernetes object",
                "every document needs apiVersion, kind and metadata",
                doc.index,
            )
        ]
    found = _value_findings(doc.problems)
    # An object the API server cannot decode has no schema to check; say so once, above.
    schema = check_schema and not doc.problems
    if is_jobset(value):
        return found + _jobset_findings(
            value, ctx, check_schema=schema, validator=validator, document=doc.index
        )
    kind = str(value["kind"])
    if schema:
        found += schema_findings(value, validator)
    if is_kueue(value):
        found += kueue_rules(value, run, known[0], known[1])
    elif is_priority_class(value):
        found += priority_class_value(value)
    else:
        found.append(
            Finding(
                "kind-not-linted",
                "info",
                "kind",
                f"{value.get('apiVersion')} {kind}: only its schema is checked",
            )
        )
    return _ordered([replace(f, document=doc.index, name=name_of(value), kind=kind) for f in found])


def _locate(finding: Finding, doc: Document | None) -> Finding:
    if doc is None:
        return finding
    where = doc.where(finding.path)
    return replace(finding, line=where.line, column=where.column)


def lint_files(
    files: Sequence[tuple[str, str | bytes]],
    ctx: LintContext,
    *,
    check_schema: bool = True,
    validator: SchemaValidator | None = None,
) -> list[tuple[str, list[Finding]]]:
    """Lint several files as one run: per-document rules, then the JobSets together."""
    sources = [_read(name, content) for name, content in files]
    run = RunIndex()
    for source in sources:
        for doc in source.documents:
            if isinstance(doc.value, dict):
                run.add(doc.value, ctx.default_namespace)
    full = with_run_objects(ctx, run)
    known_queues = {target.cluster_queue for target in ctx.local_queues.values()}
    known_flavors = {f.name for target in ctx.local_queues.values() for f in target.flavors}
    results: list[tuple[str, list[Finding]]] = []
    submitted: list[Submitted] = []
    by_file: dict[str, dict[int, Document]] = {}
    for source in sources:
        docs = {doc.index: doc for doc in source.documents}
        by_file[source.name] = docs
        if source.problem is not None:
            p = source.problem
            results.append(
                (
                    source.name,
                    [
                        Finding(
                            p.rule, "error", "", p.message, p.fix, 0, "", p.position.line, p.position.column
                        )
                    ],
                )
            )
            continue
        found: list[Finding] = []
        crds_reported = False
        for doc in source.documents:
            known = (known_queues, known_flavors)
            for f in _document_findings(
                doc, full, run, known, check_schema=check_schema, validator=validator
            ):
                if f.rule == "crds-unavailable":
                    if crds_reported:
                        continue
                    crds_reported = True
                found.append(_locate(f, doc))
            if isinstance(doc.value, dict) and is_jobset(doc.value):
                submitted.append(
                    Submitted(source.name, doc.index, JobSetView(doc.value, ctx.default_namespace))
                )
        results.append((source.name, found))
    index = {name: i for i, (name, _) in enumerate(results)}
    for item, finding in together_rules(submitted, full, run):
        at = by_file[item.file].get(item.document)
        located = _locate(replace(finding, document=item.document, name=item.view.name, kind="JobSet"), at)
        results[index[item.file]][1].append(located)
    return [(name, _ordered(findings)) for name, findings in results]


def lint_documents(
    text: str | bytes,
    ctx: LintContext,
    *,
    check_schema: bool = True,
    validator: SchemaValidator | None = None,
) -> list[Finding]:
    """Lint every document of one (multi-document) YAML text."""
    return lint_files([("", text)], ctx, check_schema=check_schema, validator=validator)[0][1]


def has_input_problem(results: Sequence[tuple[str, Sequence[Finding]]]) -> bool:
    return any(f.rule in INPUT_RULES for _, findings in results for f in findings)


def summary(results: Sequence[tuple[str, Sequence[Finding]]]) -> Mapping[str, int]:
    return {s: sum(1 for _, fs in results for f in fs if f.severity == s) for s in SEVERITY_ORDER}
