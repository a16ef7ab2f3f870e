"""Our offline schema checker against the real API server and webhooks, on the same inputs.

Inputs: every Kubernetes object of every committed plan, and mutants of each (``mutants.py``).
The real verdict is a server-side dry-run apply with strict field validation (``dryRun=All``,
``fieldValidation=Strict``) on a cluster with the dev stack installed: the API server's OpenAPI
and CEL validation, the CRDs' schemas, the admission policies and the JobSet and Kueue webhooks
all run, nothing is stored. Ours is ``tpu_platform.schema.validate_object``'s errors. The count
of agreements is printed; every disagreement must match an entry of
``data/schema_disagreements.yaml`` (a glob over the input's name, with the reason it stays), and
every entry must still match one (a fixed one is taken out).
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import yaml

from tests.live.cluster import ApiError, LiveCluster, rendered
from tests.live.cluster.figures import Report
from tests.live.cluster.mutants import mutants
from tpu_platform.schema import validate_object

KNOWN = Path(__file__).parent / "data" / "schema_disagreements.yaml"


def _inputs() -> list[tuple[str, dict[str, Any]]]:
    out = []
    seen: set[str] = set()
    for stack in rendered.plan_stacks():
        for provider, objects in rendered.clusters(rendered.load_plan(stack)).items():
            for obj in objects:
                name = f"{stack}/{provider} {obj.describe()}"
                out.append((name, obj.manifest))
                key = yaml.safe_dump(obj.manifest, sort_keys=True)
                if key in seen:
                    continue  # the same object in two stacks: mutate it once
                seen.add(key)
                out.extend((m.name, m.manifest) for m in mutants(name, obj.manifest))
    return out


def _server_accepts(live: LiveCluster, manifest: dict[str, Any]) -> tuple[bool, str]:
    try:
        live.admin.apply(manifest, dry_run=True, strict=True)
    except ApiError as err:
        return False, err.message[:300]
    except KeyError as err:  # a kind this server does not serve at all
        return False, str(err)
    return True, ""


def _ours_accepts(manifest: dict[str, Any]) -> tuple[bool, str]:
    errors = [i for i in validate_object(manifest) if i.severity == "error"]
    return not errors, "; ".join(str(e) for e in errors)[:300]


def test_schema_checker_agrees_with_the_api_server(dev: LiveCluster, report: Report) -> None:
    known: list[dict[str, str]] = yaml.safe_load(KNOWN.read_text()) or []
    for ns in {m["metadata"].get("namespace") for _, m in _inputs()} - {None}:
        dev.admin.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    inputs = _inputs()
    disagreements: dict[str, str] = {}
    for name, manifest in inputs:
        server_ok, server_why = _server_accepts(dev, manifest)
        ours_ok, ours_why = _ours_accepts(manifest)
        if server_ok != ours_ok:
            side = "server rejects, ours accepts" if not server_ok else "ours rejects, server accepts"
            disagreements[name] = f"{side}: {server_why or ours_why}"
    agree = len(inputs) - len(disagreements)
    report.append(f"schema checker vs API server + webhooks: {agree} of {len(inputs)} agree")

    def entry(name: str) -> dict[str, str] | None:
        return next((e for e in known if fnmatchcase(name, e["match"])), None)

    for e in known:
        hits = [n for n in disagreements if fnmatchcase(n, e["match"])]
        if hits:
            report.append(f"  {len(hits)} x {e['reason']}")
    unlisted = sorted(n for n in disagreements if entry(n) is None)
    fixed = sorted(e["match"] for e in known if not any(fnmatchcase(n, e["match"]) for n in disagreements))
    assert not unlisted, "disagreements without a reason in data/schema_disagreements.yaml:\n" + "\n".join(
        f"{n}: {disagreements[n]}" for n in unlisted
    )
    assert not fixed, "listed disagreements that now agree (remove them):\n" + "\n".join(fixed)
