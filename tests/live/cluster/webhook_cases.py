"""JobSet v0.12.0's own webhook test table, as data: the rows upstream's unit tests check, for ours.

Our admission tests should hold the real webhook to the cases its authors wrote, not to re-typed
copies. Nothing upstream is committed: at run time upstream's ``jobset_webhook_test.go`` is read from
the Go module cache, each table loop is rewritten (a copy in a temp dir) to hand its row to
``recordJobSetCase`` (``upstream/jobset-cases/record.go``), and ``go test -overlay`` runs upstream's
own tests with both, so every object is encoding/json of the real Go type, built by upstream's code.
The result is cached by the upstream file's sha256; a warm call runs only ``go mod download``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
MODULE_DIR = REPO / "upstream" / "jobset-cases"
RECORDER = MODULE_DIR / "record.go"
JOBSET = "sigs.k8s.io/jobset"
JOBSET_VERSION = "v0.12.0"
PACKAGE = f"{JOBSET}/pkg/webhooks"
TEST_FILE = "pkg/webhooks/jobset_webhook_test.go"
OUT_ENV = "TPU_PLATFORM_JOBSET_CASES_OUT"  # record.go's recordEnv
RECORDED_AS = "zz_tpu_platform_record_test.go"  # record.go's name inside the upstream package
FORMAT = 1  # bump when the record layout or the transformation changes
GO_TIMEOUT = 1800.0


class WebhookCasesError(RuntimeError):
    """The upstream cases could not be extracted; the message says what failed and how to fix it."""


@dataclass(frozen=True)
class WebhookCase:
    """One row of upstream's table. ``object`` and the other objects are JSON dicts of the Go types."""

    name: str
    operation: str  # "CREATE", "UPDATE" (validation) or "DEFAULT" (the defaulter)
    object: dict[str, Any]  # the JobSet (js), apiVersion and kind filled in
    old_object: dict[str, Any] | None  # the stored JobSet an UPDATE replaces (oldJs)
    expect_rejected: bool  # want != nil: the webhook must refuse it
    expected_errors: list[str]  # the messages in want, one each (upstream checks them as substrings)
    feature_gates: dict[str, bool]  # every gate the row's sub-test sets, default or not
    non_default_gates: dict[str, bool]  # those of feature_gates that differ from the gate's default
    existing_objects: list[dict[str, Any]]  # what the row pre-populates the (fake) cluster with
    expected_object: dict[str, Any] | None  # DEFAULT only: the JobSet after defaulting


@dataclass(frozen=True)
class _Loop:
    """A table-driven test function and the jobSetCase fields its loop hands to the recorder."""

    function: str
    operation: str
    fields: str


LOOPS = (
    _Loop("TestValidateCreate", "CREATE", "Object: tc.js, Want: tc.want, Existing: tc.existingObjs"),
    _Loop("TestValidateUpdate", "UPDATE", "Object: tc.js, Old: tc.oldJs, Want: tc.want"),
    _Loop("TestJobSetDefaulting", "DEFAULT", "Object: tc.js, Defaults: tc.want"),
)


def webhook_cases(*, refresh: bool = False) -> list[WebhookCase]:
    """Every row of the three tables, in upstream's order (a group listed twice appears once).

    Each call builds fresh records (a caller may change its dicts); ``refresh`` ignores the cache.
    """
    if refresh or not _MEMO:
        _MEMO[:] = [_load(refresh)]
    cases = [WebhookCase(**row) for row in json.loads(_MEMO[0])]
    if not cases:
        raise WebhookCasesError("no upstream cases were extracted; run with refresh=True")
    return cases


def create_cases() -> list[WebhookCase]:
    return [c for c in webhook_cases() if c.operation == "CREATE"]


def update_cases() -> list[WebhookCase]:
    return [c for c in webhook_cases() if c.operation == "UPDATE"]


def defaulting_cases() -> list[WebhookCase]:
    return [c for c in webhook_cases() if c.operation == "DEFAULT"]


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tpu-platform" / "jobset-cases"


_MEMO: list[str] = []  # the rows' JSON, once per process


def _load(refresh: bool) -> str:
    """The rows' JSON: from the cache keyed by the upstream file's sha256, else extracted and stored."""
    source = upstream_test_file()
    text = source.read_bytes()
    recipe = hashlib.sha256(RECORDER.read_bytes() + repr((FORMAT, LOOPS)).encode()).hexdigest()[:12]
    path = cache_dir() / f"{hashlib.sha256(text).hexdigest()}-{recipe}.json"
    if not refresh and path.is_file():
        return path.read_text()
    data = json.dumps(_extract(source, text.decode()))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(data)
    os.replace(tmp, path)
    return data


TIDY_HINT = (
    "the Go module proxy must be reachable for a first download, and go.mod/go.sum in upstream/jobset-cases "
    "must be tidy (`go mod tidy` there)"
)
TEST_HINT = (
    "a compile error naming recordJobSetCase or a tc field means upstream's table changed shape (update "
    "LOOPS); a failing row means the webhook disagrees with its own table under this Go/toolchain"
)


def _go(*args: str, hint: str = TIDY_HINT, timeout: float = 300.0, env: dict[str, str] | None = None) -> str:
    """Runs go in upstream/jobset-cases with the toolchain and go.sum pinned; raises on failure."""
    go = shutil.which("go")
    if go is None:
        raise WebhookCasesError(
            "`go` is not on PATH: install Go 1.26 (the live tier builds upstream with it)"
        )
    full = dict(os.environ, GOTOOLCHAIN="local", GOWORK="off", GOFLAGS="-mod=readonly -buildvcs=false")
    full.update(env or {})
    try:
        out = subprocess.run(
            [go, *args],
            cwd=MODULE_DIR,
            env=full,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise WebhookCasesError(f"`go {' '.join(args)}` timed out after {timeout:.0f}s") from exc
    if out.returncode != 0:
        tail = "\n".join((out.stdout + out.stderr).strip().splitlines()[-40:])
        raise WebhookCasesError(
            f"`go {' '.join(args)}` in {MODULE_DIR} failed ({out.returncode}):\n{tail}\nfix: {hint}"
        )
    return out.stdout


def upstream_test_file() -> Path:
    """Upstream's jobset_webhook_test.go in the module cache (downloaded if it is not there yet)."""
    gomod = (MODULE_DIR / "go.mod").read_text()
    if not re.search(rf"^\s*(require\s+)?{re.escape(JOBSET)} {re.escape(JOBSET_VERSION)}$", gomod, re.M):
        raise WebhookCasesError(
            f"{MODULE_DIR / 'go.mod'} does not require {JOBSET} {JOBSET_VERSION}: go test would run another "
            f"version than the one this module's transformation was written for; update JOBSET_VERSION"
        )
    info = json.loads(_go("mod", "download", "-json", f"{JOBSET}@{JOBSET_VERSION}"))
    if info.get("Error") or not info.get("Dir"):
        raise WebhookCasesError(f"go mod download {JOBSET}@{JOBSET_VERSION}: {info.get('Error', 'no Dir')}")
    path = Path(info["Dir"]) / TEST_FILE
    if not path.is_file():
        raise WebhookCasesError(f"{path} is missing from the module cache; `go clean -modcache` and retry")
    return path


def transform(text: str) -> tuple[str, dict[str, Counter[str]]]:
    """Upstream's file with each LOOPS loop calling the recorder, and the row names each table holds.

    The call goes at the end of the ``t.Run(tc.name, ...) {`` line, so line numbers stay upstream's.
    """
    inserts: list[tuple[int, str]] = []
    names: dict[str, Counter[str]] = {}
    for loop in LOOPS:
        found = list(re.finditer(rf"^func {loop.function}\(t \*testing\.T\) \{{\n", text, re.M))
        if len(found) != 1:
            raise WebhookCasesError(
                f"{loop.function}: expected one definition in {TEST_FILE}, found {len(found)}"
            )
        start = found[0].end()
        end = text.find("\n}\n", start)
        body = text[start:end]
        keys = re.findall(r"^\s+name:", body, re.M)
        literals = re.findall(r'^\s+name:\s+("(?:[^"\\\n]|\\.)*"),$', body, re.M)
        if not literals or len(literals) != len(keys):
            raise WebhookCasesError(
                f"{loop.function}: {len(keys)} `name:` rows but {len(literals)} string literals; the table "
                "changed shape, so its rows can no longer be counted: update transform()"
            )
        names[loop.operation] = Counter(json.loads(s) for s in literals)
        runs = list(re.finditer(r"^\s*t\.Run\(tc\.name, func\(t \*testing\.T\) \{$", body, re.M))
        if len(runs) != 1:
            raise WebhookCasesError(
                f"{loop.function}: expected one `t.Run(tc.name, ...)` loop, found {len(runs)}"
            )
        after = body[runs[0].end() :]
        gates = re.findall(r"features\.SetFeatureGateDuringTest\(t, features\.(\w+), ([\w.]+)\)", after)
        if len(gates) != after.count("SetFeatureGateDuringTest"):
            raise WebhookCasesError(
                f"{loop.function}: a feature gate is set in a form transform() cannot read"
            )
        gate_map = ", ".join(f"string(features.{g}): {v}" for g, v in gates)
        call = (
            f' recordJobSetCase(t, jobSetCase{{Op: "{loop.operation}", Name: tc.name, {loop.fields}, '
            f"Gates: map[string]bool{{{gate_map}}}}})"
        )
        inserts.append((start + runs[0].end(), call))
    for at, call in sorted(inserts, reverse=True):
        text = text[:at] + call + text[at:]
    return text, names


def _extract(source: Path, text: str) -> list[dict[str, Any]]:
    """Runs upstream's three tests with the overlay and returns the checked, de-duplicated rows."""
    patched, names = transform(text)
    with tempfile.TemporaryDirectory(prefix="jobset-cases-") as tmp:
        # Go refuses overlays beneath GOMODCACHE, a textual check: so a -modfile replace points the
        # module at a symlink to its cache directory, and the overlay names files through that link.
        root = Path(tmp) / "jobset"
        root.symlink_to(source.parents[2], target_is_directory=True)
        modfile = Path(tmp) / "go.mod"
        gomod = (MODULE_DIR / "go.mod").read_text()
        modfile.write_text(f"{gomod}\nreplace {JOBSET} {JOBSET_VERSION} => {root}\n")
        shutil.copyfile(MODULE_DIR / "go.sum", Path(tmp) / "go.sum")
        copy = Path(tmp) / source.name
        copy.write_text(patched)
        webhooks = root / Path(TEST_FILE).parent
        overlay = Path(tmp) / "overlay.json"
        replace = {str(webhooks / source.name): str(copy), str(webhooks / RECORDED_AS): str(RECORDER)}
        overlay.write_text(json.dumps({"Replace": replace}))
        out = Path(tmp) / "cases.jsonl"
        functions = "|".join(loop.function for loop in LOOPS)
        _go(
            "test", f"-modfile={modfile}", f"-overlay={overlay}", "-count=1", "-vet=off",
            f"-run=^({functions})$", PACKAGE, hint=TEST_HINT, timeout=GO_TIMEOUT, env={OUT_ENV: str(out)},
        )  # fmt: skip
        if not out.is_file():
            raise WebhookCasesError(f"go test passed but wrote no {out.name}: the recorder was never called")
        lines = out.read_text().splitlines()
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for line in lines:
        if line not in seen:
            seen.add(line)
            rows.append(json.loads(line))
    for loop in LOOPS:
        got = Counter(r["name"] for r in rows if r["operation"] == loop.operation)
        want = names[loop.operation]
        if got != want:
            raise WebhookCasesError(
                f"{loop.function}: recorded rows differ from the table's `name:` entries; "
                f"missing {sorted((want - got).elements())}, extra {sorted((got - want).elements())}"
            )
    for row in rows:
        if not isinstance(row["object"], dict) or row["object"].get("kind") != "JobSet":
            raise WebhookCasesError(f"{row['operation']} {row['name']!r}: no JobSet object recorded")
    return rows
