"""The offline tools on a user's own Pulumi project: ``examples/consumer`` names its entry
(``tpu-platform:entry`` in its Pulumi.yaml), and validate, plan, review, lint, whatif and policy read
its stacks through it; a bad entry is one line naming the key and the fix."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from tpu_platform import cli
from tpu_platform.entry import ENTRY_KEY, entry_here
from tpu_platform.project import find_project

REPO_ROOT = Path(__file__).resolve().parents[1]
CONSUMER = REPO_ROOT / "examples" / "consumer"
JOBSET = REPO_ROOT / "examples" / "jobsets" / "high-jax-trillium.yaml"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


@pytest.fixture
def in_consumer(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(CONSUMER)
    return CONSUMER


@pytest.fixture
def consumer_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The consumer project in a folder of its own, to break."""
    copy = tmp_path / "consumer"
    shutil.copytree(CONSUMER, copy, ignore=shutil.ignore_patterns("__pycache__", "plans"))
    monkeypatch.chdir(copy)
    return copy


def _set_entry(project: Path, value: object) -> None:
    doc = yaml.safe_load((project / "Pulumi.yaml").read_text())
    doc["config"][ENTRY_KEY] = value
    (project / "Pulumi.yaml").write_text(yaml.safe_dump(doc))


def test_the_consumer_names_its_entry_in_project_config(in_consumer: Path) -> None:
    entry = entry_here()
    assert entry is not None and entry.reference == "__main__:research_platform"
    assert find_project().name == "tpu-research"


def test_validate_reads_the_consumer_stack_through_its_entry(
    in_consumer: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "validate", "research")
    assert (code, err) == (0, "")
    assert out.startswith("stack research: ok\ncluster research-gke (us-east5-b): 3 TPU v6e slices")


def test_plan_renders_the_consumers_own_program(
    in_consumer: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _err = _run(capsys, "plan", "research", "--plans-dir", str(tmp_path))
    assert code == 0, out
    plan = yaml.safe_load((tmp_path / "research.yaml").read_text())
    resources = plan["resources"]
    assert not [r for r in resources if r["type"] == "gcp:container/cluster:Cluster"]  # adopted
    pools = sorted(r["inputs"]["name"] for r in resources if r["type"] == "gcp:container/nodePool:NodePool")
    assert pools == ["rs-2x4-0", "rs-2x4-1", "rs-4x4"]
    assert {r["parent"] for r in resources if r["type"] == "tpu-platform:gke:TpuSlicePool"} == {
        "pulumi:pulumi:Stack::tpu-research-research"
    }
    assert not [r for r in resources if r["type"] == "tpu-platform:index:Platform"]  # not the built-in
    assert plan["outputs"]["nodePools"] == ["rs-2x4-0", "rs-2x4-1", "rs-4x4"]
    assert plan["summary"]["chips"] == 32
    assert not (CONSUMER / "plans").exists()


def test_policy_runs_on_the_consumers_rendering(
    in_consumer: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _err = _run(capsys, "policy", "research")
    assert (code, out) == (0, "stack research: no violations\n")


def test_lint_takes_queues_and_priorities_from_the_entry(
    in_consumer: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _err = _run(capsys, "lint", str(JOBSET), "--stack", "research", "--no-schema")
    assert code == 1
    assert "use a defined WorkloadPriorityClass (research-high, research-low)" in out
    fitted = tmp_path / "language.yaml"
    fitted.write_text(
        JOBSET.read_text()
        .replace("namespace: default", "namespace: language")
        .replace("default-queue", "language-queue")
        .replace("high-priority-job", "research-high")
        .replace("replicas: 2", "replicas: 1")
    )
    code, out, _err = _run(capsys, "lint", str(fitted), "--stack", "research", "--no-schema")
    assert code == 0, out
    assert out.endswith("1 file(s): 0 error(s), 0 warning(s), 1 info\n")


def test_whatif_simulates_the_consumers_slices(
    in_consumer: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    code, out, err = _run(capsys, "whatif", "research", "--draws", "1", "--out", str(tmp_path))
    assert code == 0, err
    assert out.startswith("stack research: 3 slices (32 chips)")
    assert (tmp_path / "whatif-research.png").is_file()


def test_project_config_values_reach_the_entry_under_the_stack_files(
    consumer_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pulumi gives every stack the project file's config values; the stack file's win."""
    stack = consumer_copy / "Pulumi.research.yaml"
    stack.write_text(stack.read_text().replace("  tpu-research:reservation: research-v6e-4x4\n", ""))
    doc = yaml.safe_load((consumer_copy / "Pulumi.yaml").read_text())
    doc["config"]["tpu-research:reservation"] = "from-the-project"
    doc["config"]["tpu-research:clusterName"] = {"value": "overridden-by-the-stack"}
    (consumer_copy / "Pulumi.yaml").write_text(yaml.safe_dump(doc))
    code, _out, err = _run(capsys, "plan", "research")
    assert (code, err) == (0, "")
    plan = yaml.safe_load((consumer_copy / "plans" / "research.yaml").read_text())
    pools = {r["inputs"]["name"]: r["inputs"] for r in plan["resources"] if r["type"].endswith("NodePool")}
    assert pools["rs-4x4"]["nodeConfig"]["reservationAffinity"]["values"] == ["from-the-project"]
    assert {p["cluster"] for p in pools.values()} == {"research-gke"}


def test_a_stack_the_entry_rejects_lists_its_problems(
    consumer_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = consumer_copy / "Pulumi.research.yaml"
    stack.write_text(stack.read_text().replace("  tpu-research:clusterName: research-gke\n", ""))
    for command in ("validate", "plan", "policy"):
        code, _out, err = _run(capsys, command, "research")
        assert code == 2
        assert err == (
            f"stack research: {stack}: tpu-research:clusterName: required; set it: pulumi config set "
            "tpu-research:clusterName VALUE\n"
        ), command


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("no_such_module:build", "no module 'no_such_module' is installed; install it in this environment"),
        (
            "__main__:research_platfrom",
            "__main__ has no 'research_platfrom' (did you mean 'research_platform'?)",
        ),
        ("__main__:NAME", "NAME is a str, not a function; name the function that takes the stack's config"),
        (
            "json:dumps",
            "json:dumps returned str, not a PlatformConfig: return tpu_platform.config.parse_platform",
        ),
        ("research_platform", "'research_platform' is not MODULE:FUNCTION; name the function"),
        (["__main__", "research_platform"], "is not MODULE:FUNCTION"),
    ],
    ids=["module-missing", "function-missing", "not-callable", "wrong-type", "no-colon", "not-text"],
)
def test_a_bad_entry_is_one_line_naming_the_key_and_the_fix(
    consumer_copy: Path, capsys: pytest.CaptureFixture[str], value: object, expected: str
) -> None:
    _set_entry(consumer_copy, value)
    for command in (["validate", "research"], ["plan", "research"], ["policy", "research"]):
        code, _out, err = _run(capsys, *command)
        assert code == 2
        (line,) = err.splitlines()
        assert line.startswith(f"tpu-platform {command[0]}: {consumer_copy / 'Pulumi.yaml'}: {ENTRY_KEY}: ")
        assert expected in line


def test_an_entry_that_raises_shows_its_message(
    consumer_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = consumer_copy / "__main__.py"
    program.write_text(
        program.read_text().replace(
            "    missing = [", '    raise KeyError("tpu-research:zone is gone")\n    missing = [', 1
        )
    )
    code, _out, err = _run(capsys, "validate", "research")
    assert code == 2
    assert err == (
        f"stack research: {consumer_copy / 'Pulumi.research.yaml'}: {ENTRY_KEY} __main__:research_platform "
        f"({consumer_copy / 'Pulumi.yaml'}) raised KeyError: 'tpu-research:zone is gone'; fix the stack's "
        "config or the function\n"
    )


def test_a_program_that_fails_to_load_names_the_fix(
    consumer_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = consumer_copy / "__main__.py"
    program.write_text(program.read_text() + "\nimport no_such_module_here\n")
    code, _out, err = _run(capsys, "validate", "research")
    assert code == 2
    assert "loading the program" in err and "No module named 'no_such_module_here'" in err
    program.write_text(
        program.read_text().replace("import no_such_module_here", 'raise RuntimeError("boom")')
    )
    code, _out, err = _run(capsys, "validate", "research")
    assert code == 2
    assert 'raised RuntimeError: boom; keep what declares resources under if __name__ == "__main__":' in err


def test_a_project_of_its_own_that_names_no_entry_is_told_how(
    consumer_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = yaml.safe_load((consumer_copy / "Pulumi.yaml").read_text())
    del doc["config"]
    (consumer_copy / "Pulumi.yaml").write_text(yaml.safe_dump(doc))
    code, _out, err = _run(capsys, "validate", "research")
    assert code == 2
    lines = err.splitlines()
    assert "tpu-platform:cluster: required" in lines[0]
    assert lines[-1].endswith(
        f"project tpu-research ({consumer_copy / 'Pulumi.yaml'}) names no entry, so its stacks are read as "
        "the built-in program reads them (tpu-platform:* keys); if its program builds the platform from its "
        f"own config, write {ENTRY_KEY}: MODULE:FUNCTION under config: in Pulumi.yaml (docs/deploying.md)"
    )


def test_review_compares_two_renderings_of_the_consumers_program(
    consumer_copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A change of the consumer's own config reviewed as the engine would apply it: the reserved
    4x4 pool moved to another reservation is replaced (a node pool's reservation affinity is ForceNew)."""
    base, head = tmp_path / "base", tmp_path / "head"
    assert _run(capsys, "plan", "research", "--plans-dir", str(base))[0] == 0
    stack = consumer_copy / "Pulumi.research.yaml"
    stack.write_text(stack.read_text().replace("research-v6e-4x4", "research-v6e-4x4-b"))
    assert _run(capsys, "plan", "research", "--plans-dir", str(head))[0] == 0
    code, out, _err = _run(capsys, "review", str(base), str(head))
    assert "replace gcp:container/nodePool:NodePool" in out, out
    assert "research-v6e-4x4 -> research-v6e-4x4-b" in out, out
    assert code == 1, "a TPU slice replaced without an acknowledgement fails the review"
    assert "0 create, 0 update, 1 replace, 0 delete, 25 unchanged" in out
    assert "REPLACE node pool rs-4x4 (research-rs-4x4)" in out
