"""The GitHub workflows keep their promises: every stack previewed, keyless auth, policy pack applied."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tpu_platform.plan import list_stacks

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO_ROOT / ".github" / "workflows"


def workflow(name: str) -> dict[str, Any]:
    doc: dict[Any, Any] = yaml.safe_load((WORKFLOWS / name).read_text())
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as true
    return doc


def steps_using(job: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [s for s in job["steps"] if str(s.get("uses", "")).split("@")[0] == action]


def test_ci_runs_the_readme_test_command_and_checks_plans() -> None:
    ci = workflow("ci.yml")
    assert {"push", "pull_request"} <= set(ci["on"])
    runs = [s.get("run", "") for s in ci["jobs"]["test"]["steps"]]
    assert ".ci/run" in runs
    assert "./dev test" in (REPO_ROOT / ".ci" / "run").read_text()
    assert "./dev plan --all --check" in runs
    assert "./dev policy" in runs


def test_preview_matrix_lists_exactly_the_stack_files(tmp_path: Path) -> None:
    stacks_job = workflow("preview.yml")["jobs"]["stacks"]
    script = next(s["run"] for s in stacks_job["steps"] if s.get("id") == "list")
    output = tmp_path / "output"
    subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=REPO_ROOT,
        env={"GITHUB_OUTPUT": str(output), "PATH": "/usr/bin:/bin"},
        check=True,
    )
    key, _, value = output.read_text().strip().partition("=")
    assert key == "stacks"
    assert json.loads(value) == list_stacks()


def test_preview_uses_workload_identity_and_the_pulumi_action_per_stack() -> None:
    preview = workflow("preview.yml")
    job = preview["jobs"]["preview"]
    assert job["permissions"]["id-token"] == "write"
    assert job["permissions"]["pull-requests"] == "write"
    assert job["strategy"]["matrix"]["stack"] == "${{ fromJSON(needs.stacks.outputs.stacks) }}"
    assert "github.repository" in job["if"], "fork pull requests get no OIDC token: skip them explicitly"
    (auth,) = steps_using(job, "google-github-actions/auth")
    assert set(auth["with"]) == {"workload_identity_provider", "service_account"}
    (pulumi,) = steps_using(job, "pulumi/actions")
    assert pulumi["uses"].endswith("@v6")
    inputs = pulumi["with"]
    assert inputs["command"] == "preview"
    assert inputs["diff"] is True
    assert inputs["comment-on-pr"] is True
    assert "matrix.stack" in inputs["stack-name"]
    assert (REPO_ROOT / inputs["policyPacks"] / "PulumiPolicy.yaml").exists()
    assert job["steps"].index(auth) < job["steps"].index(pulumi)


def test_no_workflow_uses_a_long_lived_key() -> None:
    for path in WORKFLOWS.glob("*.yml"):
        text = path.read_text()
        assert "credentials_json" not in text, path.name
        assert "GOOGLE_APPLICATION_CREDENTIALS" not in text, path.name


def test_forks_still_get_the_offline_plan() -> None:
    job = workflow("preview.yml")["jobs"]["offline-plan"]
    assert "if" not in job
    runs = " ".join(s.get("run", "") for s in job["steps"])
    assert "./dev plan --all --check" in runs
    assert "./dev policy" in runs
    assert "GITHUB_STEP_SUMMARY" in runs


def test_ci_uploads_the_linters_sarif() -> None:
    job = workflow("ci.yml")["jobs"]["test"]
    lint = next(s for s in job["steps"] if "--format sarif" in s.get("run", ""))
    (upload,) = steps_using(job, "github/codeql-action/upload-sarif")
    assert upload["with"]["sarif_file"] in lint["run"]
    assert job["steps"].index(lint) < job["steps"].index(upload)
    assert workflow("ci.yml")["permissions"]["security-events"] == "write"


def test_the_offline_plan_job_reviews_changes_against_the_base_branch() -> None:
    job = workflow("preview.yml")["jobs"]["offline-plan"]
    review = next(s for s in job["steps"] if s.get("id") == "review")
    assert "./dev review --all --base" in review["run"] and "$BASE" in review["run"]
    base = next(s for s in job["steps"] if 'git archive "$BASE" plans' in s.get("run", ""))
    policy = next(s for s in job["steps"] if "./dev policy" in s.get("run", ""))
    assert "--baseline" in policy["run"]
    assert job["steps"].index(base) < job["steps"].index(policy) < job["steps"].index(review)
    summary = next(s for s in job["steps"] if "GITHUB_STEP_SUMMARY" in s.get("run", ""))
    assert "review.txt" in summary["run"]


def test_the_real_preview_gives_the_replacement_policy_its_baseline() -> None:
    job = workflow("preview.yml")["jobs"]["preview"]
    baseline = next(s for s in job["steps"] if "baselinePlan" in s.get("run", ""))
    assert "$BASE:plans/$STACK.yaml" in baseline["run"]
    (pulumi,) = steps_using(job, "pulumi/actions")
    assert pulumi["with"]["policyPackConfigs"].endswith("policy-config.json")
    assert job["steps"].index(baseline) < job["steps"].index(pulumi)
