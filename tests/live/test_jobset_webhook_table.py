"""JobSet v0.12.0's own webhook table, three verdicts a row: upstream's, the real server's, our linter's.

Rows: every CREATE case of upstream's ``TestValidateCreate`` (``cluster/webhook_cases.py``), each
JobSet put into namespace ``research`` under its own name (a name the API server refuses is part
of some rows' point), its ``existing_objects`` (PVCs) created in ``research`` first, for real.

* upstream's verdict: the row's ``want`` (``expect_rejected``).
* the real verdict: a server-side dry-run create with strict field validation on the dev stack's
  cluster, so the API server's decoding, the CRD's schema and CEL, JobSet's defaulting and
  validating webhooks, Kueue's webhooks and the plan's admission policies all judge it.
* ours: ``lint_jobset`` with the dev stack's context and the pinned CRDs, the per-object part of
  ``tpu-platform lint --stack dev`` (its run-wide rules add warnings only): rejected when a finding
  of an admission rule (``ADMISSION_RULES``: the schema, count and JobSet-webhook rules, each
  claiming the API server refuses the object) is an error. The other error rules
  (``NOT_ADMISSION_RULES``) say what Kueue, the scheduler or the pods will do with an admitted
  JobSet (``queue-label-missing`` fires on every row: upstream's JobSets have no queue); they are
  counted in the report, not in the verdict.

Cleaning. The rows are encoding/json of Go structs, and upstream's unit test hands them straight to
``ValidateCreate``: no API server, schema or defaulter. Each row is sent exactly as recorded first.
Only when the API server refuses it before any webhook answers (no ``admission webhook ... denied``)
and cleaning changes it is the cleaned object sent, and that answer is the real verdict (the first
answer is kept in the case's record, and the report counts each cleaning step):

* ``null`` becomes absent (Go's nil slices, maps and pointers without ``omitempty``);
* a ``successPolicy`` whose every field is Go's zero value (``{"operator": ""}``; the rows need a
  non-nil pointer because ``ValidateCreate`` dereferences it) becomes absent, so JobSet's own
  defaulter sets ``operator: All`` as it does for any client that leaves it out;
* a failure policy rule's ``action: ""`` (required, an enum without ``""``) becomes ``FailJobSet``,
  an action no webhook check looks at (only RestartJob and RestartJobAndIgnoreMaxRestarts are);
* a pod template left without containers gets the table's own container (``test``, ``bash:latest``).

Rows whose ``non_default_gates`` is non-empty assume a feature gate the installed JobSet (its chart's
default gates) does not have on: they are counted and marked, and the real webhook is not held to the
table on them. Every disagreement between ours and the real server must be listed under ``linter``
in ``data/jobset_table_disagreements.yaml`` with the reason it stays, every disagreement between the
real server and the table on an ungated row under ``webhook_vs_table``; a listed row that now agrees
must be taken out.
"""

from __future__ import annotations

import copy
import re
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.live.cluster import ApiError, LiveCluster, wait_for
from tests.live.cluster.figures import Report
from tests.live.cluster.webhook_cases import JOBSET_VERSION, WebhookCase, create_cases
from tpu_platform.lint import RULES, LintContext, lint_jobset
from tpu_platform.lint.stack import context_from_stack
from tpu_platform.plan import load_stack_config, parse_stack_config, stack_file
from tpu_platform.schema import SchemaValidator
from tpu_platform.schema.crds import locate_crds

KNOWN = Path(__file__).parent / "data" / "jobset_table_disagreements.yaml"
TEAM = "research"
STACK = "dev"

# Error rules whose finding says the API server (schema, decoding) or JobSet's webhook refuses the object.
ADMISSION_RULES = frozenset(
    {"yaml-value", "jobset-schema", "object-schema", "api-version", "unknown-field", "count-invalid"}
    | {"jobset-webhook", "kueue-webhook"}
)
# Error rules about what happens to an admitted JobSet (Kueue, the scheduler, the pods, the Jobs it
# creates), or about Kueue objects: not part of a create's verdict.
NOT_ADMISSION_RULES = frozenset(
    {"cluster-queue-no-namespaces", "local-queue-target", "cluster-queue-flavor"}
    | {"queue-label-missing", "queue-as-annotation", "queue-not-found", "multikueue-managed-by"}
    | {"queue-resources", "queue-flavor-shape", "workload-priority-unknown", "pod-priority-unknown"}
    | {"tpu-node-selector", "tpu-accelerator", "tpu-topology", "tpu-chips", "tpu-pods-per-slice"}
    | {"tpu-capacity", "exclusive-placement", "pod-failure-policy-restart-policy", "container-image"}
    | {"queue-never-admitted"}
    # The platform's own admission policy, not JobSet's webhook: tests/live/test_priority_entitlements.py.
    | {"priority-not-granted"}
)
# About the input as a whole (or the CRDs missing): none may come up for these rows.
INPUT_RULES = frozenset({"input-empty", "input-binary", "yaml-invalid", "not-a-manifest", "crds-unavailable"})

TABLE_CONTAINER = {"name": "test", "image": "bash:latest"}  # the container upstream's valid rows use
NEUTRAL_ACTION = "FailJobSet"
WEBHOOK_DENIED = re.compile(r'admission webhook "([^"]+)" denied the request')
PREFIX = re.compile(r'^(admission webhook "[^"]+" denied the request: )?\S+ "[^"]*" is invalid: ')
PVC_SEEN = "retentionPolicy must be retain when PVC exist"  # the webhook's message once it sees the PVC


@dataclass
class Verdict:
    rejected: bool
    why: str  # the server's message, or ours: the admission findings


@dataclass
class Row:
    case: WebhookCase
    sent: dict[str, Any]  # the object whose answer is the real verdict
    real: Verdict
    ours: Verdict
    first: Verdict | None = None  # the answer to the row as recorded, when the cleaned one was sent
    cleaning: list[str] = field(default_factory=list)
    other_errors: list[str] = field(default_factory=list)  # our NOT_ADMISSION_RULES errors

    @property
    def gated(self) -> bool:
        return bool(self.case.non_default_gates)

    def mark(self) -> str:
        gates = ", ".join(f"{g}={v}" for g, v in sorted(self.case.non_default_gates.items()))
        return f" [assumes gate {gates}]" if gates else ""


# --- the row's object -----------------------------------------------------------------------------


def _placed(case: WebhookCase) -> dict[str, Any]:
    obj = copy.deepcopy(case.object)
    obj.setdefault("metadata", {})["namespace"] = TEAM
    return obj


def _drop_nulls(value: Any) -> tuple[Any, int]:
    if isinstance(value, dict):
        out, dropped = {}, 0
        for key, item in value.items():
            if item is None:
                dropped += 1
                continue
            out[key], n = _drop_nulls(item)
            dropped += n
        return out, dropped
    if isinstance(value, list):
        items = [_drop_nulls(v) for v in value]
        return [v for v, _ in items], sum(n for _, n in items)
    return value, 0


def _zero(value: Any) -> bool:
    if isinstance(value, dict):
        return all(_zero(v) for v in value.values())
    return value in (None, "", 0, False, [])


def clean(obj: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The row's object without Go-serialisation noise, and the steps that changed something."""
    out, nulls = _drop_nulls(obj)
    steps = [f"null->absent x{nulls}"] if nulls else []
    spec = out.get("spec") or {}
    if "successPolicy" in spec and _zero(spec["successPolicy"]):
        del spec["successPolicy"]
        steps.append("zero successPolicy->absent (defaulted to All)")
    actions = 0
    for rule in (spec.get("failurePolicy") or {}).get("rules") or []:
        if rule.get("action", "") == "":
            rule["action"] = NEUTRAL_ACTION
            actions += 1
    if actions:
        steps.append(f"rule action ''->{NEUTRAL_ACTION} x{actions}")
    containers = 0
    for rj in spec.get("replicatedJobs") or []:
        pod = rj.setdefault("template", {}).setdefault("spec", {}).setdefault("template", {})
        pod_spec = pod.setdefault("spec", {})
        if not pod_spec.get("containers"):
            pod_spec["containers"] = [dict(TABLE_CONTAINER)]
            containers += 1
    if containers:
        steps.append(f"table container added x{containers}")
    return out, steps


# --- the real server --------------------------------------------------------------------------------


def _short(message: str, limit: int = 260) -> str:
    return " ".join(message.split())[:limit]


def _reason(verdict: Verdict) -> str:
    """What the server said is wrong, without the ``admission webhook ... denied: X "n" is invalid:``."""
    return _short(PREFIX.sub("", verdict.why))


def _dry_run_create(live: LiveCluster, obj: dict[str, Any]) -> Verdict:
    """A server-side dry-run create with strict field validation (``kubectl create --dry-run=server``)."""
    kube = live.admin
    path = kube.path(obj["apiVersion"], obj["kind"], TEAM)
    query = {"dryRun": "All", "fieldValidation": "Strict"}
    for attempt in range(5):
        try:
            kube.request("POST", path, obj, query=query)
        except ApiError as err:
            if "failed calling webhook" in err.message and attempt < 4:
                time.sleep(2)  # a webhook not answering is no verdict: ask again, then fail the test
                continue
            assert "failed calling webhook" not in err.message, f"no verdict: {err}"
            return Verdict(True, err.message)
        return Verdict(False, "")
    raise AssertionError("unreachable")


def _by_webhook(verdict: Verdict) -> bool:
    return bool(WEBHOOK_DENIED.search(verdict.why))


def _webhook_sees_pvc(live: LiveCluster, obj: dict[str, Any]) -> bool:
    """Does JobSet's webhook (which reads PVCs through its informer cache) see the row's PVC?

    The probe is the row's JobSet with every retention policy ``Delete``: the webhook refuses it with
    PVC_SEEN exactly when a PVC of the generated name exists in its cache.
    """
    probe = copy.deepcopy(obj)
    for policy in probe["spec"].get("volumeClaimPolicies") or []:
        policy["retentionPolicy"] = {"whenDeleted": "Delete"}
    return PVC_SEEN in _dry_run_create(live, probe).why


@contextmanager
def _existing(live: LiveCluster, case: WebhookCase, obj: dict[str, Any]) -> Iterator[None]:
    """The row's pre-existing objects, created in TEAM for real, until the webhook sees them; then gone."""
    created: list[dict[str, Any]] = []
    for raw in case.existing_objects:
        assert raw.get("kind") == "PersistentVolumeClaim", (
            f"{case.name}: an existing {raw.get('kind')}: only PVCs are known to be read by the webhook"
        )
        assert obj["spec"].get("volumeClaimPolicies"), f"{case.name}: a PVC but no volumeClaimPolicies"
        item, _ = _drop_nulls(copy.deepcopy(raw))
        item.pop("status", None)
        item["metadata"] = {"name": item["metadata"]["name"], "namespace": TEAM}
        live.admin.create(item)
        created.append(item)
    try:
        if created:
            wait_for(f"{case.name}: JobSet's webhook sees the PVC", lambda: _webhook_sees_pvc(live, obj), 30)
        yield
    finally:
        for item in created:
            api, kind, name = item["apiVersion"], item["kind"], item["metadata"]["name"]
            live.admin.delete(api, kind, name, TEAM)

            def gone(api: str = api, kind: str = kind, name: str = name) -> bool:
                try:
                    live.admin.get(api, kind, name, TEAM)
                except ApiError as err:
                    return err.status == 404
                return False

            wait_for(f"{kind} {name} deleted", gone, 60)
        if created:
            wait_for(
                f"{case.name}: the PVC gone from the webhook's cache",
                lambda: not _webhook_sees_pvc(live, obj),
                30,
            )


# --- ours ----------------------------------------------------------------------------------------------


def _lint_context() -> LintContext:
    return context_from_stack(parse_stack_config(load_stack_config(stack_file(STACK))))


def _ours(obj: dict[str, Any], ctx: LintContext, validator: SchemaValidator) -> tuple[Verdict, list[str]]:
    errors = [f for f in lint_jobset(copy.deepcopy(obj), ctx, validator=validator) if f.severity == "error"]
    unexpected = sorted({f.rule for f in errors} - ADMISSION_RULES - NOT_ADMISSION_RULES)
    assert not unexpected, f"error rules this test does not classify (or input problems): {unexpected}"
    admission = [f for f in errors if f.rule in ADMISSION_RULES]
    why = "; ".join(f"{f.rule} {f.path}: {f.message}" for f in admission)
    return Verdict(bool(admission), why), sorted({f.rule for f in errors if f.rule not in ADMISSION_RULES})


# --- the test ------------------------------------------------------------------------------------------


def _judge(live: LiveCluster, case: WebhookCase, ctx: LintContext, validator: SchemaValidator) -> Row:
    obj = _placed(case)
    with _existing(live, case, clean(obj)[0]):
        real = _dry_run_create(live, obj)
        first: Verdict | None = None
        steps: list[str] = []
        sent = obj
        if real.rejected and not _by_webhook(real):
            cleaned, steps = clean(obj)
            if steps:
                first, sent = real, cleaned
                real = _dry_run_create(live, cleaned)
    ours, other = _ours(sent, ctx, validator)
    return Row(case, sent, real, ours, first, steps, other)


def _side(verdict: Verdict) -> str:
    return "rejects" if verdict.rejected else "accepts"


def _source(verdict: Verdict) -> str:
    if not verdict.rejected:
        return ""
    found = WEBHOOK_DENIED.search(verdict.why)
    return f"webhook {found.group(1)}" if found else "API server"


def test_linter_and_real_webhook_against_jobsets_own_table(dev: LiveCluster, report: Report) -> None:
    classified = ADMISSION_RULES | NOT_ADMISSION_RULES | INPUT_RULES
    unclassified = sorted(r.id for r in RULES.values() if r.severity == "error" and r.id not in classified)
    assert not unclassified, (
        f"new error rules: put each in ADMISSION_RULES or NOT_ADMISSION_RULES: {unclassified}"
    )
    known = yaml.safe_load(KNOWN.read_text()) or {}
    assert set(known) <= {"linter", "webhook_vs_table"}, sorted(known)
    known_linter: dict[str, str] = known.get("linter") or {}
    known_table: dict[str, str] = known.get("webhook_vs_table") or {}
    cases = create_cases()
    names = Counter(c.name for c in cases)
    assert max(names.values()) == 1, [n for n, k in names.items() if k > 1]
    ctx = _lint_context()
    validator = SchemaValidator(locate_crds())
    started = time.monotonic()
    rows = [_judge(dev, case, ctx, validator) for case in cases]
    elapsed = time.monotonic() - started

    n = len(rows)
    table_agree = sum(r.real.rejected == r.case.expect_rejected for r in rows)
    ours_agree = sum(r.ours.rejected == r.real.rejected for r in rows)
    report.append(
        f"JobSet {JOBSET_VERSION} webhook table ({n} create cases): real webhook agrees with the table in "
        f"{table_agree} of {n}; our linter agrees with the real webhook in {ours_agree} of {n}"
    )
    gated = [r for r in rows if r.gated]
    report.append(
        f"  {len(gated)} case(s) assume a non-default feature gate the installed JobSet does not have on "
        f"(counted, marked [assumes gate ...]; the real webhook agrees with the table on "
        f"{sum(r.real.rejected == r.case.expect_rejected for r in gated)} of them)"
    )
    cleaned = [r for r in rows if r.first is not None]
    steps = Counter(s.split(" x")[0] for r in cleaned for s in r.cleaning)
    report.append(
        f"  sent as recorded: {n - len(cleaned)}; refused before any webhook as recorded (Go-serialisation "
        f"noise) and sent cleaned: {len(cleaned)} ("
        + ", ".join(f"{s}: {k}" for s, k in sorted(steps.items()))
        + ")"
    )
    by_source = Counter(_source(r.real) or "accepted" for r in rows)
    report.append("  real verdicts: " + ", ".join(f"{s}: {k}" for s, k in sorted(by_source.items())))
    other = Counter(rule for r in rows for rule in r.other_errors)
    report.append(
        "  our non-admission error rules, left out of its verdict: "
        + (", ".join(f"{rule} on {k}" for rule, k in sorted(other.items())) or "none")
    )
    report.append(f"  {n} cases judged in {elapsed:.1f} s")

    linter: dict[str, str] = {}
    for r in rows:
        if r.ours.rejected != r.real.rejected:
            why = f"{_source(r.real)}: {_reason(r.real)}" if r.real.rejected else _short(r.ours.why)
            linter[r.case.name] = f"real {_side(r.real)}, ours {_side(r.ours)}{r.mark()}: {why}"
    table: dict[str, str] = {}
    for r in rows:
        if r.real.rejected != r.case.expect_rejected:
            what = f"table {'rejects' if r.case.expect_rejected else 'accepts'}, real {_side(r.real)}"
            detail = (
                f"{_source(r.real)}: {_reason(r.real)}"
                if r.real.rejected
                else "table expects: " + _short("; ".join(r.case.expected_errors))
            )
            table[r.case.name] = f"{what}{r.mark()}: {detail}"
    for name, why in linter.items():
        report.append(f"  ours vs real: {name}: {why}" + ("" if name in known_linter else "  (NOT LISTED)"))
    for name, why in table.items():
        ok = name in known_table or any(r.gated for r in rows if r.case.name == name)
        report.append(f"  real vs table: {name}: {why}" + ("" if ok else "  (NOT LISTED)"))

    failures: list[str] = []
    gated_names = {r.case.name for r in gated}
    checks: tuple[tuple[str, dict[str, str], dict[str, str], set[str]], ...] = (
        ("linter", linter, known_linter, set()),
        ("webhook_vs_table", table, known_table, gated_names),
    )
    for label, found, listed, exempt in checks:
        unlisted = sorted(set(found) - set(listed) - exempt)
        fixed = sorted(set(listed) - set(found))
        misplaced = sorted(set(listed) & exempt)
        failures += [f"{label}: disagrees but not listed: {name}: {found[name]}" for name in unlisted]
        failures += [f"{label}: listed but now agrees (take it out): {name}" for name in fixed]
        failures += [
            f"{label}: listed, but the case assumes a non-default gate: {name}" for name in misplaced
        ]
    unknown = sorted((set(known_linter) | set(known_table)) - set(names))
    failures += [f"listed, but no such create case: {name}" for name in unknown]
    assert not failures, f"{KNOWN.name}:\n" + "\n".join(failures)
